"""Fetcher threads: one per leader broker (times ``num.consumer.fetchers``), feeding stream queues.

``ConsumerFetcherManager`` (Kafka's class of that name) receives the partitions a rebalance gave
this consumer, finds each one's leader from cluster metadata (a leader-finder thread, retrying
every ``refresh.leader.backoff.ms``), and hands it to the ``ConsumerFetcherThread`` for that
broker.  A fetcher thread fetches all its partitions in one request through
:class:`kclient.io.fetcher.Fetcher` (which decodes every message format, grows the fetch size
around an oversized first message and keeps the next request in flight while this one is
decoded), turns each partition's messages into a :class:`FetchedDataChunk` and puts it on the
partition's stream queue, blocking
while the queue is full (``queued.max.message.chunks`` bounds the memory: at most that many
chunks of at most ``fetch.message.max.bytes`` per partition per stream).

Errors: a partition whose leader moved (or any partition error but out-of-range) goes back to the
leader finder; out of range is reset per ``auto.offset.reset`` (``smallest`` / ``largest``;
``none`` raises ``OffsetOutOfRangeError`` from the stream); a broken connection returns all the
thread's partitions to the leader finder.  ``stop_connections()`` stops and joins every thread,
which the rebalance does before it clears the queues; the leader finder looks leaders up on
connections of its own, which that halts, so a lookup waiting on a silent broker ends at once.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice, repeat
from typing import Any

from kclient.cluster import BrokerInfo, Cluster
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.core.fetch import ISOLATION_LEVELS
from kclient.core.message_set import ByteBufferMessageSet
from kclient.errors import (
    CorruptRecordError,
    KafkaError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    error_for_code,
)
from kclient.io.fetcher import Fetcher as _Fetcher
from kclient.io.fetcher import PartitionFetch
from kclient.protocol.apis import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, LIST_OFFSETS
from kclient.protocol.records import decode_entries
from kclient.protocol.records.common import BatchInfo, Header

from .stream import Chunk, ErrorChunk, FetchedDataChunk, PartitionTopicInfo, _Block

__all__ = ["ConsumerFetcherManager", "ConsumerFetcherThread", "offset_before", "MAX_BUFFER_SIZE"]

#: A first message larger than the fetch size is read by growing that partition's fetch (as
#: kclient.simple's Fetcher does) up to this bound; past it the stream raises
#: MessageSizeTooLargeError.
MAX_BUFFER_SIZE = 64 * 1024 * 1024
#: isolation.level -> the Fetch request's isolation_level

log = logging.getLogger(__name__)


#: One log entry's records as columns: offsets, timestamps, timestamp types, keys (None: all
#: null), values, headers (None: none at all).
_Columns = tuple[
    Iterable[int],
    Iterable[int],
    Iterable[int],
    Sequence[bytes | None] | None,
    list[bytes | None],
    Iterable[list[Header] | None] | None,
]


def _columns(
    offsets: Iterable[int],
    timestamps: Iterable[int],
    timestamp_types: Iterable[int],
    keys: Sequence[bytes | None] | None,
    values: list[bytes | None],
    headers: Iterable[list[Header] | None] | None,
    infos: Iterable[BatchInfo],
) -> tuple[_Columns]:
    """Record factory for ``decode_entries``: one entry's columns as they are (no object per
    record); :meth:`ConsumerFetcherThread._process` joins them into one chunk."""
    return ((offsets, timestamps, timestamp_types, keys, values, headers),)


def offset_before(conn: BrokerConnection, topic: str, partition: int, timestamp: int) -> int:
    """The earliest (-2) or latest (-1) offset of a partition, with any ListOffsets version."""
    version = conn.version(LIST_OFFSETS)
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": partition, "timestamp": timestamp, "max_num_offsets": 1}
                ],
            }
        ],
    }
    resp = conn.request(LIST_OFFSETS, body, version)
    p = resp.topics[0].partitions[0]
    if p.error_code:
        raise error_for_code(p.error_code)(f"listing offsets of {topic}/{partition}")
    if version == 0:
        return p.old_style_offsets[0] if p.old_style_offsets else 0
    return p.offset


class ConsumerFetcherThread(threading.Thread):
    """Fetches every partition this consumer reads from one broker."""

    def __init__(self, manager: ConsumerFetcherManager, broker: BrokerInfo, fetcher_id: int):
        super().__init__(
            name=f"ConsumerFetcherThread-{manager.client_id}-{fetcher_id}-{broker.node_id}",
            daemon=True,
        )
        self.manager, self.broker = manager, broker
        c = manager.config
        self.conn = BrokerConnection(
            broker.host, broker.port, manager.settings, node_id=broker.node_id
        )
        self.fetcher = _Fetcher(
            self.conn,
            max_wait_ms=c["fetch.wait.max.ms"],
            min_bytes=c["fetch.min.bytes"],
            max_buffer_size=max(MAX_BUFFER_SIZE, c["fetch.message.max.bytes"]),
            prefetch=True,
            max_bytes=c.get("fetch.max.bytes"),
            session=True,
            isolation_level=ISOLATION_LEVELS[c.get("isolation.level", "read_uncommitted")],
        )
        self.reset = c["auto.offset.reset"]
        self.partitions: dict[tuple[str, int], PartitionTopicInfo] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._halt = threading.Event()
        self.dead = False
        #: offset of the last corrupt entry reported per partition (each is reported once)
        self._last_corrupt: dict[tuple[str, int], int | None] = {}

    def add_partition(self, info: PartitionTopicInfo) -> bool:
        """Take over ``info``; False when this thread already died (use a new one)."""
        with self._lock:
            if self.dead:
                return False
            self.partitions[(info.topic, info.partition)] = info
        self._wake.set()
        return True

    def stop(self) -> None:
        """Stop now: a fetch waiting on the broker fails at once (its socket is closed) rather
        than holding shutdown or a rebalance for up to its request timeout."""
        self._halt.set()
        self._wake.set()
        self.conn.close("the fetcher was stopped")

    @property
    def stopped(self) -> bool:
        return self._halt.is_set()

    def _give_back(self, tps: Iterable[tuple[str, int]], reason: str, dead: bool = False) -> None:
        with self._lock:
            self.dead = self.dead or dead
            infos = [self.partitions.pop(tp) for tp in list(tps) if tp in self.partitions]
        if infos and not self.stopped:
            self.manager.partitions_failed(infos, f"{self.broker.address}: {reason}")

    def run(self) -> None:
        try:
            self.conn.connect()
            while not self.stopped:
                with self._lock:
                    parts = list(self.partitions.values())
                if not parts:
                    self._wake.wait(0.2)
                    self._wake.clear()
                    continue
                self._fetch_once(parts)
        except KafkaError as exc:
            log.info("fetcher %s: %s", self.name, exc)
            self._give_back(list(self.partitions), str(exc), dead=True)
        except Exception:  # pragma: no cover - a bug
            log.exception("fetcher %s crashed", self.name)
            self._give_back(list(self.partitions), "fetcher crashed", dead=True)
        finally:
            self.fetcher.close()  # ends its fetch session when still connected

    def _fetch_once(self, parts: list[PartitionTopicInfo]) -> None:
        for info in parts:
            if info.fetched_offset < 0:
                self._reset_offset(info)
        with self._lock:
            parts = [i for i in parts if (i.topic, i.partition) in self.partitions]
        if not parts:
            return
        results = self.fetcher.fetch(
            [PartitionFetch(i.topic, i.partition, i.fetched_offset, i.fetch_size) for i in parts]
        )
        for info, ms in zip(parts, results):
            if self.stopped:
                return
            err = ms.error
            if err is None or isinstance(err, CorruptRecordError):
                self._process(info, ms)
            elif isinstance(err, OffsetOutOfRangeError):
                self._out_of_range(info)
            elif isinstance(err, MessageSizeTooLargeError):
                self._error(info, err)
            else:
                self._give_back([(info.topic, info.partition)], type(err).__name__)

    def _process(self, info: PartitionTopicInfo, ms: ByteBufferMessageSet) -> None:
        """Queue the messages of one partition's message set as one chunk (columns)."""
        fetch_offset = info.fetched_offset
        if ms.high_watermark >= 0:
            info.high_watermark = ms.high_watermark
        offsets: list[int] = []
        values: list[bytes | None] = []
        keys: list[bytes | None] | None = None
        blocks: list[_Block] = []
        error: KafkaError | None = None
        b: _Columns
        try:
            if ms.error is not None and not ms.entries:
                raise ms.error
            for b in decode_entries(
                ms.buffer,
                ms.visible,
                _columns,
                start_offset=fetch_offset,
                validate_crc=False,
                max_decompressed=ms.max_decompressed,
                error=ms.error,
                context=ms.context,
            ):
                b_offsets, stamps, ts_types, b_keys, b_values, headers = b
                n = len(b_values)
                if not n:
                    continue
                start = len(values)
                offsets += islice(b_offsets, n)
                values += b_values
                if b_keys is not None:
                    if keys is None:
                        keys = [None] * start
                    keys += islice(b_keys, n)
                elif keys is not None:
                    keys += repeat(None, n)
                blocks.append(_Block(start, n, stamps, ts_types, headers))
        except KafkaError as exc:  # good messages in front of a corrupt entry stay
            error = exc  # (a bad CRC names its offset)
        if offsets:
            info.fetched_offset = max(ms.next_offset, offsets[-1] + 1)
            self._put(
                info,
                FetchedDataChunk.from_columns(
                    offsets, keys, values, blocks, info, fetch_offset, ms.next_offset
                ),
            )
        elif error is None and ms.next_offset > fetch_offset:
            # only transaction markers, aborted or skipped records: no message, but the
            # consumed position moves past them (an empty chunk), so lag can reach 0
            info.fetched_offset = ms.next_offset
            self._put(
                info,
                FetchedDataChunk.from_columns([], None, [], [], info, fetch_offset, ms.next_offset),
            )
        if isinstance(error, CorruptRecordError):
            self._corrupt(info, ms, error)
        elif error is not None:
            self._error(info, error)

    def _corrupt(
        self, info: PartitionTopicInfo, ms: ByteBufferMessageSet, error: CorruptRecordError
    ) -> None:
        """Step over a corrupt entry and go on fetching the partition (the records after it
        are delivered); the stream raises the error first unless ``consumer.skip.corrupt``.
        Each corrupt entry is reported once, however often a fetch meets it."""
        ms.name_corrupt(error)
        resume = error.next_offset if error.next_offset is not None else info.fetched_offset + 1
        info.fetched_offset = max(info.fetched_offset, resume)
        key = (info.topic, info.partition)
        if self._last_corrupt.get(key) == error.offset:
            return
        self._last_corrupt[key] = error.offset
        self.manager.corrupt_entries += 1
        if self.manager.skip_corrupt:
            log.warning("%s: skipped (consumer.skip.corrupt), resuming at offset %d", error, resume)
            return
        log.error("%s; resuming at offset %d", error, resume)
        self._put(info, ErrorChunk(error))

    def _reset_offset(self, info: PartitionTopicInfo) -> None:
        if self.reset == "none":
            raise_chunk = OffsetOutOfRangeError(
                f"{info.topic}/{info.partition}: no committed offset and auto.offset.reset=none"
            )
            self._error(info, raise_chunk)
            return
        ts = EARLIEST_TIMESTAMP if self.reset == "smallest" else LATEST_TIMESTAMP
        offset = offset_before(self.conn, info.topic, info.partition, ts)
        log.info(
            "%s/%s: resetting offset to %s (%s)", info.topic, info.partition, offset, self.reset
        )
        info.reset_offsets(offset)

    def _out_of_range(self, info: PartitionTopicInfo) -> None:
        if self.reset == "none":
            self._error(
                info,
                OffsetOutOfRangeError(
                    f"{info.topic}/{info.partition} offset {info.fetched_offset} is out of range"
                ),
            )
            return
        info.fetched_offset = -1
        self._reset_offset(info)

    def _error(self, info: PartitionTopicInfo, exc: BaseException) -> None:
        metrics = self.conn.settings.metrics
        if metrics is not None:
            metrics.error(exc)
        with self._lock:
            self.partitions.pop((info.topic, info.partition), None)
        self._put(info, ErrorChunk(exc))

    def _put(self, info: PartitionTopicInfo, chunk: Chunk) -> None:
        q = info.queue
        while not self.stopped:
            try:
                q.put(chunk, timeout=0.1)
                return
            except queue.Full:
                continue


