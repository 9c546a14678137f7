"""Drive a :mod:`kclient.core` conversation to its end on the calling thread."""
from __future__ import annotations

import time
from typing import Any, Protocol, TypeVar

from kclient.core.steps import Conversation, Gather, Request, Sleep

__all__ = ["Transport", "ConnectionTransport", "run"]

T = TypeVar("T")


class Transport(Protocol):
    """Where a threaded conversation's requests go: one connection, a cluster, a coordinator."""

    def send(self, request: Request) -> Any:
        """Write the request; return a handle for :meth:`receive` (None when no response comes)."""

    def receive(self, handle: Any) -> Any:
        """Wait for the response of a handle :meth:`send` returned."""

    # optional: ``sleep(seconds)``, a wait that the transport's owner can cut short (shutdown);
    # without it a Sleep is time.sleep


class _Connection(Protocol):
    """What :class:`ConnectionTransport` needs of a connection (kclient.connection's)."""

    def send(self, api: Any, body: Any, version: int | None = None,
             expect_response: bool = True) -> int: ...

    def receive(self, corr: int) -> Any: ...


class ConnectionTransport:
    """A conversation bound to one broker connection (``Request.node`` None): a handshake,
    a coordinator's requests."""

    __slots__ = ("conn",)

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn

    def send(self, request: Request) -> int | None:
        corr = self.conn.send(request.api, request.body, request.version,
                              request.expect_response)
        return corr if request.expect_response else None

    def receive(self, handle: Any) -> Any:
        return self.conn.receive(handle)


def run(conversation: Conversation[T], transport: Transport) -> T:
    """Answer each step with the transport and the clock until the conversation returns.

    Any exception raised here (an interrupt, a driver bug) closes the conversation first, so its
    ``finally`` blocks run, as the asyncio driver does on cancellation."""
    try:
        return _drive(conversation, transport)
    finally:
        conversation.close()


def _drive(conversation: Conversation[T], transport: Transport) -> T:
    sleep = getattr(transport, "sleep", time.sleep)
    answer: Any = None
    failure: BaseException | None = None
    while True:
        try:
            step = conversation.throw(failure) if failure is not None else conversation.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer, failure = None, None
        if isinstance(step, Request):
            try:
                handle = transport.send(step)
                answer = transport.receive(handle) if step.expect_response else None
            except Exception as exc:  # noqa: BLE001 - handed to the conversation, which decides
                failure = exc
        elif isinstance(step, Gather):
            answer = _gather(step, transport)
        elif isinstance(step, Sleep):
            sleep(max(0.0, step.seconds))
        else:
            failure = TypeError(f"a conversation yielded {step!r}, not a kclient.core step")


def _gather(step: Gather, transport: Transport) -> list[Any]:
    """Write every request, then read every answer: the requests are in flight together."""
    handles: list[Any] = []
    for request in step.requests:
        try:
            handles.append((True, transport.send(request)))
        except Exception as exc:  # noqa: BLE001 - the answer of that request
            handles.append((False, exc))
    answers: list[Any] = []
    for request, (sent, handle) in zip(step.requests, handles):
        if not sent or not request.expect_response:
            answers.append(handle if not sent else None)
            continue
        try:
            answers.append(transport.receive(handle))
        except Exception as exc:  # noqa: BLE001 - the answer of that request
            answers.append(exc)
    return answers
