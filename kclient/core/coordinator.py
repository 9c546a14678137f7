"""The coordinator of a group or transactional id: found, asked, and found again when it moves.

:class:`CoordinatorState` holds where the coordinator is (as FindCoordinator answered) and an
epoch that :meth:`CoordinatorState.interrupt` bumps.  :func:`coordinated` sends one request to
it (``Request.node`` :data:`~kclient.core.steps.COORDINATOR`; the driver's transport connects to
the address the state holds) and retries after a connection failure, a timeout or a
"not the coordinator" answer: it forgets the address, waits the backoff and looks it up again.
A request begun before an interrupt (shutdown) fails at once instead of retrying.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kclient.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    error_for_code,
)
from kclient.protocol.apis import FIND_COORDINATOR
from kclient.protocol.schema import Api

from .steps import ANY_NODE, COORDINATOR, Conversation, Gather, Request, Sleep

__all__ = [
    "CoordinatorState",
    "CoordinatorAddress",
    "find_coordinator",
    "find_coordinators",
    "coordinated",
    "error_code",
    "COORDINATOR_ERRORS",
]

_Resp = TypeVar("_Resp")
log = logging.getLogger(__name__)

#: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS: ask again elsewhere
COORDINATOR_ERRORS = (
    NotCoordinatorError.errno,
    CoordinatorNotAvailableError.errno,
    CoordinatorLoadInProgressError.errno,
)
_RETRIED = (
    KafkaConnectionError,
    KafkaTimeoutError,
    NotCoordinatorError,
    CoordinatorNotAvailableError,
    CoordinatorLoadInProgressError,
)


@dataclass(frozen=True, slots=True)
class CoordinatorAddress:
    """Where FindCoordinator said the coordinator is."""

    node_id: int
    host: str
    port: int

    def serves(self, conn: Any) -> bool:
        """Whether ``conn`` (a driver's connection) is an open one to this address."""
        return (
            conn is not None
            and conn.connected
            and conn.node_id == self.node_id
            and (conn.host, conn.port) == (self.host, self.port)
        )


@dataclass
class CoordinatorState:
    """The coordinator of ``key`` (a group id; ``key_type`` 1: a transactional id)."""

    key: str
    key_type: int = 0
    retries: int = 5
    backoff_s: float = 1.0
    address: CoordinatorAddress | None = None
    #: bumped by :meth:`interrupt`: requests begun before it are not retried
    epoch: int = 0

    def interrupt(self) -> None:
        """Requests under way fail instead of retrying (the driver closes the connection)."""
        self.epoch += 1

    def located(self) -> CoordinatorAddress:
        """The address to connect to; a connection error when it is not known (the
        conversation looks it up and retries)."""
        if self.address is None:
            raise KafkaConnectionError("?", -1, f"the coordinator of {self.key!r} is not known yet")
        return self.address

    def forget(self) -> None:
        """The coordinator moved or its connection failed: look it up again."""
        self.address = None


def error_code(resp: Any) -> int:
    """The top-level error code of a response (what most coordinator answers carry)."""
    return int(resp.error_code)


def find_coordinator(state: CoordinatorState) -> Conversation[CoordinatorAddress]:
    """FindCoordinator at any broker; the address is kept in ``state``."""
    found = (yield from find_coordinators([state.key], state.key_type))[state.key]
    if isinstance(found, BaseException):
        raise found
    state.address = found
    return found


def find_coordinators(
    keys: Sequence[str], key_type: int = 0
) -> Conversation[dict[str, CoordinatorAddress | KafkaError]]:
    """The coordinators of ``keys`` (group ids; ``key_type`` 1: transactional ids), each an
    address or the error that hides it.  FindCoordinator v4+ (KIP-699) asks for every key in
    one request; an older broker is asked for the first key, then for the others together
    (one request each, all in flight at once)."""
    if not keys:
        return {}
    sent_at: list[int] = []  # the version the driver picked, as the body saw it

    def body(version: int) -> dict[str, Any]:
        sent_at.append(version)
        if version >= 4:
            return {"coordinator_keys": list(keys), "key_type": key_type}
        return {"key": keys[0], "key_type": key_type}

    first = yield Request(FIND_COORDINATOR, body, node=ANY_NODE)
    if sent_at[-1] >= 4:
        return {c.key: _address(c, c.key) for c in first.coordinators}
    found = {keys[0]: _address(first, keys[0])}
    if len(keys) > 1:
        rest = list(keys[1:])
        answers = yield Gather(
            tuple(
                Request(
                    FIND_COORDINATOR,
                    {"key": key, "key_type": key_type},
                    node=ANY_NODE,
                    max_version=3,
                )
                for key in rest
            )
        )
        for key, answer in zip(rest, answers):
            if isinstance(answer, KafkaError):  # that key's broker failed
                found[key] = answer
            elif isinstance(answer, BaseException):  # not the broker's: a bug, say so
                raise answer
            else:
                found[key] = _address(answer, key)
    return found


def _address(answer: Any, key: str) -> CoordinatorAddress | KafkaError:
    """One key's coordinator from its answer (a v0-v3 response or a v4 entry), or its error."""
    if answer.error_code:
        return error_for_code(answer.error_code)(f"finding the coordinator of {key!r}")
    return CoordinatorAddress(answer.node_id, answer.host, answer.port)


def coordinated(
    state: CoordinatorState,
    api: Api[Any, _Resp],
    body: Mapping[str, Any],
    check: Callable[[Any], int] = error_code,
    retries: int | None = None,
) -> Conversation[_Resp]:
    """Send ``body`` to the coordinator; rediscover and retry on coordinator and connection
    errors (``check(resp)`` finds the response's error code; 0 is success)."""
    attempts = 1 + (state.retries if retries is None else retries)
    epoch = state.epoch
    last: BaseException | None = None
    for attempt in range(attempts):
        try:
            if state.address is None:
                yield from find_coordinator(state)
            resp: _Resp = yield Request(api, body, node=COORDINATOR)
            code = check(resp)
            if code in COORDINATOR_ERRORS:
                raise error_for_code(code)(f"group {state.key!r}")
            return resp
        except _RETRIED as exc:
            if state.epoch != epoch:  # interrupted (shutdown): do not retry
                raise
            last = exc
            log.info("coordinator request %s failed (%s); retrying", api.name, exc)
            state.forget()
            if attempt + 1 < attempts:
                yield Sleep(state.backoff_s)
    assert last is not None
    raise last