class ConsumerFetcherManager:
    """Finds leaders for the owned partitions and runs one fetcher thread per broker."""

    def __init__(
        self,
        cluster: Cluster,
        config: Mapping[str, Any],
        client_id: str = "",
        settings: ConnectionSettings | None = None,
    ) -> None:
        self.cluster, self.config, self.client_id = cluster, config, client_id
        self.settings = settings or cluster.settings
        self.num_fetchers = config["num.consumer.fetchers"]
        self.backoff = config["refresh.leader.backoff.ms"] / 1000.0
        self.skip_corrupt: bool = config.get("consumer.skip.corrupt", False)
        #: corrupt entries met (each once), skipped or raised by a stream
        self.corrupt_entries = 0
        self._cond = threading.Condition()
        self._no_leader: dict[tuple[str, int], PartitionTopicInfo] = {}
        self._fetchers: dict[tuple[int, int], ConsumerFetcherThread] = {}
        self._finder: threading.Thread | None = None
        self._lookup: Cluster | None = None
        self._running = False

    def start_connections(self, infos: Iterable[PartitionTopicInfo]) -> None:
        """Start fetching ``infos`` (the partitions this consumer owns now)."""
        with self._cond:
            self._no_leader = {(i.topic, i.partition): i for i in infos}
            self._running = True
            # the finder asks for metadata on connections of its own, which stop_connections
            # halts: a lookup waiting on a silent broker (up to socket.timeout.ms) ends at once
            # without breaking the requests others run on the shared cluster (heartbeats)
            self._lookup = Cluster(
                [f"{h}:{p}" for h, p in self.cluster.bootstrap], self.cluster.settings
            )
            self._lookup.brokers = dict(self.cluster.brokers)
            self._finder = threading.Thread(
                target=self._find_leaders,
                args=(self._lookup,),
                daemon=True,
                name=f"{self.client_id}-leader-finder",
            )
            self._finder.start()

    def stop_connections(self) -> None:
        """Stop the leader finder and every fetcher thread, and wait until they are gone."""
        with self._cond:
            self._running = False
            self._cond.notify_all()
            finder, self._finder = self._finder, None
            lookup, self._lookup = self._lookup, None
            fetchers, self._fetchers = list(self._fetchers.values()), {}
            self._no_leader = {}
        if lookup is not None:  # wakes a finder inside a metadata lookup
            lookup.halt("the consumer's fetchers were stopped")
        for f in fetchers:
            f.stop()
        if finder is not None and finder is not threading.current_thread():
            finder.join()
        for f in fetchers:  # stop() closed its connection, which wakes any wait on it
            f.join()

    def partitions_failed(self, infos: list[PartitionTopicInfo], reason: str) -> None:
        log.info(
            "partitions %s need a new leader (%s)", [(i.topic, i.partition) for i in infos], reason
        )
        with self._cond:
            if not self._running:
                return
            for i in infos:
                self._no_leader[(i.topic, i.partition)] = i
            self._cond.notify_all()

    def owned(self) -> list[tuple[str, int]]:
        with self._cond:
            out = list(self._no_leader)
            for f in self._fetchers.values():
                out.extend(f.partitions)
        return sorted(out)

    def _find_leaders(self, lookup: Cluster) -> None:
        try:
            self._find_leaders_with(lookup)
        finally:
            lookup.close()

    def _find_leaders_with(self, lookup: Cluster) -> None:
        while True:
            with self._cond:
                while self._running and not self._no_leader:
                    self._cond.wait(1.0)
                if not self._running:
                    return
                pending = dict(self._no_leader)
            try:
                lookup.refresh(sorted({t for t, _ in pending}), allow_auto_create=False)
            except KafkaError as exc:
                log.info("leader lookup failed: %s", exc)
                pending = {}
            with self._cond:
                if not self._running:
                    return
                for tp, info in pending.items():
                    topic = lookup.topics.get(tp[0])
                    part = topic.partitions.get(tp[1]) if topic else None
                    if part is None or part.leader not in lookup.brokers:
                        continue
                    broker = lookup.brokers[part.leader]
                    key = (broker.node_id, hash(tp) % self.num_fetchers)
                    f = self._fetchers.get(key)
                    if (
                        f is None
                        or f.dead
                        or f.broker.address != broker.address
                        or not f.add_partition(info)
                    ):
                        if f is not None:
                            f.stop()
                            with f._lock:
                                orphans = dict(f.partitions)
                            for tp2, info2 in orphans.items():
                                if tp2 != tp:
                                    self._no_leader.setdefault(tp2, info2)
                        f = ConsumerFetcherThread(self, broker, key[1])
                        self._fetchers[key] = f
                        f.add_partition(info)
                        f.start()
                    if self._no_leader.get(tp) is info:
                        del self._no_leader[tp]
                pause_until = time.monotonic() + self.backoff  # stop_connections wakes it
                while self._running and (left := pause_until - time.monotonic()) > 0:
                    self._cond.wait(left)
