"""Drive a :mod:`kclient.core` conversation to its end on the running event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar, cast

from kclient.core import steps
from kclient.core.steps import Conversation, Gather, RawExchange, Request, Sleep, first_gather
from kclient.errors import KafkaConnectionError, KafkaTimeoutError

__all__ = ["AsyncTransport", "ConnectionTransport", "ClusterTransport", "run", "InFlight"]

T = TypeVar("T")


class AsyncTransport(Protocol):
    """Where an asyncio conversation's requests go: one connection, a cluster, a coordinator."""

    async def request(self, request: Request) -> Any:
        """Send the request and return its response (None when no response comes)."""


class _Connection(Protocol):
    """What :class:`ConnectionTransport` needs of a connection (kclient.aio.connection's)."""

    def send(
        self, api: Any, body: Any, version: int | None = None, expect_response: bool = True
    ) -> Any: ...

    async def request(self, api: Any, body: Any, version: int | None = None) -> Any: ...

    async def raw_exchange(self, token: bytes) -> bytes: ...

    def version(self, api: Any, highest: int | None = None) -> int: ...


class _Cluster(Protocol):
    """What :class:`ClusterTransport` needs of a cluster (kclient.aio.cluster's ``AIOCluster``)."""

    @property
    def brokers(self) -> Mapping[int, Any]: ...

    async def any_connection(self) -> Any: ...

    async def connection(self, node_id: int) -> Any: ...

    async def refresh(
        self, topics: Iterable[str] | None = ..., allow_auto_create: bool = ...
    ) -> Any: ...

    def drop(self, conn: Any, reason: str) -> None: ...


class ConnectionTransport:
    """A conversation bound to one broker connection (``Request.node`` None)."""

    __slots__ = ("conn",)

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn

    async def request(self, request: Request) -> Any:
        version, body = steps.version_and_body(request, self.conn)
        if not request.expect_response:
            self.conn.send(request.api, body, version, expect_response=False)
            return None
        return await self.conn.request(request.api, body, version)

    async def exchange(self, token: bytes) -> bytes:
        return await self.conn.raw_exchange(token)


class ClusterTransport:
    """Requests to the brokers of an :class:`kclient.aio.cluster.AIOCluster`: ``Request.node``
    a node id (metadata refreshed once when the node is not known yet) or :data:`ANY_NODE`.
    A connection that fails or times out is dropped, so the next request reconnects."""

    __slots__ = ("cluster",)

    def __init__(self, cluster: _Cluster) -> None:
        self.cluster = cluster

    async def request(self, request: Request) -> Any:
        node = request.node
        if node is None or node == steps.ANY_NODE:
            conn = await self.cluster.any_connection()
        elif isinstance(node, int):
            if node not in self.cluster.brokers:
                await self.cluster.refresh([], allow_auto_create=False)
            conn = await self.cluster.connection(node)
        else:
            raise ValueError(f"a cluster transport sends to a node id or ANY_NODE, not {node!r}")
        try:
            return await ConnectionTransport(conn).request(request)
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            self.cluster.drop(conn, f"failed: {exc}")
            raise


async def run(conversation: Conversation[T], transport: AsyncTransport, answer: Any = None) -> T:
    """Answer each step with the transport and the loop's clock until the conversation returns
    (``answer``: what to resume it with first, for a conversation already under way).

    Cancelling the task cancels the pending request or sleep and closes the conversation
    (its ``finally`` blocks run), so nothing it started is left half done.
    """
    failure: BaseException | None = None
    try:
        while True:
            try:
                step = (
                    conversation.throw(failure)
                    if failure is not None
                    else conversation.send(answer)
                )
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            answer, failure = None, None
            if isinstance(step, Request):
                try:
                    answer = await transport.request(step)
                except Exception as exc:  # noqa: BLE001 - handed to the conversation
                    failure = exc
            elif isinstance(step, Gather):
                answer = await asyncio.gather(
                    *(transport.request(r) for r in step.requests), return_exceptions=True
                )
            elif isinstance(step, Sleep):
                await asyncio.sleep(max(0.0, step.seconds))
            elif isinstance(step, RawExchange):
                try:
                    answer = await step.through(transport)
                except Exception as exc:  # noqa: BLE001 - handed to the conversation
                    failure = exc
            else:
                failure = TypeError(f"a conversation yielded {step!r}, not a kclient.core step")
    finally:
        conversation.close()


class InFlight(Generic[T]):
    """A conversation whose first step, a :class:`Gather`, is sent in a task of its own: the
    caller goes on while the brokers answer, and :meth:`finish` takes the answers and drives
    the conversation to its end (a fetch sent ahead).  The conversation is stepped to its
    Gather here, at once, so what it takes from shared state it takes now."""

    __slots__ = ("_conversation", "_transport", "_task", "_done", "_value")
    _value: Any

    def __init__(self, conversation: Conversation[T], transport: AsyncTransport) -> None:
        self._conversation, self._transport = conversation, transport
        step, self._value = first_gather(conversation)
        self._done = step is None
        self._task: asyncio.Future[list[Any]] | None = None
        if step is not None:
            requests = (transport.request(r) for r in step.requests)
            self._task = asyncio.ensure_future(asyncio.gather(*requests, return_exceptions=True))

    async def finish(self) -> T:
        """Wait for the answers (a cancelled caller leaves the requests running: the next
        call takes them) and drive the conversation to its result (once)."""
        if self._done:
            return cast(T, self._value)
        assert self._task is not None
        answers = await asyncio.shield(self._task)
        if self._done:  # another caller finished it meanwhile
            return cast(T, self._value)
        self._done = True
        value = await run(self._conversation, self._transport, answers)
        self._value = value
        return value
