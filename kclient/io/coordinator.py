"""The threaded driver's side of the coordinator: where its requests go, and the handle the
threaded faces keep (:class:`Coordinator`).

The retries, rediscovery and error handling are the core's (:mod:`kclient.core.coordinator`);
:class:`CoordinatorTransport` only connects to the address the core's state holds, sends a
request to any broker (FindCoordinator, the leader's Metadata) through the cluster, and sleeps
until woken by :meth:`CoordinatorTransport.interrupt` or the wait is over.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.core.coordinator import CoordinatorState, coordinated, find_coordinator
from kclient.core.steps import ANY_NODE, COORDINATOR, Conversation, Request, version_and_body
from kclient.protocol.schema import Api

from .driver import run

if TYPE_CHECKING:
    from kclient.cluster import Cluster

__all__ = ["CoordinatorTransport", "Coordinator"]

_Resp = TypeVar("_Resp")
_T = TypeVar("_T")


class CoordinatorTransport:
    """Requests of a coordinator conversation: ``COORDINATOR`` (or None) to the coordinator the
    state names, ``ANY_NODE`` to any broker, a node id to that broker."""

    def __init__(
        self, cluster: Cluster, state: CoordinatorState, settings: ConnectionSettings | None = None
    ) -> None:
        self.cluster, self.state = cluster, state
        self.settings = settings or cluster.settings
        self._conn: BrokerConnection | None = None
        self._lock = threading.RLock()
        self._wake = threading.Event()

    def coordinator_connection(self) -> BrokerConnection:
        """The connection to the coordinator the state names (opened when needed)."""
        address = self.state.located()
        with self._lock:
            conn = self._conn
            if conn is not None and address.serves(conn):
                return conn
            if conn is not None:
                conn.close("the coordinator moved")
            conn = BrokerConnection(
                address.host, address.port, self.settings, node_id=address.node_id
            )
            self._conn = None
            conn.connect()
            self._conn = conn
            return conn

    def _connection(self, node: int | str | None) -> BrokerConnection:
        if node is None or node == COORDINATOR:
            return self.coordinator_connection()
        if node == ANY_NODE:
            return self.cluster.any_connection()
        if isinstance(node, int):
            return self.cluster.connection(node)
        raise ValueError(f"unknown request destination {node!r}")

    def send(self, request: Request) -> Any:
        conn = self._connection(request.node)
        version, body = version_and_body(request, conn)
        corr = conn.send(request.api, body, version, request.expect_response)
        return (conn, corr) if request.expect_response else None

    def receive(self, handle: Any) -> Any:
        conn, corr = handle
        return conn.receive(corr)

    def connected(self) -> bool:
        """Whether a coordinator connection is open."""
        conn = self._conn
        return conn is not None and conn.connected

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less when :meth:`interrupt` is called."""
        self._wake.wait(seconds)

    def wake(self) -> None:
        """End the sleeps under way now (the heartbeat loop's, at close)."""
        wake, self._wake = self._wake, threading.Event()
        wake.set()

    def interrupt(self, reason: str = "interrupted by shutdown") -> None:
        """Fail the requests waiting on the coordinator now (a JoinGroup the coordinator holds
        for a whole rebalance, a heartbeat) without retries, and wake sleepers; later requests
        reconnect.  Does not take the lock a waiting request may hold: closing wakes it."""
        self.state.interrupt()
        self.wake()
        conn = self._conn
        if conn is not None:
            conn.close(reason)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._conn = None


class Coordinator:
    """The group (``key_type`` 0) or transaction (1) coordinator of ``group``, for threads:
    the core's conversations run on :class:`CoordinatorTransport`."""

    def __init__(
        self,
        cluster: Cluster,
        group: str,
        backoff_ms: int = 1000,
        retries: int = 5,
        settings: ConnectionSettings | None = None,
        key_type: int = 0,
    ) -> None:
        self.cluster, self.group, self.key_type = cluster, group, key_type
        self.state = CoordinatorState(group, key_type, retries, backoff_ms / 1000.0)
        self.transport = CoordinatorTransport(cluster, self.state, settings)
        self.settings = self.transport.settings

    @property
    def node_id(self) -> int | None:
        """The coordinator's node id (None until found)."""
        address = self.state.address
        return None if address is None else address.node_id

    @property
    def retries(self) -> int:
        return self.state.retries

    @property
    def backoff(self) -> float:
        return self.state.backoff_s

    def run(self, conversation: Conversation[_T]) -> _T:
        """Run a core conversation against this coordinator (on the calling thread)."""
        return run(conversation, self.transport)

    def connection(self) -> BrokerConnection:
        """The coordinator's connection (found with FindCoordinator first when not known)."""
        if self.state.address is None or self._stale():
            self.run(find_coordinator(self.state))
        return self.transport.coordinator_connection()

    def _stale(self) -> bool:
        return not self.transport.connected()

    def request(
        self,
        api: Api[Any, _Resp],
        body: Any | Mapping[str, Any],
        check: Callable[[_Resp], int] | None = None,
        retries: int | None = None,
    ) -> _Resp:
        """Send to the coordinator; rediscover and retry on coordinator and connection errors.
        ``check(resp)`` returns an error code (0 for success) found in the response."""
        return self.run(
            coordinated(
                self.state, api, body, check if check is not None else (lambda r: 0), retries
            )
        )

    def reset(self) -> None:
        """Forget the coordinator and close its connection."""
        self.state.forget()
        self.transport.close()

    def interrupt(self, reason: str = "interrupted by shutdown") -> None:
        """See :meth:`CoordinatorTransport.interrupt`."""
        self.transport.interrupt(reason)

    def close(self) -> None:
        self.reset()
