"""AIOConsumer's fetch task: one Fetch in flight per leader, decoded into per-partition columns.

Theory of operation: every assigned, unpaused partition whose position is known and whose
buffer holds fewer than ``buffer_chunks`` decoded fetches (``queued.max.message.chunks``, the
classic consumer's memory bound: at most that many times ``fetch.message.max.bytes`` per
partition) is fetched from its ``fetch_offset`` (where the buffered data ends), so the next
fetch is on the wire while the application works through the last one.  The task writes one
Fetch request per leader broker without waiting for another, then sleeps until a response, a
drained buffer or a seek wakes it.  A response is handled in a done-callback: each partition's
records are decoded into :class:`~kclient.core.columns.MessageColumns` (the C record walker
of the record layer) and queued on the partition's :class:`~kclient.core.prefetch.PartitionState`
(:func:`~kclient.core.prefetch.take_answer`, which also bounds the queue in bytes: at most
``buffer_chunks`` times the fetch size); the consumer builds ConsumerRecords only for what it
returns.  Data for a partition that was seeked, revoked or reset while the request was out is
dropped (its ``epoch`` changed).  Each leader's requests run in an incremental fetch session
(KIP-227, :class:`~kclient.core.fetch_session.FetchSession`): after the first, a request lists
only the partitions whose offset changed; a session error makes the next one full, and
:meth:`AIOFetcher.stop` ends the sessions (where a fetch is still parked at the broker, on a
connection of its own: the broker answers one request of a connection at a time).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from kclient.core.fetch import (
    FetchSettings,
    PartitionFetch,
    message_set,
    partitions_of,
)
from kclient.core.fetch_plain import plain_part
from kclient.core.fetch_session import FetchSession
from kclient.core.prefetch import (
    DATA,
    REFRESH,
    RESET,
    PartitionState,
    fetch_ahead,
    take_answer,
)
from kclient.errors import KafkaError, error_for_code
from kclient.protocol.apis import FETCH
from kclient.protocol.fetch_one import reader_for
from kclient.protocol.schema import Struct
from kclient.structs import TopicPartition

from .cluster import AIOCluster
from .connection import AIOConnection
from .timeouts import within

if TYPE_CHECKING:
    from kclient.protocol.messages import FetchResponse

__all__ = ["AIOFetcher"]

log = logging.getLogger(__name__)
#: one partition of a request: (state, offset asked, epoch, offset fetched ahead from or -1)
_Asked = tuple[PartitionState, int, int, int]
#: decoding one response yields to the loop between partitions after this long (seconds)
_SLICE = 0.005


class AIOFetcher:
    """The fetch task of one AIOConsumer (see the module docstring)."""

    def __init__(
        self,
        cluster: AIOCluster,
        states: dict[TopicPartition, PartitionState],
        *,
        max_partition_bytes: int,
        min_bytes: int,
        max_wait_ms: int,
        isolation_level: int,
        buffer_chunks: int,
        backoff_ms: int,
        data: asyncio.Event,
        needs_reset: asyncio.Event,
        max_bytes: int | None = None,
    ) -> None:
        self.cluster, self.states = cluster, states
        self.max_partition_bytes = max_partition_bytes
        self.isolation_level = isolation_level
        self.settings = FetchSettings(max_wait_ms, min_bytes, max_bytes, isolation_level)
        self.buffer_chunks, self.backoff = buffer_chunks, backoff_ms / 1000.0
        #: bytes of answers queued per partition before it is fetched again
        self.buffer_bytes = max(buffer_chunks, 1) * max_partition_bytes
        self.data, self.needs_reset = data, needs_reset
        self._wake = asyncio.Event()
        self._inflight: dict[int, asyncio.Future[Struct]] = {}
        #: each leader's fetch session
        self.sessions: dict[int, FetchSession] = {}
        self._stale = False
        #: answers whose decoding continues in a later callback (nothing is fetched ahead)
        self._decoding = 0
        #: Fetch requests sent before the answer before them was decoded (:meth:`_send_ahead`)
        self.sent_ahead = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the task (once)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="kclient-aio-fetcher"
            )

    def wake(self) -> None:
        """Look for partitions to fetch now (buffers drained, seek, new assignment)."""
        self._wake.set()

    async def stop(self) -> None:
        """Cancel the task, forget the requests in flight and end the fetch sessions."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        parked = {node for node, fut in self._inflight.items() if not fut.done()}
        self._inflight.clear()
        closing = []
        for node, session in self.sessions.items():
            body = session.close_body(self.settings)
            conn = self.cluster.connection_if_open(node)
            if body is None or conn is None:
                continue
            # a broker answers one request of a connection at a time: behind a fetch parked
            # there (up to fetch.wait.max.ms) the close would wait, so it goes on a connection
            # of its own (a session is not bound to a connection)
            closing.append(
                self._close_aside(node, body) if node in parked else conn.request(FETCH, body)
            )
        self.sessions.clear()
        if closing:
            wait = self.settings.max_wait_ms / 1000 + 5
            try:
                await within(asyncio.gather(*closing, return_exceptions=True), wait)
            except asyncio.TimeoutError:
                log.info("fetch sessions not closed within %.1f s", wait)

    async def _close_aside(self, node: int, body: dict[str, Any]) -> None:
        """Send a session's close on a new connection to ``node``, closed after the answer."""
        info = self.cluster.brokers.get(node)
        if info is None:
            return
        conn = AIOConnection(info.host, info.port, self.cluster.settings, node_id=node)
        try:
            await conn.connect()
            await conn.request(FETCH, body)
        except BaseException:  # unanswered, cancelled: closed without waiting
            conn.close("closing the fetch session failed")
            raise
        await conn.wait_closed()

    async def _run(self) -> None:
        while True:
            if self._stale:
                self._stale = False
                try:
                    await self.cluster.refresh(
                        sorted({tp.topic for tp in self.states}), allow_auto_create=False
                    )
                except KafkaError as exc:
                    log.info("metadata refresh failed: %s", exc)
                    await asyncio.sleep(self.backoff)
            self._wake.clear()
            await self._send_fetches()
            if self._stale:  # a partition without a leader (an election, a restart): no
                # fetch answer will wake this task, so look again after retry.backoff.ms
                asyncio.get_running_loop().call_later(self.backoff, self.wake)
            await self._wake.wait()

    def _fetchable(self) -> dict[int, list[PartitionState]]:
        by_node: dict[int, list[PartitionState]] = {}
        limit = self.buffer_chunks
        for st in self.states.values():
            if not st.fetchable(limit, self.buffer_bytes):
                continue
            node = self.cluster.leader(st.tp.topic, st.tp.partition)
            if node is None:
                self._stale = True
                continue
            if node not in self._inflight:
                by_node.setdefault(node, []).append(st)
        return by_node

    async def _send_fetches(self) -> None:
        for node, sts in self._fetchable().items():
            try:
                conn = await self.cluster.connection(node)
            except KafkaError as exc:
                log.info("cannot reach broker %d: %s", node, exc)
                self._stale = True
                asyncio.get_running_loop().call_later(self.backoff, self.wake)
                continue
            if node not in self._inflight:
                self._send_to(node, conn, sts)

    def _send_to(self, node: int, conn: AIOConnection, sts: list[PartitionState]) -> None:
        """Write one Fetch for ``sts`` to ``node`` (in its session); its answer goes to
        :meth:`_done`."""
        sts = [st for st in sts if st.tp in self.states and st.fetch_offset >= 0]
        if not sts:
            return
        session = self.sessions.setdefault(node, FetchSession())
        version = conn.version(FETCH)
        req = session.request(
            [
                PartitionFetch(
                    st.tp.topic, st.tp.partition, st.fetch_offset, self.max_partition_bytes
                )
                for st in sts
            ],
            self.settings,
            version,
            conn.settings.client_id,
        )
        try:
            fut = (  # a caught-up reader's usual request comes with its frame prepared
                conn.send_framed(FETCH, version, req, reader_for(version))
                if callable(req)
                else conn.send(FETCH, req, version, reader=reader_for(version))
            )
        except KafkaError as exc:
            session.failed()
            self.cluster.drop(conn, str(exc))
            self._stale = True
            return
        assert fut is not None
        asked = [(st, st.fetch_offset, st.epoch, -1) for st in sts]
        self._inflight[node] = fut
        fut.add_done_callback(
            lambda f, node=node, asked=asked, conn=conn: (  # type: ignore[misc]
                self._done(node, conn, asked, f)
            )
        )

    def _done(
        self,
        node: int,
        conn: AIOConnection,
        asked: list[_Asked],
        fut: asyncio.Future[Struct],
    ) -> None:
        if self._inflight.get(node) is fut:
            del self._inflight[node]
        self.wake()
        session = self.sessions.get(node)
        if fut.cancelled() or fut.exception() is not None:
            if session is not None:
                session.failed()
            if fut.cancelled():
                return
            log.info("fetch from broker %d failed: %s", node, fut.exception())
            self.cluster.drop(conn, str(fut.exception()))
            self._stale = True
            return
        resp: FetchResponse = fut.result()
        if session is not None and not session.answer(resp):
            return  # a session error: the next request (the task is woken) is full
        parts = partitions_of(resp)
        self._take_all(self._send_ahead(node, conn, asked, parts), parts, 0)

    def _send_ahead(
        self, node: int, conn: AIOConnection, asked: list[_Asked], parts: dict[Any, Any]
    ) -> list[_Asked]:
        """Send ``node``'s next Fetch before this answer is decoded, from offsets read off its
        entries' headers (:func:`~kclient.core.prefetch.fetch_ahead`), so the broker works
        while the answer is decoded; ``asked`` with where each partition's next fetch went
        from.  Not while an earlier answer is still being decoded, nor read_committed (the
        last stable offset cuts answers short)."""
        if self._task is None or self._decoding or self.settings.read_committed:
            return asked  # stopped, or an answer being decoded, or read_committed
        answers = []
        for st, _, _, _ in asked:
            part = parts.get((st.tp.topic, st.tp.partition))
            answers.append(None if part is None else (part.records, part.error_code))
        ends = fetch_ahead([a[:3] for a in asked], answers, self.buffer_chunks, self.buffer_bytes)
        if ends is None:
            return asked
        sts = self._fetchable().get(node)
        if sts and conn.connected:
            self._send_to(node, conn, sts)
            self.sent_ahead += 1
        return [(st, offset, epoch, end) for (st, offset, epoch, _), end in zip(asked, ends)]

    def _take_all(self, asked: list[_Asked], parts: dict[Any, Any], start: int) -> None:
        """Decode the partitions of one response from ``start`` on; when decoding has taken a
        time slice, the rest continues in a later callback (the loop runs in between)."""
        stop = time.monotonic() + _SLICE
        got = False
        if start:
            self._decoding -= 1
        for i in range(start, len(asked)):
            if i > start and time.monotonic() > stop:
                asyncio.get_running_loop().call_soon(self._take_all, asked, parts, i)
                self._decoding += 1
                break
            st, offset, epoch, ahead = asked[i]
            at = ahead if ahead >= 0 else offset
            if st.epoch != epoch or st.fetch_offset != at or self.states.get(st.tp) is not st:
                continue  # seeked, reset or revoked meanwhile
            part = parts.get((st.tp.topic, st.tp.partition))
            if part is None:
                continue
            got |= self._take(st, offset, part, ahead)
        if got:
            self.data.set()

    def _take(self, st: PartitionState, offset: int, part: Any, ahead: int) -> bool:
        topic, partition = st.tp.topic, st.tp.partition
        answer = plain_part(part, topic, partition, offset, self.settings)  # the usual one
        what = take_answer(
            st,
            offset,
            st.epoch,
            answer or message_set(part, topic, partition, offset, self.settings),
            ahead,
        )
        if what == RESET:
            self.needs_reset.set()  # the consumer resets it
        elif what == REFRESH:
            log.info("fetching %s: %s", st.tp, error_for_code(part.error_code).__name__)
            self._stale = True
        return what in (DATA, RESET)
