"""ConsumerConnector: the high-level consumer's shared machinery.

Its subclasses are :class:`~kclient.consumer.zk_connector.ZookeeperConsumerConnector` (Kafka
0.8's ZooKeeper-coordinated group) and
:class:`~kclient.consumer.group_connector.GroupConsumerConnector` (the same API and assignment,
coordinated by the broker's group coordinator); ``kclient.consumer.create`` picks one.

This base class owns what both share: the streams and their queues, the registry of owned
partitions (:class:`PartitionTopicInfo` with consumed offsets), the fetcher manager, the offset
store and the auto-commit thread, and the rebalance safety steps -- stop the fetchers, clear the
queues and the chunks being iterated, and commit (when auto-commit is on) before ownership is
released.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from kclient.cluster import Cluster
from kclient.config import Config, load_config
from kclient.connection import ConnectionSettings
from kclient.errors import ConsumerRebalanceFailedError, IllegalStateError, InvalidConfigError
from kclient.metrics import ClientMetrics, start_reporter
from kclient.observability import tracing_for

from .assignment import thread_ids
from .fetcher import ConsumerFetcherManager
from .offsets import OffsetStore
from .rebalance import RebalanceExecutor
from .stream import (
    SHUTDOWN,
    Chunk,
    ChunkQueue,
    Decoder,
    ErrorChunk,
    KafkaStream,
    PartitionTopicInfo,
)
from .topic_filter import TopicFilter

__all__ = ["ConsumerConnector", "generate_consumer_id", "connection_settings", "RebalanceListener"]

log = logging.getLogger(__name__)


def generate_consumer_id(group: str, consumer_id: str | None = None) -> str:
    """``<group>_<hostname>-<time ms>-<8 hex chars of a uuid>``, or ``<group>_<consumer.id>``."""
    if consumer_id:
        return f"{group}_{consumer_id}"
    return f"{group}_{socket.gethostname()}-{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"


def connection_settings(conf: Mapping[str, Any]) -> ConnectionSettings:
    """Every broker connection's settings, from a loaded consumer config: the read timeout
    leaves room for a long-poll fetch (``fetch.wait.max.ms``)."""
    return ConnectionSettings.from_config(
        conf,
        client_id=conf["client.id"] or conf["group.id"],
        request_timeout_ms=max(conf["socket.timeout.ms"], conf["fetch.wait.max.ms"] + 5000),
    )


@runtime_checkable
class _ReleaseListener(Protocol):
    """Kafka 0.8.2's ``ConsumerRebalanceListener``."""

    def before_releasing_partitions(self, ownership: dict[str, set[int]]) -> None: ...


#: What ``set_consumer_rebalance_listener`` takes: a listener object or a plain callable.
RebalanceListener = _ReleaseListener | Callable[[dict[str, set[int]]], None]


