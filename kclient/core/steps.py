"""What a sans-IO conversation asks of its driver: send a request, send several, or wait.

A conversation is ``Generator[Step, Any, T]``.  The driver resumes it with the decoded response
of a :class:`Request`, the list of responses (or exceptions) of a :class:`Gather`, or ``None``
after a :class:`Sleep`; a failed request is thrown into the generator, so retry and error
handling live in the conversation and are the same for both drivers.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kclient.protocol.schema import Api, Struct

__all__ = [
    "Request",
    "Gather",
    "Sleep",
    "RawExchange",
    "Step",
    "Conversation",
    "ANY_NODE",
    "COORDINATOR",
    "BodyFor",
    "exchange_of",
    "version_and_body",
    "first_gather",
]

T = TypeVar("T")

#: ``Request.node`` values that are not node ids.
ANY_NODE = "any"  # the least loaded known broker (bootstrap before the first metadata)
COORDINATOR = "coordinator"  # the coordinator the conversation's transport is bound to


@dataclass(frozen=True, slots=True)
class Request:
    """Send ``body`` as ``api`` and resume with the decoded response.

    ``version`` None means the highest both sides support; ``node`` None means the transport's
    own connection (a handshake, a coordinator-bound conversation), else a node id or one of
    :data:`ANY_NODE` / :data:`COORDINATOR`.  ``expect_response`` False (Produce acks=0) resumes
    with None once the frame is written.  ``max_version`` caps the negotiated version when
    ``version`` is None (a body written for the versions up to it).  ``body`` may be a function
    of the version (:data:`BodyFor`) when what to ask depends on it: the driver calls it with
    the version it sends.
    """

    api: Api[Any, Any]
    body: Mapping[str, Any] | Any
    version: int | None = None
    node: int | str | None = None
    expect_response: bool = True
    max_version: int | None = None


@dataclass(frozen=True, slots=True)
class Gather:
    """Send every request before waiting for any; resume with their answers in order.

    An answer is the response, or the exception that request failed with (not thrown), so one
    broker's failure does not hide the others' results (a fetch or produce to several leaders).
    """

    requests: tuple[Request, ...]


@dataclass(frozen=True, slots=True)
class Sleep:
    """Resume after ``seconds`` (a backoff, a heartbeat interval); the driver decides how to wait."""

    seconds: float


@dataclass(frozen=True, slots=True)
class RawExchange:
    """Write ``token`` as one bare size-prefixed frame on the transport's own connection and
    resume with the broker's bare answer: the SASL exchange after SaslHandshake v0, which has
    no request header.  Only a transport bound to one connection can answer it."""

    token: bytes

    def through(self, transport: Any) -> Any:
        """Hand the token to a driver's transport (its ``exchange``): the answer, or for the
        asyncio driver the awaitable of it; a TypeError when the transport has none."""
        return exchange_of(transport)(self.token)


Step = Request | Gather | Sleep | RawExchange


#: A request body written for the version the driver picks: ``body(version)``.
BodyFor = Callable[[int], Mapping[str, Any]]


class _Versioned(Protocol):
    def version(self, api: Any, highest: int | None = None) -> int: ...


def version_and_body(request: Request, conn: _Versioned) -> tuple[int | None, Any]:
    """The version to send ``request`` at on ``conn`` (None: the connection's highest) and the
    body for it (a :data:`BodyFor` called with that version)."""
    version = request.version
    body = request.body
    if version is None and (request.max_version is not None or callable(body)):
        version = conn.version(request.api, request.max_version)
    if callable(body):
        body = body(version)
    return version, body


def exchange_of(transport: Any) -> Any:
    """A driver's transport's ``exchange`` (which answers a :class:`RawExchange`); a TypeError
    naming the transport when it has none."""
    exchange = getattr(transport, "exchange", None)
    if exchange is None:
        raise TypeError(
            f"{type(transport).__name__} is not bound to one connection: it "
            "cannot answer a RawExchange"
        )
    return exchange


Conversation = Generator[Step, Any, T]


def first_gather(conversation: Conversation[T]) -> tuple[Gather | None, Any]:
    """Start a conversation a driver sends ahead (and finishes later): ``(its first step, None)``
    when that is a :class:`Gather`, ``(None, its result)`` when it needed no request; any other
    first step closes it with a TypeError."""
    try:
        step = conversation.send(None)
    except StopIteration as done:
        return None, done.value
    except BaseException:
        conversation.close()
        raise
    if not isinstance(step, Gather):
        conversation.close()
        raise TypeError(f"a conversation sent ahead must start with a Gather, not {step!r}")
    return step, None


Response = Struct
