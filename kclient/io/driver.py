"""Drive a :mod:`kclient.core` conversation to its end on the calling thread."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar, cast

from kclient.core.steps import (
    ANY_NODE,
    Conversation,
    Gather,
    RawExchange,
    Request,
    Sleep,
    first_gather,
    version_and_body,
)
from kclient.errors import KafkaConnectionError, KafkaTimeoutError, NoBrokersAvailableError

__all__ = ["Transport", "ConnectionTransport", "ClusterTransport", "run", "InFlight"]

T = TypeVar("T")


class Transport(Protocol):
    """Where a threaded conversation's requests go: one connection, a cluster, a coordinator."""

    def send(self, request: Request) -> Any:
        """Write the request; return a handle for :meth:`receive` (None when no response comes)."""

    def receive(self, handle: Any) -> Any:
        """Wait for the response of a handle :meth:`send` returned."""

    # optional: ``sleep(seconds)``, a wait that the transport's owner can cut short (shutdown);
    # without it a Sleep is time.sleep.  Optional: ``exchange(token) -> bytes``, a RawExchange
    # (a transport bound to one connection)


class _Connection(Protocol):
    """What :class:`ConnectionTransport` needs of a connection (kclient.connection's)."""

    def send(
        self, api: Any, body: Any, version: int | None = None, expect_response: bool = True
    ) -> int: ...

    def receive(self, corr: int) -> Any: ...

    def raw_exchange(self, token: bytes) -> bytes: ...

    def version(self, api: Any, highest: int | None = None) -> int: ...

    def close(self, reason: str = ...) -> None: ...


class _Cluster(Protocol):
    """What :class:`ClusterTransport` needs of a cluster (kclient.cluster's ``Cluster``)."""

    @property
    def brokers(self) -> Mapping[int, Any]: ...

    def any_connection(self) -> _Connection: ...

    def connection(self, node_id: int) -> _Connection: ...

    def refresh(self, topics: Iterable[str] | None = ..., allow_auto_create: bool = ...) -> Any: ...


class ConnectionTransport:
    """A conversation bound to one broker connection (``Request.node`` None): a handshake,
    a coordinator's requests."""

    __slots__ = ("conn",)

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn

    def send(self, request: Request) -> int | None:
        version, body = version_and_body(request, self.conn)
        corr = self.conn.send(request.api, body, version, request.expect_response)
        return corr if request.expect_response else None

    def receive(self, handle: Any) -> Any:
        return self.conn.receive(handle)

    def exchange(self, token: bytes) -> bytes:
        return self.conn.raw_exchange(token)


class ClusterTransport:
    """Requests to the brokers of a :class:`kclient.cluster.Cluster`: ``Request.node`` a node id
    (metadata refreshed once when the node is not known yet) or :data:`ANY_NODE`.  A connection
    that fails or times out is closed, so the next request to that node reconnects."""

    __slots__ = ("cluster",)

    def __init__(self, cluster: _Cluster) -> None:
        self.cluster = cluster

    def _connection(self, node: int | str | None) -> _Connection:
        if node is None or node == ANY_NODE:
            return self.cluster.any_connection()
        if not isinstance(node, int):
            raise ValueError(f"a cluster transport sends to a node id or ANY_NODE, not {node!r}")
        if node not in self.cluster.brokers:
            self.cluster.refresh([], allow_auto_create=False)
        try:
            return self.cluster.connection(node)
        except NoBrokersAvailableError as exc:
            raise KafkaConnectionError("?", -1, f"broker {node} is not in the metadata") from exc

    def send(self, request: Request) -> tuple[_Connection, int] | None:
        conn = self._connection(request.node)
        try:
            version, body = version_and_body(request, conn)
            corr = conn.send(request.api, body, version, request.expect_response)
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            conn.close(f"failed: {exc}")
            raise
        return (conn, corr) if request.expect_response else None

    def receive(self, handle: tuple[_Connection, int]) -> Any:
        conn, corr = handle
        try:
            return conn.receive(corr)
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            conn.close(f"failed: {exc}")
            raise


def run(conversation: Conversation[T], transport: Transport) -> T:
    """Answer each step with the transport and the clock until the conversation returns.

    Any exception raised here (an interrupt, a driver bug) closes the conversation first, so its
    ``finally`` blocks run, as the asyncio driver does on cancellation."""
    try:
        return _drive(conversation, transport)
    finally:
        conversation.close()


def _drive(conversation: Conversation[T], transport: Transport, answer: Any = None) -> T:
    sleep = getattr(transport, "sleep", time.sleep)
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
        elif isinstance(step, RawExchange):
            try:
                answer = step.through(transport)
            except Exception as exc:  # noqa: BLE001 - handed to the conversation, which decides
                failure = exc
        else:
            failure = TypeError(f"a conversation yielded {step!r}, not a kclient.core step")


def _gather(step: Gather, transport: Transport) -> list[Any]:
    """Write every request, then read every answer: the requests are in flight together."""
    return _receive_all(step, _send_all(step, transport), transport)


def _send_all(step: Gather, transport: Transport) -> list[tuple[bool, Any]]:
    """Write every request of ``step``: (written, handle or the exception) for each."""
    handles: list[tuple[bool, Any]] = []
    for request in step.requests:
        try:
            handles.append((True, transport.send(request)))
        except Exception as exc:  # noqa: BLE001 - the answer of that request
            handles.append((False, exc))
    return handles


def _receive_all(step: Gather, handles: list[tuple[bool, Any]], transport: Transport) -> list[Any]:
    """The answers (or exceptions) of the requests :func:`_send_all` wrote, in order."""
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


class InFlight(Generic[T]):
    """A conversation whose first step, a :class:`Gather`, is on the wire: the caller goes on
    with its work while the brokers answer, and :meth:`finish` reads the answers and drives
    the conversation to its end (a fetch sent ahead)."""

    __slots__ = ("_conversation", "_transport", "_step", "_handles", "_done", "_value")
    _value: Any

    def __init__(self, conversation: Conversation[T], transport: Transport) -> None:
        self._conversation, self._transport = conversation, transport
        self._step, self._value = first_gather(conversation)
        self._done = self._step is None
        self._handles = [] if self._step is None else _send_all(self._step, transport)

    def finish(self) -> T:
        """Read the answers and drive the conversation to its result (once)."""
        if self._done:
            return cast(T, self._value)
        self._done = True
        try:
            assert self._step is not None
            answers = _receive_all(self._step, self._handles, self._transport)
            value = _drive(self._conversation, self._transport, answers)
            self._value = value
            return value
        finally:
            self._conversation.close()
