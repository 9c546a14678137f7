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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kclient.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NotCoordinatorError,
    error_for_code,
)
from kclient.protocol.apis import FIND_COORDINATOR
from kclient.protocol.schema import Api

from .steps import ANY_NODE, COORDINATOR, Conversation, Request, Sleep

__all__ = ["CoordinatorState", "CoordinatorAddress", "find_coordinator", "coordinated",
           "error_code", "COORDINATOR_ERRORS"]

_Resp = TypeVar("_Resp")
log = logging.getLogger(__name__)

#: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS: ask again elsewhere
COORDINATOR_ERRORS = (NotCoordinatorError.errno, CoordinatorNotAvailableError.errno,
                      CoordinatorLoadInProgressError.errno)
_RETRIED = (KafkaConnectionError, KafkaTimeoutError, NotCoordinatorError,
            CoordinatorNotAvailableError, CoordinatorLoadInProgressError)


@dataclass(frozen=True, slots=True)
class CoordinatorAddress:
    """Where FindCoordinator said the coordinator is."""

    node_id: int
    host: str
    port: int

    def serves(self, conn: Any) -> bool:
        """Whether ``conn`` (a driver's connection) is an open one to this address."""
        return conn is not None and conn.connected and conn.node_id == self.node_id \
            and (conn.host, conn.port) == (self.host, self.port)


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
            raise KafkaConnectionError("?", -1, f"the coordinator of {self.key!r} is not "
                                       "known yet")
        return self.address

    def forget(self) -> None:
        """The coordinator moved or its connection failed: look it up again."""
        self.address = None


def error_code(resp: Any) -> int:
    """The top-level error code of a response (what most coordinator answers carry)."""
    return int(resp.error_code)


def find_coordinator(state: CoordinatorState) -> Conversation[CoordinatorAddress]:
    """FindCoordinator at any broker; the address is kept in ``state``."""
    resp = yield Request(FIND_COORDINATOR, {"key": state.key, "key_type": state.key_type},
                         node=ANY_NODE)
    if resp.error_code:
        raise error_for_code(resp.error_code)(f"finding the coordinator of {state.key!r}")
    state.address = CoordinatorAddress(resp.node_id, resp.host, resp.port)
    return state.address


def coordinated(state: CoordinatorState, api: Api[Any, _Resp], body: Mapping[str, Any],
                check: Callable[[Any], int] = error_code, retries: int | None = None
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
            if state.epoch != epoch:             # interrupted (shutdown): do not retry
                raise
            last = exc
            log.info("coordinator request %s failed (%s); retrying", api.name, exc)
            state.forget()
            if attempt + 1 < attempts:
                yield Sleep(state.backoff_s)
    assert last is not None
    raise last