class ConsumerGroupMetadata(NamedTuple):
    """Who commits a group's offsets (Java's ConsumerGroupMetadata): what
    ``Producer.send_offsets_to_transaction`` needs so that a fenced member's commit fails."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class ConsumerConnector:
    """Base of both connectors: streams, owned partitions, fetchers, offsets, auto commit."""

    #: runs every rebalance after the first (set by the subclass)
    executor: RebalanceExecutor

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        conf = (
            config
            if isinstance(config, Config) and not overrides
            else load_config("consumer", config, **overrides)
        )
        if not conf["group.id"]:
            raise InvalidConfigError("the consumer needs 'group.id'", "group.id")
        self.config = conf
        self.group = conf["group.id"]
        self.consumer_id = generate_consumer_id(self.group, conf["consumer.id"])
        self.client_id = conf["client.id"] or self.group
        self._metrics = ClientMetrics()
        self.settings = connection_settings(conf).replace(metrics=self._metrics)
        self.key_decoder = conf.create("key.decoder.class")
        self.value_decoder = conf.create("value.decoder.class")
        self.strategy = conf["partition.assignment.strategy"]
        self.exclude_internal = conf["exclude.internal.topics"]
        #: the last rebalance failure that was not followed by a success, else None
        self.rebalance_error: BaseException | None = None
        self.on_rebalance_failure: Callable[[BaseException], None] | None = None
        self.cluster: Cluster | None = None
        self.offset_store: OffsetStore | None = None
        self.fetcher: ConsumerFetcherManager | None = None
        self.registry: dict[tuple[str, int], PartitionTopicInfo] = {}
        self.streams: list[KafkaStream] = []
        self.topic_count: dict[str, int] | None = None  # static subscription
        self.topic_filter: TopicFilter | None = None  # wildcard subscription
        self.num_streams = 0
        self._queues: dict[tuple[str, str], ChunkQueue] = {}
        self._wildcard_queues: list[ChunkQueue] = []
        self._offsets_lock = threading.RLock()
        self._shutting_down = threading.Event()
        self._closed = False
        self._auto_commit: threading.Thread | None = None
        self._rebalance_listener: RebalanceListener | None = None
        self._reporter = start_reporter(
            conf["statistics.interval.ms"],
            conf["stats.cb"],
            self.metrics,
            conf["statistics.format"],
        )

    def __enter__(self) -> ConsumerConnector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(group={self.group!r}, consumer_id={self.consumer_id!r})"

    # -- public API ---------------------------------------------------------------------------
    def create_message_streams(
        self,
        topic_count_map: Mapping[str, int],
        key_decoder: Decoder | None = None,
        value_decoder: Decoder | None = None,
    ) -> dict[str, list[KafkaStream]]:
        """``{topic: [KafkaStream] * n}`` for ``{topic: n}``; once per connector."""
        self._check_first_streams()
        counts = {str(t): int(n) for t, n in topic_count_map.items()}
        if not counts or any(n < 1 for n in counts.values()):
            raise ValueError(f"topic_count_map needs topics with at least 1 stream: {counts}")
        out: dict[str, list[KafkaStream]] = {}
        for topic, n in counts.items():
            out[topic] = []
            for th in thread_ids(self.consumer_id, n):
                q: ChunkQueue = queue.Queue(self.config["queued.max.message.chunks"])
                self._queues[(topic, th)] = q
                out[topic].append(self._new_stream(q, key_decoder, value_decoder))
        self.topic_count = counts
        self._start()
        return out

    def create_message_streams_by_filter(
        self,
        topic_filter: TopicFilter,
        num_streams: int = 1,
        key_decoder: Decoder | None = None,
        value_decoder: Decoder | None = None,
    ) -> list[KafkaStream]:
        """``num_streams`` streams over every topic ``topic_filter`` allows, now and later."""
        self._check_first_streams()
        if not isinstance(topic_filter, TopicFilter):
            raise TypeError("topic_filter must be a Whitelist or a Blacklist")
        if num_streams < 1:
            raise ValueError("num_streams must be at least 1")
        streams = []
        for _ in range(num_streams):
            q: ChunkQueue = queue.Queue(self.config["queued.max.message.chunks"])
            self._wildcard_queues.append(q)
            streams.append(self._new_stream(q, key_decoder, value_decoder))
        self.topic_filter, self.num_streams = topic_filter, num_streams
        self._start()
        return streams

    def consumed_offsets(self) -> dict[tuple[str, int], int]:
        """The consumed offset (the next offset to read) of every owned partition that has
        one: what ``commit_offsets`` commits, for ``Producer.send_offsets_to_transaction``."""
        with self._offsets_lock:
            return {
                tp: info.consumed_offset
                for tp, info in self.registry.items()
                if info.consumed_offset >= 0
            }

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group id, generation and member id (ZooKeeper groups: the id only)."""
        return ConsumerGroupMetadata(self.group)

    def commit_offsets(self) -> None:
        """Commit the consumed offset of every owned partition (the next offset to read)."""
        with self._offsets_lock:
            if self.offset_store is None:
                return
            offsets = self.consumed_offsets()
            if offsets:
                self.offset_store.commit(offsets)

    def set_consumer_rebalance_listener(self, listener: RebalanceListener | None) -> None:
        """Hear ``before_releasing_partitions({topic: {partitions}})`` in every rebalance.

        Called after the fetchers stopped (and auto-commit committed) and before ownership is
        released, as Kafka 0.8.2's ``ConsumerRebalanceListener``: the place to commit offsets
        kept elsewhere.  ``listener`` is an object with that method or a plain callable; an
        exception fails that rebalance attempt (it is retried).
        """
        self._rebalance_listener = listener

    def _before_release(self) -> None:
        listener = self._rebalance_listener
        if listener is None or not self.registry:
            return
        ownership: dict[str, set[int]] = {}
        for t, p in self.registry:
            ownership.setdefault(t, set()).add(p)
        if isinstance(listener, _ReleaseListener):
            listener.before_releasing_partitions(ownership)
        else:
            listener(ownership)

    def owned_partitions(self) -> dict[tuple[str, int], str]:
        """``{(topic, partition): thread id}`` this consumer owns now."""
        return {tp: info.thread_id for tp, info in sorted(self.registry.items())}

    def metrics(self) -> dict[str, Any]:
        """Counts since creation (docs/metrics.md): per broker requests, errors, round-trip
        p50/p99 (ms), bytes out and in, connection state; per owned partition the consumed and
        fetched offsets, the high watermark and the lag (high watermark - consumed offset);
        rebalances and errors by code."""
        with self._offsets_lock:
            infos = list(self.registry.values())
        partitions = {}
        for info in sorted(infos, key=lambda i: (i.topic, i.partition)):
            consumed, hw = info.consumed_offset, info.high_watermark
            partitions[f"{info.topic}/{info.partition}"] = {
                "topic": info.topic,
                "partition": info.partition,
                "consumed_offset": consumed,
                "fetched_offset": info.fetched_offset,
                "high_watermark": hw,
                "lag": max(0, hw - consumed) if hw >= 0 and consumed >= 0 else None,
                "stream_queued_chunks": info.queue.qsize(),
            }
        return self._metrics.snapshot(
            type="consumer",
            client_id=self.client_id,
            group_id=self.group,
            consumer_id=self.consumer_id,
            partitions=partitions,
        )

    def shutdown(self) -> None:
        """Stop fetching, commit (auto-commit), release ownership, end every stream."""
        if self._closed:
            return
        self._closed = True
        self._shutting_down.set()
        if self._reporter is not None:
            self._reporter.stop()
        try:
            self._stop_coordination()
            if self.fetcher is not None:
                self.fetcher.stop_connections()
            self._clear_queues()
            if self.config["auto.commit.enable"]:
                try:
                    self.commit_offsets()
                except Exception as exc:  # noqa: BLE001 - shutting down: report, go on
                    log.warning("%s: final offset commit failed: %s", self.consumer_id, exc)
            self._release()
        finally:
            for s in self.streams:
                s.shutdown()
            self._close_resources()

    close = shutdown

    # -- for subclasses -----------------------------------------------------------------------
    def _start(self) -> None:
        raise NotImplementedError

    def _synced_rebalance(self) -> None:
        """One rebalance with its retries (the subclass's coordination)."""
        raise NotImplementedError

    def _first_rebalance(self) -> None:
        """Join the group once, synchronously (a failure here fails create_message_streams),
        then let the executor run later rebalances."""
        try:
            self._synced_rebalance()
        except ConsumerRebalanceFailedError:
            self._shutting_down.set()
            raise
        self.executor.start()

    def _stop_coordination(self) -> None:
        """Stop watchers / heartbeats (shutdown, step 1)."""

    def _release(self) -> None:
        """Give up ownership (delete owner znodes / leave the group)."""

    def _close_resources(self) -> None:
        if self.offset_store is not None:
            self.offset_store.close()
        if self.cluster is not None:
            self.cluster.close()

    def _check_first_streams(self) -> None:
        if self._closed:
            raise IllegalStateError("the connector was shut down")
        if self.topic_count is not None or self.topic_filter is not None:
            raise IllegalStateError(
                "each consumer connector can create message streams by "
                "filter or by topic count map only once"
            )

    def _new_stream(
        self, q: ChunkQueue, key_decoder: Decoder | None, value_decoder: Decoder | None
    ) -> KafkaStream:
        args = (
            q,
            self.config["consumer.timeout.ms"],
            key_decoder if key_decoder is not None else self.key_decoder,
            value_decoder if value_decoder is not None else self.value_decoder,
            self.client_id,
        )
        tracing = tracing_for(self.config, self.config["group.id"], self._metrics)
        if tracing is None:
            s = KafkaStream(*args)
        else:
            from kclient.observability.clients import traced_stream

            s = traced_stream(KafkaStream, tracing, *args)
        self.streams.append(s)
        return s

    @property
    def subscription(self) -> tuple[str, dict[str, int]]:
        """``(pattern, {topic or regex: streams})`` as registered in ZooKeeper."""
        if self.topic_filter is not None:
            return self.topic_filter.pattern, {self.topic_filter.regex: self.num_streams}
        return "static", dict(self.topic_count or {})

    def my_topic_threads(self, all_topics: Iterable[str]) -> dict[str, list[str]]:
        """``{topic: [my thread ids]}`` (a filter is resolved against ``all_topics``)."""
        if self.topic_filter is not None:
            return {
                t: thread_ids(self.consumer_id, self.num_streams)
                for t in self.topic_filter.filter(all_topics, self.exclude_internal)
            }
        return {t: thread_ids(self.consumer_id, n) for t, n in (self.topic_count or {}).items()}

    def queue_for(self, topic: str, thread_id: str) -> ChunkQueue:
        if self.topic_filter is not None:
            return self._wildcard_queues[int(thread_id.rpartition("-")[2])]
        return self._queues[(topic, thread_id)]

    def _all_queues(self) -> list[ChunkQueue]:
        return list(self._queues.values()) + list(self._wildcard_queues)

    def _new_registry(
        self, mine: Mapping[tuple[str, int], str], offsets: Mapping[tuple[str, int], int]
    ) -> dict[tuple[str, int], PartitionTopicInfo]:
        size = self.config["fetch.message.max.bytes"]
        return {
            (t, p): PartitionTopicInfo(
                t,
                p,
                self.queue_for(t, th),
                offsets.get((t, p), -1),
                offsets.get((t, p), -1),
                size,
                self.client_id,
                th,
            )
            for (t, p), th in sorted(mine.items())
        }

    def _start_fetchers(self) -> None:
        if self.fetcher is None:
            assert self.cluster is not None  # both subclasses set it up front
            self.fetcher = ConsumerFetcherManager(
                self.cluster, self.config, self.client_id, self.settings
            )
        if self.registry and not self._shutting_down.is_set():
            self.fetcher.start_connections(self.registry.values())

    def _close_fetchers(self, commit: bool = True) -> None:
        """Rebalance safety: stop fetchers, clear queues and streams, commit if auto-commit."""
        if self.fetcher is not None:
            self.fetcher.stop_connections()
        self._clear_queues()
        if commit and self.config["auto.commit.enable"] and self.registry:
            log.info("%s: committing offsets after clearing the fetcher queues", self.consumer_id)
            self.commit_offsets()

    def _clear_queues(self) -> None:
        """Drop fetched data; keep shutdown and the latest surfaced rebalance failure, so a
        retry that clears the queues soon after cannot hide the failure from the stream."""
        for q in self._all_queues():
            kept: list[Chunk] = []
            error: Chunk | None = None
            while True:
                try:
                    item = q.get_nowait()
                except queue.Empty:
                    break
                if item is SHUTDOWN:
                    kept.append(item)
                elif isinstance(item, ErrorChunk) and isinstance(
                    item.error, ConsumerRebalanceFailedError
                ):
                    error = item
            if error is not None:
                kept.insert(0, error)
            for item in kept:
                q.put_nowait(item)
        for s in self.streams:
            s.clear()

    def _surface(self, exc: BaseException) -> None:
        """A rebalance failed for good: every stream raises it, and the callback hears it."""
        if not isinstance(exc, ConsumerRebalanceFailedError):
            exc = ConsumerRebalanceFailedError(f"{self.consumer_id}: {exc}")
        self.rebalance_error = exc
        log.error("%s", exc)
        for q in self._all_queues():
            try:
                q.put_nowait(ErrorChunk(exc))
            except queue.Full:
                pass
        if self.on_rebalance_failure is not None:
            try:
                self.on_rebalance_failure(exc)
            except Exception:  # pragma: no cover - user callback
                log.exception("on_rebalance_failure callback failed")

    def _start_auto_commit(self) -> None:
        if not self.config["auto.commit.enable"] or self._auto_commit is not None:
            return
        interval = self.config["auto.commit.interval.ms"] / 1000.0

        def loop() -> None:
            while not self._shutting_down.wait(interval):
                try:
                    self.commit_offsets()
                except Exception as exc:  # noqa: BLE001 - a failed auto commit is retried next interval
                    log.warning("%s: auto commit failed: %s", self.consumer_id, exc)

        self._auto_commit = threading.Thread(
            target=loop, daemon=True, name=f"{self.client_id}-autocommit-{os.getpid()}"
        )
        self._auto_commit.start()
