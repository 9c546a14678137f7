"""The asyncio producer's sender task: ready batches to Produce requests, responses to futures.

One task loops: it takes the accumulator's ready batches, groups them by partition leader and
writes one Produce request per broker (one batch per partition per request), keeping at most
``max_in_flight`` requests per connection.  Responses are handled in a done-callback, never by
awaiting them one by one: each partition's batch resolves its futures with consecutive offsets,
or fails them with the partition's error; retriable errors (and broken connections) put the
batch back at the front of its partition's queue at once, where it holds its partition until
its ``retry.backoff.ms`` ends (:meth:`Accumulator.requeue`).

Idempotent and transactional producers (``idem``, an :class:`kclient.core.idempotence.
IdempotentState`): a batch gets its sequences when first written and keeps them across retries;
a partition is held back while it has ``max_in_flight`` batches unacknowledged, a retry at its
head with batches still in flight (the broker must see the sequences in order), or a new batch
at its head while one stamped before a bump (KIP-360) is in flight; a bump waits until nothing
is in flight, and keeps the stamps of the batches that may have been written.  What a sequence error
means is :func:`kclient.core.idempotence.sequence_outcome`'s; a transactional producer adds
new partitions to its transaction (:func:`kclient.core.transactions.add_partitions`) first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from kclient.core.idempotence import IdempotentState, init_idempotent
from kclient.core.produce import magic_for, produce_body, retry_verdict, settle
from kclient.core.steps import Conversation
from kclient.core.transactions import TxnState, add_partitions
from kclient.errors import KafkaError, KafkaTimeoutError
from kclient.metrics import ClientMetrics
from kclient.producer.data import RecordMetadata
from kclient.protocol.apis import PRODUCE
from kclient.protocol.error_codes import LeaderNotAvailableError
from kclient.protocol.schema import Struct

from .accumulator import Accumulator, AIOBatch
from .cluster import AIOCluster
from .connection import AIOConnection
from .timeouts import within

if TYPE_CHECKING:
    from kclient.protocol.messages import ProduceResponse

__all__ = ["Sender"]

_T = TypeVar("_T")
TP = tuple[str, int]

log = logging.getLogger(__name__)
#: longest one callback resolves futures before it leaves the rest to the next (seconds)
_SLICE = 0.005


class Owner(Protocol):
    """What the sender needs of its producer (AIOProducer)."""

    acc: Accumulator
    cluster: AIOCluster
    _metrics: ClientMetrics

    def released(self, n: int) -> None: ...

    def batch_left(self, topic: str, partition: int) -> None: ...

    def forget_topic(self, topic: str) -> None: ...

    def run(self, conversation: Conversation[_T]) -> Awaitable[_T]: ...


class Sender:
    """Drives the accumulator of one AIOProducer (see the module docstring)."""

    def __init__(
        self,
        producer: Owner,
        acks: int,
        ack_timeout_ms: int,
        max_in_flight: int,
        retries: int,
        backoff: float,
        codec_of: Callable[[str], int],
        idem: IdempotentState | None = None,
    ) -> None:
        self.producer, self.acc, self.cluster = producer, producer.acc, producer.cluster
        self.acks, self.ack_timeout_ms = acks, ack_timeout_ms
        self.max_in_flight, self.retries, self.backoff = max_in_flight, retries, backoff
        self.codec_of = codec_of
        self.loop = asyncio.get_running_loop()
        self.metrics = producer._metrics
        self._wake = asyncio.Event()
        self._flushing = 0
        self._stopping = False
        #: a send() was cancelled: drop cancelled messages from batches before writing them
        self.cancelled = False
        self.idem = idem
        self.tid = idem.transactional_id if idem is not None else None
        #: idempotence: per partition, the batches written and not yet answered
        self._unacked: dict[TP, list[AIOBatch]] = {}
        self._inflight: dict[AIOConnection, set[asyncio.Future[Struct]]] = {}
        self._waiting: set[asyncio.Future[None]] = set()  # flush() waiters
        self._stale = False
        self._stop_error: BaseException | None = None
        self._task = self.loop.create_task(self._run(), name="kclient-aio-sender")

    def wake(self) -> None:
        """Ask the task to look at the queues now."""
        self._wake.set()

    # -- flush / stop ---------------------------------------------------------------------------
    def _idle(self) -> bool:
        return self.acc.pending == 0

    async def flush(self, timeout: float | None) -> None:
        """Wait until every message queued so far is acknowledged or failed."""
        if self._idle():
            return
        done: asyncio.Future[None] = self.loop.create_future()
        self._waiting.add(done)
        self._flushing += 1
        self.wake()
        try:
            await within(asyncio.shield(done), timeout)
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"flush did not finish within {timeout} s") from None
        finally:
            self._flushing -= 1
            self._waiting.discard(done)

    def _check_flushed(self) -> None:
        if self._waiting and self._idle():
            for w in self._waiting:
                if not w.done():
                    w.set_result(None)

    async def stop(self, error: BaseException) -> None:
        """Stop the task; messages still queued or in flight fail with ``error``."""
        self._stopping = True
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._stop_error = error
        for b in self.acc.take_all():
            self._fail(b, error)
        for futs in self._inflight.values():
            for f in list(futs):
                f.cancel()  # _complete fails their batches with ``error``
        await asyncio.sleep(0)

    # -- the loop -------------------------------------------------------------------------------
    async def _run(self) -> None:
        acc, loop = self.acc, self.loop
        while True:
            if self._stale:
                self._stale = False
                try:
                    await self.cluster.refresh(
                        sorted({t for t, _ in acc.queues}), allow_auto_create=False
                    )
                except KafkaError as exc:
                    log.info("metadata refresh failed: %s", exc)
                    await asyncio.sleep(self.backoff)
            now = loop.time()
            ready, due = acc.ready(
                now, self._flushing > 0, self._held() if self.idem is not None else None
            )
            ready = self._expire(ready, now)
            if ready:
                await self._dispatch(ready)
                await asyncio.sleep(0)  # one round per loop turn: others run between
                continue
            self._check_flushed()
            self._wake.clear()
            timer = loop.call_at(due, self._wake.set) if due is not None else None
            await self._wake.wait()
            if timer is not None:
                timer.cancel()

    def _expire(self, ready: list[AIOBatch], now: float) -> list[AIOBatch]:
        out = []
        for b in ready:
            if now >= b.deadline:
                self._fail(
                    b,
                    KafkaTimeoutError(f"delivery.timeout.ms expired after {b.attempts} attempt(s)"),
                )
            else:
                out.append(b)
        return out

    # -- idempotence ----------------------------------------------------------------------------
    def _held(self) -> set[TP]:
        """The partitions no batch may leave now (see the module docstring)."""
        idem, unacked, limit = self.idem, self._unacked, self.max_in_flight
        assert idem is not None
        if idem.bump_requested and any(unacked.values()):
            return set(self.acc.queues)
        held = set()
        for key, q in self.acc.queues.items():
            mine = unacked.get(key, ())
            out = len(mine)
            if out >= limit or (
                out
                and q
                and (
                    q[0].attempts > 0
                    or (q[0].base_sequence < 0 and any(idem.stale(b) for b in mine))
                )
            ):
                held.add(key)
        return held

    async def _sequence(self, ready: list[AIOBatch]) -> list[AIOBatch]:
        """Bump when due, get a producer id when there is none, add the partitions new to the
        transaction; the batches that may be written now (the others are retried)."""
        idem = self.idem
        assert idem is not None
        try:
            if idem.bump_requested:
                idem.bump_and_restamp(ready + [b for q in self.acc.queues.values() for b in q])
            if not idem.has_producer_id:
                await self.producer.run(init_idempotent(idem))
            if isinstance(idem, TxnState):
                await self.producer.run(
                    add_partitions(idem, {(b.topic, b.partition) for b in ready})
                )
        except KafkaError as exc:
            for b in ready:
                self._retry(b, exc, sent=False)
            return []
        return ready

    def _others(self, b: AIOBatch) -> list[AIOBatch]:
        """The batches not yet acknowledged beside ``b``: its partition's (in flight, queued
        and retrying)."""
        key = (b.topic, b.partition)
        return [*self._unacked.get(key, ()), *self.acc.queues.get(key, ())]

    async def _dispatch(self, ready: list[AIOBatch]) -> None:
        if self.idem is not None:
            ready = await self._sequence(ready)
        if self.cancelled:
            self.cancelled = False
            for b in ready:
                before = len(b.futures)
                b.drop_cancelled()
                if len(b.futures) != before:
                    self.producer.released(before - len(b.futures))
            ready = [b for b in ready if b.futures]
        moved = self.producer.batch_left
        for b in ready:
            moved(b.topic, b.partition)
        by_node: dict[int, list[AIOBatch]] = {}
        later: list[AIOBatch] = []
        for b in ready:
            node = self.cluster.leader(b.topic, b.partition)
            if node is None:
                later.append(b)
            else:
                by_node.setdefault(node, []).append(b)
        for b in later:
            # retriable, as the threaded sender's: it waits for a leader (metadata refreshed)
            # until delivery.timeout.ms instead of failing at once while one is elected
            self._retry(
                b,
                LeaderNotAvailableError(
                    f"topic {b.topic!r} partition {b.partition} has no known leader"
                ),
                sent=False,
            )
        for node, batches in by_node.items():
            try:
                conn = await self.cluster.connection(node)
            except KafkaError as exc:
                for b in batches:
                    self._retry(b, exc, sent=False)
                continue
            inflight = self._inflight.setdefault(conn, set())
            while len(inflight) >= self.max_in_flight and conn.connected:
                await asyncio.wait(list(inflight), return_when=asyncio.FIRST_COMPLETED)
            seen: set[tuple[str, int]] = set()
            now: list[AIOBatch] = []
            extra: list[AIOBatch] = []
            for b in batches:
                key = (b.topic, b.partition)
                if key in seen:
                    extra.append(b)
                else:
                    seen.add(key)
                    now.append(b)
            for b in reversed(extra):  # the next request takes them, in order
                self.acc.requeue(b)
            self._send(conn, now)
            await conn.drain()

    def _send(self, conn: AIOConnection, batches: list[AIOBatch]) -> None:
        """Write one Produce request with ``batches`` (all the writing is synchronous)."""
        try:
            version = conn.version(
                PRODUCE, None if self.idem is None else self.idem.produce_max_version()
            )
        except KafkaError as exc:
            for b in batches:
                self._fail(b, exc)
            return
        magic = magic_for(version)
        created_ms = int(time.time() * 1000)
        topic_data: dict[str, list[tuple[int, Any]]] = {}
        sent: dict[tuple[str, int], AIOBatch] = {}
        idem = self.idem
        for b in batches:
            if idem is not None and b.base_sequence < 0:
                idem.assign(b)
            try:
                records = b.to_partition_batch(self.codec_of(b.topic), created_ms).encode(magic)
            except Exception as exc:  # noqa: BLE001 - headers on an old broker, a bad codec, ...
                self._fail(b, exc)
                continue
            topic_data.setdefault(b.topic, []).append((b.partition, records))
            sent[(b.topic, b.partition)] = b
            b.attempts += 1
            if idem is not None:
                self._unacked.setdefault((b.topic, b.partition), []).append(b)
        if not sent:
            return
        body = produce_body(self.tid, self.acks, self.ack_timeout_ms, topic_data)
        try:
            fut = conn.send(PRODUCE, body, version, expect_response=self.acks != 0)
        except KafkaError as exc:
            self.cluster.drop(conn, str(exc))
            for b in sent.values():
                self._retry(b, exc)
            return
        if fut is None:  # acks=0: written is all we learn
            for b in sent.values():
                self._succeed(b, -1, -1)
            return
        inflight = self._inflight.setdefault(conn, set())
        inflight.add(fut)
        node = conn.node_id if conn.node_id is not None else -1

        def done(f: asyncio.Future[Struct]) -> None:
            inflight.discard(f)
            self._complete(conn, node, sent, f)

        fut.add_done_callback(done)

    def _complete(
        self,
        conn: AIOConnection,
        node: int,
        batches: dict[tuple[str, int], AIOBatch],
        fut: asyncio.Future[Struct],
    ) -> None:
        if self.idem is not None:
            for b in batches.values():
                out = self._unacked.get((b.topic, b.partition))
                if out is not None and b in out:
                    out.remove(b)
        if fut.cancelled():
            for b in batches.values():
                self._fail(b, self._stop_error or KafkaError("the request was cancelled"))
            return
        exc = fut.exception()
        if exc is not None:
            self.cluster.drop(conn, str(exc))
            self._stale = True
            for b in batches.values():
                self._retry(b, exc)
            self.wake()
            return
        resp: ProduceResponse = fut.result()
        settle(
            resp,
            node,
            batches,
            self.idem,
            self._others,
            self._succeed,
            self._fail,
            self._retry_forced,
        )
        self._check_flushed()
        self.wake()

    # -- outcomes -------------------------------------------------------------------------------
    def _succeed(self, b: AIOBatch, base: int, append_time: int, start: int = 0) -> None:
        """Resolve the batch's futures; a slice at a time (each resolution wakes a waiter), so
        a large batch does not hold the event loop: the rest goes on in a later callback."""
        topic, partition = b.topic, b.partition
        ts, futures, created = b.timestamps, b.futures, b.created_ms
        n = len(futures)
        stop = time.monotonic() + _SLICE
        i = start
        while i < n:
            end = min(n, i + 128)
            for j in range(i, end):
                f = futures[j]
                if f.done():
                    continue
                t = created
                if append_time != -1:
                    t = append_time
                elif ts is not None:
                    t = ts[j] or created
                f.set_result(RecordMetadata(topic, partition, base + j if base >= 0 else -1, t))
            i = end
            if i < n and time.monotonic() > stop:
                self.loop.call_soon(self._succeed, b, base, append_time, i)
                return
        self.metrics.messages[(topic, partition)] += n
        self.producer.released(n)
        self._check_flushed()

    def _fail(self, b: AIOBatch, exc: BaseException) -> None:
        """Set ``exc`` on the batch's futures and log it at WARNING (a failure nobody awaits
        is still seen: the same rule as kclient.Producer's, docs/producer.md)."""
        if self.idem is not None:  # a gap in its sequences: bump (KIP-360), or must abort
            self.idem.record_failure(exc, b.base_sequence >= 0, produce=True)
        self.metrics.error(exc)
        log.warning(
            "failed to deliver %d message(s) to %s/%s: %s",
            len(b.futures),
            b.topic,
            b.partition,
            exc,
        )
        for f in b.futures:
            if not f.done():
                f.set_exception(exc)
        self.producer.released(len(b.futures))
        self._check_flushed()

    def _retry_forced(self, b: AIOBatch, exc: BaseException, force: bool) -> None:
        self._retry(b, exc, force=force)

    def _retry(
        self, b: AIOBatch, exc: BaseException, sent: bool = True, force: bool = False
    ) -> None:
        give_up, refresh = retry_verdict(b, exc, sent, force, self.retries)
        if give_up:
            self._fail(b, exc)
            return
        if refresh:
            self._stale = True
            self.producer.forget_topic(b.topic)
        self.metrics.retry()
        log.debug("retrying %r after %s", b, exc)
        self.acc.requeue(b, self.loop.time() + self.backoff)
        self.wake()
