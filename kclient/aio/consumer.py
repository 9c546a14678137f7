"""AIOConsumer: an asyncio consumer with ``async for``, group membership, commit and seek.

    async with AIOConsumer("events", bootstrap_servers="127.0.0.1:9092", group_id="g1",
                           auto_offset_reset="earliest") as c:
        async for record in c:
            ...
        batch = await c.getmany(timeout_ms=500)      # {TopicPartition: [ConsumerRecord]}
        record = await c.getone()
        await c.commit()

Theory of operation: the fetch task (:mod:`kclient.aio.fetcher`) keeps the buffers of the
assigned partitions filled; ``getmany``/``getone`` hand records out and advance the positions.
With a ``group.id`` and ``subscribe``, a heartbeat task keeps the membership alive and flags a
rebalance when the coordinator asks for one; the next ``getmany``/``getone`` carries it out in
the caller's task, as kclient.Consumer's poll does: commit (auto-commit), revoke, JoinGroup,
SyncGroup (assigning as leader), then positions from the committed offsets, else
``auto.offset.reset``.  The membership is the core's (:mod:`kclient.core.group`, through
:mod:`kclient.aio.group`), so it behaves as kclient.Consumer's: range, roundrobin and
cooperative-sticky (KIP-429: the join runs in a task while every owned partition keeps being
returned; only the partitions that move are revoked, then the member rejoins), static
membership with ``group.instance.id`` (KIP-345: no LeaveGroup on close; fenced is fatal), and
pattern subscriptions re-matched against the metadata every second.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, overload

from kclient._args import (
    PartitionsArg,
    commit_offsets,
    partition_list,
    poll_timeout_ms,
    topic_partition,
    topic_partitions,
)
from kclient.config import consumer_config
from kclient.consumer.connector import connection_settings, generate_consumer_id
from kclient.consumer.kafka_consumer import OffsetAndTimestamp
from kclient.core.consumer_protocol import is_cooperative, strategies_of
from kclient.core.consumer_records import build_records
from kclient.core.fetch import ISOLATION_LEVELS
from kclient.core.prefetch import PartitionState, take
from kclient.core.subscription import Subscription
from kclient.encoders import decode_function
from kclient.errors import (
    IllegalGenerationError,
    IllegalStateError,
    InvalidConfigError,
    KafkaError,
    NoOffsetForPartitionError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from kclient.metrics import ClientMetrics, start_reporter
from kclient.observability import tracing_for
from kclient.protocol.apis import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kclient.structs import ConsumerRecord, OffsetAndMetadata, TopicPartition

from .cluster import AIOCluster
from .consumer_group import AIOConsumerGroup, ConsumerProtocolSteps
from .fetcher import AIOFetcher
from .group import AIOGroup
from .timeouts import within

__all__ = ["AIOConsumer", "ConsumerRecord"]

log = logging.getLogger(__name__)
#: getone() gives the event loop a turn when it has run this long (seconds) without one
_SLICE = 0.005
#: ConsumerRecord from a tuple of its fields in one C call (``_make`` is a Python frame each)
_new = tuple.__new__
_UNSUPPORTED = {
    "zookeeper.connect": "AIOConsumer uses broker-coordinated groups only (bootstrap.servers)"
}


class AIOConsumer(ConsumerProtocolSteps):
    """An asyncio consumer: subscribe (group) or assign, getmany/getone/async for, commit, seek."""

    def __init__(self, *topics: str | Mapping[str, Any], **config: Any) -> None:
        conf, topics = consumer_config(topics, config, _UNSUPPORTED)
        self.config = conf
        self.strategies = strategies_of(conf["partition.assignment.strategy"])
        self.cooperative = is_cooperative(self.strategies)
        self.group_instance_id: str | None = conf["group.instance.id"] or None
        self._isolation = ISOLATION_LEVELS[conf["isolation.level"]]
        self.group_id: str | None = conf["group.id"] or None
        self.consumer_id = generate_consumer_id(self.group_id or "kclient", conf["consumer.id"])
        self._metrics = ClientMetrics()
        settings = connection_settings(conf).replace(metrics=self._metrics)
        self.cluster = AIOCluster([f"{h}:{p}" for h, p in conf["metadata.broker.list"]], settings)
        self._key = decode_function(conf.create("key.decoder.class"))
        self._value = decode_function(conf.create("value.decoder.class"))
        self._group: AIOGroup | None = None
        if self.group_id and conf["group.protocol"] == "consumer":
            self._group = AIOConsumerGroup(
                self.cluster, self.group_id, self.consumer_id, conf, self.group_instance_id
            )
        elif self.group_id:
            self._group = AIOGroup(
                self.cluster,
                self.group_id,
                self.consumer_id,
                self.strategies,
                conf["session.timeout.ms"],
                conf["retry.backoff.ms"],
                conf["offsets.commit.max.retries"],
                conf["exclude.internal.topics"],
                self.group_instance_id,
            )
        self._sub = Subscription()
        if topics:
            self._sub.subscribe([str(t) for t in topics], None)
        self._join_task: asyncio.Task[bytes | None] | None = None  # a cooperative join
        self._fatal: KafkaError | None = None  # FENCED_INSTANCE_ID: getmany raises it
        self._manual = False
        self._listener: Any = None
        self._states: dict[TopicPartition, PartitionState] = {}
        self._pending: deque[ConsumerRecord] = deque()  # drained for getone / async for
        self._rejoin: str | None = "revoke" if self._sub.active else None
        self._data: asyncio.Event | None = None
        self._needs_reset: asyncio.Event | None = None
        self._fetcher: AIOFetcher | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self._started = self._closed = False
        self._auto_commit = bool(conf["auto.commit.enable"]) and self._group is not None
        self._commit_every = conf["auto.commit.interval.ms"] / 1000.0
        self._next_commit = 0.0
        self._slice = 0.0
        self._last: ConsumerRecord | None = None  # see _settle
        self._joining = False
        if self._sub.active and self._group is None:
            raise InvalidConfigError(
                "subscribing to topics needs a group.id (or use assign())", "group.id"
            )
        self._reporter = start_reporter(
            conf["statistics.interval.ms"],
            conf["stats.cb"],
            self.metrics,
            conf["statistics.format"],
        )
        tracing = tracing_for(conf, self.group_id, self._metrics)
        if tracing is not None:
            from kclient.observability.clients import trace_aio_consumer

            trace_aio_consumer(self, tracing)

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect, start the fetch (and heartbeat) tasks; the first getmany joins the group."""
        if self._closed:
            raise IllegalStateError("start() on a closed AIOConsumer")
        if self._started:
            return
        self._started = True
        await self.cluster.refresh(self._sub.topics, allow_auto_create=False)
        conf = self.config
        self._data, self._needs_reset, self._lock = asyncio.Event(), asyncio.Event(), asyncio.Lock()
        if self._states:  # assign() before start(): positions to resolve
            self._needs_reset.set()
        self._fetcher = AIOFetcher(
            self.cluster,
            self._states,
            max_partition_bytes=conf["fetch.message.max.bytes"],
            min_bytes=conf["fetch.min.bytes"],
            max_wait_ms=conf["fetch.wait.max.ms"],
            isolation_level=ISOLATION_LEVELS[conf["isolation.level"]],
            buffer_chunks=conf["queued.max.message.chunks"],
            backoff_ms=conf["retry.backoff.ms"],
            data=self._data,
            needs_reset=self._needs_reset,
            max_bytes=conf["fetch.max.bytes"],
        )
        self._fetcher.start()
        self._next_commit = time.monotonic() + self._commit_every
        if self._group is not None:
            self._heartbeat = asyncio.get_running_loop().create_task(
                self._heartbeat_loop(), name="kclient-aio-heartbeat"
            )

    async def __aenter__(self) -> AIOConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self, autocommit: bool = True) -> None:
        """Commit (auto-commit), leave the group, stop the tasks and close the connections."""
        if self._closed:
            return
        self._closed = True
        self._reporter.stop()
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
        joining = await self._cancel_join()
        if self._fetcher is not None:
            await self._fetcher.stop()
        if self._group is not None:
            if (
                autocommit
                and self._auto_commit
                and self._states
                and self._rejoin is None
                and not joining
            ):
                await self._try_commit("close")
            await self._leave()
            self._group.close()
        await self.cluster.close()

    stop = close

    # -- subscription ---------------------------------------------------------------------------
    def subscribe(
        self, topics: Iterable[str] | None = None, pattern: str | None = None, listener: Any = None
    ) -> None:
        """Join the group for ``topics`` (or every topic matching the regex ``pattern``,
        re-matched every second); ``listener`` has on_partitions_revoked / _assigned / _lost
        (plain or async methods), called around each rebalance."""
        if self._group is None:
            raise InvalidConfigError("subscribe() needs a group.id (or use assign())", "group.id")
        self._sub.subscribe(topics, pattern)
        self._listener, self._manual = listener, False
        self._rejoin = self._rejoin or "revoke"
        self._kick()

    async def unsubscribe(self) -> None:
        """Drop the subscription (revoking through the listener and leaving the group) or the
        assignment."""
        if self._sub.active and self._group is not None:
            await self._cancel_join()
            if self._started:
                await self._revoke_all("revoke")
                await self._leave()
        self._sub.clear()
        self._manual, self._rejoin = False, None
        self._set_assignment([])
        self._pending.clear()

    def assign(self, partitions: PartitionsArg) -> None:
        """Read exactly ``partitions`` (TopicPartitions or ``(topic, partition)`` tuples, one or
        a list; no group membership); positions come from the committed offsets (with a
        group.id), else auto.offset.reset."""
        tps = topic_partitions([partitions], "assign()")
        self._sub.clear()
        self._manual, self._rejoin = True, None
        self._set_assignment(tps)

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned now."""
        return set(self._states)

    def subscription(self) -> set[str]:
        """The topics subscribed to (a pattern's: those it matched at the last join)."""
        return self._sub.subscription()

    def _set_assignment(self, tps: list[TopicPartition]) -> None:
        self._settle()
        old = self._states
        new = {tp: old.get(tp) or PartitionState(tp) for tp in tps}
        old.clear()
        old.update(new)
        keep = set(new)
        self._filter_pending(lambda tp: tp in keep)
        if self._needs_reset is not None:
            self._needs_reset.set()
        if self._fetcher is not None:
            self._fetcher.wake()

    def _filter_pending(self, keep: Callable[[TopicPartition], bool]) -> None:
        """Keep the drained-but-unreturned records whose partition ``keep`` accepts (in place:
        getone holds the deque)."""
        pending = self._pending
        if pending:
            kept = [r for r in pending if keep(TopicPartition(r.topic, r.partition))]
            pending.clear()
            pending.extend(kept)

    def _kick(self) -> None:
        if self._data is not None:
            self._data.set()

    # -- reading --------------------------------------------------------------------------------
    async def getmany(
        self,
        *partitions: PartitionsArg,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        timeout: float | None = None,
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records available within ``timeout_ms`` (or ``timeout`` seconds, as kclient.Consumer's
        poll takes them) of ``partitions`` (default all assigned):
        ``{TopicPartition: [ConsumerRecord]}``, at most ``max_records`` (max.poll.records)."""
        limit = max_records or self.config["max.poll.records"]
        wait_ms = poll_timeout_ms((), timeout, timeout_ms, "getmany()")
        deadline = time.monotonic() + wait_ms / 1000.0 if wait_ms >= 0 else math.inf
        only = set(topic_partitions(partitions, "getmany()")) if partitions else None
        while True:
            await self._ready()
            out: dict[TopicPartition, list[ConsumerRecord]] = {}
            if self._pending:
                self._take_pending(out, limit, only)
            if limit - sum(map(len, out.values())) > 0:
                self._drain(out, limit - sum(map(len, out.values())), only, True)
            if out:
                return out
            if not await self._wait(deadline):
                return {}

    async def getone(self, *partitions: PartitionsArg) -> ConsumerRecord:
        """The next record (of ``partitions``, default all assigned), waiting as long as it takes."""
        pending = self._pending
        if time.monotonic() - self._slice > _SLICE:
            # records already buffered return without suspending: let the loop run between
            await asyncio.sleep(0)
            self._slice = time.monotonic()
        while True:
            if pending and not partitions:
                rec = pending.popleft()
                last = self._last
                if last is not None and (last[1] != rec[1] or last[0] != rec[0]):
                    self._settle()
                self._last = rec
                return rec
            if partitions:
                partitions = tuple(topic_partitions(partitions, "getone()"))
                got = await self.getmany(*partitions, timeout_ms=1000, max_records=1)
                for recs in got.values():
                    return recs[0]
                continue
            await self._ready()
            out: dict[TopicPartition, list[ConsumerRecord]] = {}
            self._drain(out, self.config["max.poll.records"], None, False)
            for recs in out.values():
                pending.extend(recs)
            if not pending:
                await self._wait(time.monotonic() + 1.0)

    def __aiter__(self) -> AIOConsumer:
        return self

    async def __anext__(self) -> ConsumerRecord:
        """``async for record in consumer``: records one by one until the consumer is closed."""
        if self._closed:
            raise StopAsyncIteration
        pending = self._pending
        if pending and time.monotonic() - self._slice <= _SLICE:  # getone's fast path
            rec = pending.popleft()
            last = self._last
            if last is not None and (last[1] != rec[1] or last[0] != rec[0]):
                self._settle()
            self._last = rec
            return rec
        return await self.getone()

    def _settle(self) -> None:
        """Move the position past the last record getone returned.  getone only remembers
        that record (a position update per record would cost a TopicPartition each); this runs
        when the partition changes and before anything reads or sets positions."""
        last, self._last = self._last, None
        if last is not None:
            st = self._states.get(TopicPartition(last.topic, last.partition))
            if st is not None and st.position <= last.offset:
                st.position = last.offset + 1

    async def _wait(self, deadline: float) -> bool:
        """Wait for fetched data (or a rebalance) until ``deadline``; False once it passed."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        data = self._data
        assert data is not None
        data.clear()
        try:
            await within(data.wait(), None if remaining == math.inf else remaining)
        except asyncio.TimeoutError:
            return False
        return True

    def _take_pending(
        self,
        out: dict[TopicPartition, list[ConsumerRecord]],
        limit: int,
        only: set[TopicPartition] | None,
    ) -> None:
        self._settle()
        keep: deque[ConsumerRecord] = deque()
        while self._pending:
            rec = self._pending.popleft()
            tp = TopicPartition(rec.topic, rec.partition)
            if limit <= 0 or (only is not None and tp not in only):
                keep.append(rec)
                continue
            out.setdefault(tp, []).append(rec)
            st = self._states.get(tp)
            if st is not None:
                st.position = rec.offset + 1
            limit -= 1
        self._pending.extend(keep)

    def _drain(
        self,
        out: dict[TopicPartition, list[ConsumerRecord]],
        limit: int,
        only: set[TopicPartition] | None,
        advance: bool,
    ) -> None:
        """Build records from the buffered columns (``advance``: move positions past them)."""
        k, v = self._key, self._value
        drained = False
        for tp, st in self._states.items():
            if limit <= 0:
                break
            if not st.chunks or st.paused or (only is not None and tp not in only):
                if st.error is not None and (only is None or tp in only):
                    err, st.error = st.error, None
                    raise err
                continue
            for cols, i, j in take(st, limit, advance):
                out.setdefault(tp, []).extend(build_records(tp, cols, i, j, k, v))
                self._metrics.messages[tp] += j - i
                limit -= j - i
                drained = True
        if drained and self._fetcher is not None:
            self._fetcher.wake()

    # -- group and positions --------------------------------------------------------------------
    async def _ready(self) -> None:
        """Start if needed, carry out a pending rebalance, resolve unknown positions, and
        auto-commit when due."""
        if self._closed:
            raise IllegalStateError("the AIOConsumer is closed")
        if not self._started:
            await self.start()
        if self._fatal is not None:
            raise self._fatal
        if not (self._sub.active or self._manual):
            raise IllegalStateError("getmany()/getone() need subscribe() or assign() first")
        lock = self._lock
        assert lock is not None and self._needs_reset is not None
        if self._sub.active and (
            self._rejoin is not None
            or self._join_task is not None
            or time.monotonic() >= self._sub.next_check
        ):
            async with lock:
                await self._group_step()
        if self._needs_reset.is_set():
            self._needs_reset.clear()
            try:
                async with lock:
                    await self._resolve_positions()
            except BaseException:  # cancelled or failed: the next call tries again
                self._needs_reset.set()
                raise
        if (
            self._auto_commit
            and time.monotonic() >= self._next_commit
            and self._states
            and self._join_task is None
        ):
            self._next_commit = time.monotonic() + self._commit_every
            await self._try_commit("auto-commit")

    async def _resolve_positions(self) -> None:
        missing = [tp for tp, st in self._states.items() if st.fetch_offset < 0]
        if not missing:
            return
        committed: dict[TopicPartition, int] = {}
        if self._group is not None:
            committed = await self._group.committed(
                [tp for tp in missing if self._states[tp].position < 0]
            )
        to_reset: list[TopicPartition] = []
        for tp in missing:
            st = self._states[tp]
            off = committed.get(tp, -1)
            if off >= 0:
                st.reset_to(off)
            else:
                to_reset.append(tp)
        if to_reset:
            reset = self.config["auto.offset.reset"]
            if reset == "none":
                raise NoOffsetForPartitionError(
                    f"{to_reset} have no committed offset and auto.offset.reset is none"
                )
            ts = EARLIEST_TIMESTAMP if reset == "smallest" else LATEST_TIMESTAMP
            found = await self.cluster.list_offsets(dict.fromkeys(to_reset, ts), self._isolation)
            for tp, off in found.items():
                if tp in self._states:
                    self._states[tp].reset_to(off)
        if self._fetcher is not None:
            self._fetcher.wake()

    # -- positions, seek, commit ----------------------------------------------------------------
    def _state(self, tp: TopicPartition) -> PartitionState:
        st = self._states.get(tp)
        if st is None:
            raise IllegalStateError(f"{tp} is not assigned to this consumer")
        return st

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        """Read ``partition`` (a TopicPartition or ``(topic, partition)``) from ``offset`` next
        (buffered records of it are dropped)."""
        partition = topic_partition(partition, "seek()")
        if offset < 0:
            raise ValueError(f"seek offset must be >= 0, got {offset}")
        self._settle()
        self._state(partition).reset_to(offset)
        self._filter_pending(lambda tp: tp != partition)
        if self._fetcher is not None:
            self._fetcher.wake()

    async def seek_to_beginning(self, *partitions: PartitionsArg) -> None:
        """Seek to the first offset still in the log (all assigned partitions by default)."""
        tps = tuple(topic_partitions(partitions, "seek_to_beginning()"))
        await self._seek_to(tps or tuple(self._states), EARLIEST_TIMESTAMP)

    async def seek_to_end(self, *partitions: PartitionsArg) -> None:
        """Seek past the last message (all assigned partitions by default)."""
        tps = tuple(topic_partitions(partitions, "seek_to_end()"))
        await self._seek_to(tps or tuple(self._states), LATEST_TIMESTAMP)

    async def _seek_to(self, partitions: tuple[TopicPartition, ...], ts: int) -> None:
        if not self._started:
            await self.start()
        for tp in partitions:
            self._state(tp)
        for tp, off in (
            await self.cluster.list_offsets(dict.fromkeys(partitions, ts), self._isolation)
        ).items():
            self.seek(tp, off)

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset whose timestamp is at or after each given time (ms), or None."""
        if not self._started:
            await self.start()
        found = await self.cluster.list_offset_times(dict(timestamps), self._isolation)
        return {
            tp: (OffsetAndTimestamp(*found[tp]) if found[tp][0] >= 0 else None) for tp in timestamps
        }

    async def position(self, partition: TopicPartition | tuple[str, int]) -> int:
        """The offset of the next record returned for ``partition``."""
        partition = topic_partition(partition, "position()")
        self._settle()
        st = self._state(partition)
        if st.position < 0:
            await self._ready()
        return st.position

    def highwater(self, partition: TopicPartition | tuple[str, int]) -> int:
        """The high watermark seen in the last fetch of ``partition`` (-1: none yet)."""
        return self._state(topic_partition(partition, "highwater()")).high_watermark

    @overload
    async def committed(self, partitions: TopicPartition | tuple[str, int]) -> int | None: ...

    @overload
    async def committed(self, partitions: Iterable[Any]) -> dict[TopicPartition, int | None]: ...

    async def committed(
        self, partitions: PartitionsArg
    ) -> int | None | dict[TopicPartition, int | None]:
        """The group's committed offset of a partition (None: none); given a list of
        partitions, ``{TopicPartition: offset or None}``."""
        if self._group is None:
            raise IllegalStateError("committed() needs a group.id")
        tps, one = partition_list(partitions, "committed()")
        if not self._started:
            await self.start()
        offs = await self._group.committed(tps)
        found = {tp: (o if (o := offs.get(tp, -1)) >= 0 else None) for tp in tps}
        return found[tps[0]] if one else found

    async def commit(self, offsets: Mapping[Any, int | OffsetAndMetadata] | None = None) -> None:
        """Commit ``offsets`` (the next offsets to read), by default every assigned
        partition's position; raises the commit's error (a generation error means the group
        rebalanced: the next getmany rejoins)."""
        if self._group is None:
            raise IllegalStateError("commit() needs a group.id")
        if not self._started:
            await self.start()
        self._settle()
        if offsets is None:
            todo = {tp: st.position for tp, st in self._states.items() if st.position >= 0}
        else:
            todo = {TopicPartition(*k): o for k, o in commit_offsets(offsets).items()}
        try:
            await self._group.commit(todo)
        except KafkaError as exc:
            if (
                isinstance(
                    exc, (IllegalGenerationError, UnknownMemberIdError, RebalanceInProgressError)
                )
                and not self._manual
                and self._join_task is None
            ):
                self._rejoin = self._rejoin or "revoke"
            raise

    async def _try_commit(self, why: str) -> None:
        try:
            await self.commit()
        except KafkaError as exc:
            log.info("%s: %s commit failed: %s", self.consumer_id, why, exc)
            self._metrics.error(exc)

    def pause(self, *partitions: PartitionsArg) -> None:
        """Stop fetching and returning ``partitions`` (TopicPartitions or ``(topic, partition)``
        tuples, or lists of them) until resume()."""
        states = [self._state(tp) for tp in topic_partitions(partitions, "pause()")]
        for st in states:
            st.paused = True

    def resume(self, *partitions: PartitionsArg) -> None:
        """Fetch and return ``partitions`` (the forms pause() takes) again."""
        states = [self._state(tp) for tp in topic_partitions(partitions, "resume()")]
        for st in states:
            st.paused = False
        if self._fetcher is not None:
            self._fetcher.wake()

    def metrics(self) -> dict[str, Any]:
        """Per-broker counts (docs/metrics.md), per-partition position, lag and buffer.

        Read-only (the stats_cb thread and a Prometheus scrape call it off the event loop):
        the record getone() handed out last counts as consumed without settling it here."""
        last = self._last
        parts = {}
        for tp, st in list(self._states.items()):
            pos = st.position
            if last is not None and last.topic == tp.topic and last.partition == tp.partition:
                pos = max(pos, last.offset + 1)
            parts[f"{tp.topic}/{tp.partition}"] = {
                "position": pos,
                "high_watermark": st.high_watermark,
                "lag": max(0, st.high_watermark - pos)
                if st.high_watermark >= 0 and pos >= 0
                else None,
                "buffered": st.buffered,
                "paused": st.paused,
            }
        return self._metrics.snapshot(
            type="consumer",
            client_id=self.config["client.id"],
            group_id=self.group_id,
            partitions=self._metrics.with_messages(parts, "consumed"),
        )

    def __repr__(self) -> str:
        return f"AIOConsumer({self.consumer_id}, {sorted(self._states)})"
