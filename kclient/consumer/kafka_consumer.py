"""kclient.Consumer: a poll-loop consumer in the style of kafka-python's KafkaConsumer / Java's.

    c = Consumer("events", bootstrap_servers="127.0.0.1:9092", group_id="g1",
                 auto_offset_reset="earliest")
    for record in c:
        record.topic, record.partition, record.offset, record.key, record.value

It runs on the broker-coordinated connector's machinery: the group protocol of
:mod:`kclient.consumer.group_protocol` (so it shares a group with GroupConsumerConnector members
and Java consumers), the range / roundrobin assignors, :class:`KafkaOffsetStore`, and
:class:`kclient.io.fetcher.Fetcher` for Fetch requests and record decoding.  Fetches happen
inside ``poll()`` in the caller's thread, pipelined: an answer with more data waiting at the
broker puts the next Fetch on the wire at once (the fetcher's prefetch), so the broker works
while the application handles the records; the answer is queued as decoded columns
(:mod:`kclient.core.prefetch`) and records are built only for what a poll returns.
Heartbeats run in a background thread.  A rebalance (seen
by the heartbeat) is carried out by the next ``poll()``, which calls the listener there as Java
does: ``on_partitions_revoked`` before rejoining (``on_partitions_lost`` instead when the member
was fenced: unknown member id or illegal generation), ``on_partitions_assigned`` after.

With ``partition.assignment.strategy=cooperative-sticky`` (KIP-429) the rebalance is
incremental: the JoinGroup / SyncGroup run in a background thread while ``poll()`` keeps
fetching and returning every owned partition; the Subscription lists the owned partitions and
their generation.  When the new assignment arrives, ``poll()`` revokes only the partitions that
left (commit, ``on_partitions_revoked(those)``) and, if there were any, rejoins at once so their
new owner gets them in the follow-up rebalance; then ``on_partitions_assigned(added ones)``
(called after every rebalance, possibly with an empty set, as Java).

With ``group.instance.id`` (KIP-345) the member is static: close() sends no LeaveGroup, so a
consumer restarted with the same id within ``session.timeout.ms`` takes its place (and its
assignment) without a rebalance; a member fenced by another process using its instance id gets
:class:`FencedInstanceIdError` from ``poll()``.

The classic protocol's steps (rebalances, heartbeats, the topic check) are
:class:`~kclient.consumer.classic_group.ClassicGroupSteps`'s; under ``group.protocol=consumer``
(KIP-848) :class:`~kclient.consumer.consumer_group.ConsumerProtocolPoll`'s.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple, Protocol, overload

from kclient._args import (
    PartitionsArg,
    commit_offsets,
    partition_list,
    poll_timeout_ms,
    topic_partition,
    topic_partitions,
)
from kclient.cluster import Cluster
from kclient.config import consumer_config
from kclient.connection import BrokerConnection
from kclient.core.columns import MessageColumns
from kclient.core.consumer_records import build_records
from kclient.core.fetch import ISOLATION_LEVELS
from kclient.core.metadata import list_offsets_answers, list_offsets_body
from kclient.core.prefetch import (
    PartitionState,
    take,
    take_answer,
    take_columns,
    take_whole,
)
from kclient.core.subscription import Subscription
from kclient.encoders import decode_function
from kclient.errors import (
    CorruptRecordError,
    IllegalGenerationError,
    IllegalStateError,
    KafkaError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    UnknownMemberIdError,
    error_for_code,
)
from kclient.io.fetcher import Fetcher, PartitionFetch
from kclient.metrics import ClientMetrics, start_reporter
from kclient.observability import tracing_for
from kclient.protocol.apis import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, LIST_OFFSETS
from kclient.structs import ConsumerRecord, OffsetAndMetadata, TopicPartition

from .classic_group import ClassicGroupSteps
from .compat import ConsumerCompat, Unreachable
from .connector import ConsumerGroupMetadata, connection_settings, generate_consumer_id
from .consumer_group import ConsumerGroupMember, ConsumerProtocolPoll, member_from_config
from .group_protocol import (
    REJOIN,
    GroupMembership,
    is_cooperative,
    strategies_of,
)
from .offsets import Coordinator, KafkaOffsetStore

__all__ = ["Consumer", "ConsumerRecord", "ConsumerRebalanceListener", "OffsetAndTimestamp"]

log = logging.getLogger(__name__)

_LOST = (IllegalGenerationError.errno, UnknownMemberIdError.errno)


class OffsetAndTimestamp(NamedTuple):
    """What offsets_for_times finds: the first offset at or after a timestamp, and its time."""

    offset: int
    timestamp: int


class ConsumerRebalanceListener(Protocol):
    """Java's ConsumerRebalanceListener; each method takes a set of TopicPartition."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...


class Consumer(ConsumerCompat, ClassicGroupSteps, ConsumerProtocolPoll):
    """A modern consumer: subscribe or assign, poll, seek, pause, commit per partition."""

    def __init__(self, *topics: str | Mapping[str, Any], **config: Any) -> None:
        conf, topics = consumer_config(topics, config)
        self.config = conf
        self.group: str | None = conf["group.id"] or None
        self.consumer_id = generate_consumer_id(self.group or "kclient", conf["consumer.id"])
        self._metrics = ClientMetrics()
        self.settings = connection_settings(conf).replace(metrics=self._metrics)
        self.cluster = Cluster([f"{h}:{p}" for h, p in conf["metadata.broker.list"]], self.settings)
        self._key = decode_function(conf.create("key.decoder.class"))
        self._value = decode_function(conf.create("value.decoder.class"))
        self.strategy = conf["partition.assignment.strategy"]
        self.strategies = strategies_of(self.strategy)
        self.cooperative = is_cooperative(self.strategies)
        self.group_instance_id: str | None = conf["group.instance.id"] or None
        self.membership: GroupMembership | None = None
        self._kip848: ConsumerGroupMember | None = None
        self.offset_store: KafkaOffsetStore | None = None
        if self.group:
            session = conf["session.timeout.ms"]
            coord = Coordinator(
                self.cluster,
                self.group,
                conf["retry.backoff.ms"],
                conf["offsets.commit.max.retries"],
                self.settings.replace(
                    request_timeout_ms=max(self.settings.request_timeout_ms, 2 * session + 5000)
                ),
            )
            generation: Callable[[], tuple[int, str]]
            if conf["group.protocol"] == "consumer":
                self._kip848 = ConsumerGroupMember(
                    coord,
                    member_from_config(self.group, conf, self.group_instance_id),
                    self.consumer_id,
                    conf["retry.backoff.ms"] / 1000.0,
                )
                generation = self._kip848.member.generation
            else:
                self.membership = GroupMembership(
                    coord, self.group, session, self.group_instance_id
                )
                generation = self.membership.generation
            self.offset_store = KafkaOffsetStore(
                coord,
                self.group,
                generation,
                conf["offsets.commit.max.retries"],
                conf["offsets.channel.backoff.ms"],
            )
            self.offset_store.group_instance_id = self.group_instance_id
            if self._kip848 is not None:
                self.offset_store.fetching_member = generation
        self._sub = Subscription()
        self._listener: Any = None
        self._manual = False
        self._assignment: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        #: fetched records not handed out yet (their columns; records are built by poll)
        self._buffer: dict[TopicPartition, PartitionState] = {}
        self._fetchers: dict[int, Fetcher] = {}
        self._rejoin: str | None = None  # "revoke" / "lost": the next poll rejoins
        self._joined = threading.Event()
        self._joining: Future[bytes | None] | None = None  # a cooperative join under way
        self._group_pool: ThreadPoolExecutor | None = None
        self._fatal: KafkaError | None = None  # FENCED_INSTANCE_ID: poll() raises it
        self._closed = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._next_commit = time.monotonic() + conf["auto.commit.interval.ms"] / 1000.0
        #: what every poll reads of the (read-only) config, looked up once
        self._auto_commits = bool(conf["auto.commit.enable"])
        self._max_poll_records = conf["max.poll.records"]
        self._fetch_wait_ms = conf["fetch.wait.max.ms"]
        self._fetch_size = conf["fetch.message.max.bytes"]
        self._async: ThreadPoolExecutor | None = None
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._reporter = start_reporter(
            conf["statistics.interval.ms"],
            conf["stats.cb"],
            self.metrics,
            conf["statistics.format"],
        )
        self._down = Unreachable(
            self.consumer_id, self.cluster.bootstrap, conf["socket.timeout.ms"]
        )
        tracing = tracing_for(conf, self.group, self._metrics)
        if tracing is not None:
            from kclient.observability.clients import trace_consumer

            trace_consumer(self, tracing)
        if topics:
            self.subscribe([str(t) for t in topics])

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Consumer(group={self.group!r}, assignment={sorted(self._assignment)!r})"

    # -- subscription ---------------------------------------------------------------------------
    def subscribe(
        self, topics: Iterable[str] | None = None, pattern: str | None = None, listener: Any = None
    ) -> None:
        """Join the group for ``topics`` (or every topic matching the regex ``pattern``);
        ``listener`` gets on_partitions_revoked / _assigned / _lost calls from poll()."""
        if self.membership is None and self._kip848 is None:
            raise IllegalStateError("subscribe() needs group.id; use assign() without a group")
        if self._manual:
            raise IllegalStateError("subscribe() after assign(): unsubscribe() first")
        self._sub.subscribe(topics, pattern)
        self._listener = listener
        if self._kip848 is not None:  # the broker assigns, a regex is matched there too
            self._kip848.subscribe(None if pattern is not None else self._sub.topics, pattern)
            return
        self._rejoin = "revoke"
        if self._heartbeat is None:
            self._heartbeat = threading.Thread(
                target=self._heartbeat_loop, daemon=True, name=f"{self.consumer_id}-heartbeat"
            )
            self._heartbeat.start()

    def subscription(self) -> set[str]:
        """The topics subscribed to (a pattern's: those it matched at the last join)."""
        return self._sub.subscription()

    def assign(self, partitions: PartitionsArg) -> None:
        """Read exactly ``partitions`` (TopicPartitions or ``(topic, partition)`` tuples, one
        or a list), without group membership (offsets still commit to group.id when set)."""
        if self._sub.active:
            raise IllegalStateError("assign() after subscribe(): unsubscribe() first")
        tps = topic_partitions([partitions], "assign()")
        self._manual = True
        self._set_assignment(tps)

    def unsubscribe(self) -> None:
        """Drop the subscription or assignment (revoking through the listener, leaving the
        group)."""
        if self._sub.active:
            self._revoke("revoke")
            self._leave()
        self._sub.clear()
        self._manual = False
        self._set_assignment([])

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer reads now."""
        return set(self._assignment)

    def _set_assignment(self, partitions: list[TopicPartition]) -> None:
        self._assignment = sorted(set(partitions))
        keep = set(self._assignment)
        for d in (self._positions, self._buffer):
            for tp in [tp for tp in d if tp not in keep]:
                del d[tp]
        self._paused &= keep

    # -- the group ----------------------------------------------------------------------------
    def _call_listener(self, name: str, partitions: set[TopicPartition]) -> None:
        fn = getattr(self._listener, name, None)
        if fn is None and name == "on_partitions_lost":  # Java's default: revoked
            fn = getattr(self._listener, "on_partitions_revoked", None)
        if fn is not None:
            try:
                fn(partitions)
            except Exception:
                log.exception("%s: rebalance listener %s failed", self.consumer_id, name)

    def _assigned(self) -> None:
        """A rebalance (or a KIP-848 reconciliation) gave this member its assignment."""
        self._metrics.rebalanced()
        self._sub.assigned(time.monotonic())

    def _leave(self) -> None:
        self._joined.clear()
        if self._kip848 is not None:
            self._kip848.leave()
            return
        if self.membership is not None and self.group_instance_id is not None:
            self.membership.forget()  # static: the session keeps the place (KIP-345)
            return
        if self.membership is not None:
            try:
                self.membership.leave()
            except KafkaError as exc:
                log.info("%s: LeaveGroup failed: %s", self.consumer_id, exc)

    # -- positions ------------------------------------------------------------------------------
    def _check(self, tp: TopicPartition) -> None:
        if tp not in self._assignment:
            raise IllegalStateError(f"{tp} is not assigned to this consumer")

    def _resolve_positions(self) -> None:
        """Positions of partitions that have none: the committed offset, else the reset."""
        missing = [tp for tp in self._assignment if tp not in self._positions]
        if not missing:
            return
        committed: dict[tuple[str, int], int] = {}
        if self.offset_store is not None:
            committed = self.offset_store.fetch((tp.topic, tp.partition) for tp in missing)
        for tp in missing:
            off = committed.get((tp.topic, tp.partition), -1)
            self._positions[tp] = off if off >= 0 else self._reset_offset(tp)

    def _resolve_positions_quietly(self) -> None:
        """:meth:`_resolve_positions` for poll(): a retriable failure (a leader or the
        coordinator away) leaves the partitions without a position unfetched until a later
        poll resolves them; the others are fetched meanwhile."""
        try:
            self._resolve_positions()
        except KafkaError as exc:
            if not getattr(exc, "retriable", False):
                raise
            log.info(
                "%s: positions of %s not resolved yet: %s",
                self.consumer_id,
                sorted(tp for tp in self._assignment if tp not in self._positions),
                exc,
            )

    def _reset_offset(self, tp: TopicPartition) -> int:
        reset = self.config["auto.offset.reset"]
        if reset == "none":
            raise NoOffsetForPartitionError(
                f"{tp} has no committed offset and auto.offset.reset is none"
            )
        ts = EARLIEST_TIMESTAMP if reset == "smallest" else LATEST_TIMESTAMP
        return self._list_offsets({tp: ts})[tp][0]

    def _list_offsets(
        self, query: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int]]:
        """ListOffsets at each leader: ``{tp: (offset, timestamp)}`` (offset -1: none).
        Retriable errors (a leader that moved or is not known yet, as right after a topic's
        creation) refresh the metadata and retry, up to ``offsets.commit.max.retries``."""
        out: dict[TopicPartition, tuple[int, int]] = {}
        todo = dict(query)
        attempts = 1 + max(self.config["offsets.commit.max.retries"], 0)
        for attempt in range(attempts):
            retry = self._list_offsets_once(todo, out)
            if not retry:
                return out
            if attempt + 1 == attempts:
                raise next(iter(retry.values()))
            log.info(
                "%s: ListOffsets of %s: %s; refreshing metadata and retrying",
                self.consumer_id,
                sorted(retry),
                next(iter(retry.values())),
            )
            time.sleep(self.config["retry.backoff.ms"] / 1000.0)
            self.cluster.refresh(sorted({tp.topic for tp in retry}), allow_auto_create=False)
            todo = {tp: query[tp] for tp in retry}
        return out

    def _list_offsets_once(
        self, query: Mapping[TopicPartition, int], out: dict[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, KafkaError]:
        """One round of ListOffsets into ``out``; the retriable failures per partition."""
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in query:
            by_leader.setdefault(
                self.cluster.leader_for(tp.topic, tp.partition).node_id, []
            ).append(tp)
        retry: dict[TopicPartition, KafkaError] = {}
        for node, tps in by_leader.items():
            conn = self.cluster.connection(node)
            version = conn.version(LIST_OFFSETS)
            body = list_offsets_body(
                {tp: query[tp] for tp in tps}, ISOLATION_LEVELS[self.config["isolation.level"]]
            )
            resp = conn.request(LIST_OFFSETS, body, version)
            for tp, code, offset, timestamp in list_offsets_answers(resp, version):
                if code:
                    exc = error_for_code(code)(f"offsets of {tp.topic}-{tp.partition}")
                    if not getattr(exc, "retriable", False):
                        raise exc
                    retry[tp] = exc
                else:
                    out[tp] = (offset, timestamp)
        return retry

    def position(self, partition: TopicPartition | tuple[str, int]) -> int:
        """The offset of the next record poll() returns for ``partition``."""
        partition = topic_partition(partition, "position()")
        self._check(partition)
        self._resolve_positions()
        return self._positions[partition]

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        """Read ``partition`` (a TopicPartition or ``(topic, partition)``) from ``offset`` at
        the next poll()."""
        partition = topic_partition(partition, "seek()")
        self._check(partition)
        if offset < 0:
            raise ValueError(f"offset {offset} is negative")
        self._positions[partition] = offset
        self._buffer.pop(partition, None)

    def _seek_to(self, partitions: Iterable[Any], ts: int) -> None:
        tps = topic_partitions(partitions, "seek_to_beginning()/seek_to_end()") or list(
            self._assignment
        )
        for tp in tps:
            self._check(tp)
        for tp, (off, _) in self._list_offsets(dict.fromkeys(tps, ts)).items():
            self.seek(tp, off)

    def seek_to_beginning(self, *partitions: PartitionsArg) -> None:
        """Seek to the first offset of ``partitions`` (default: all assigned)."""
        self._seek_to(partitions, EARLIEST_TIMESTAMP)

    def seek_to_end(self, *partitions: PartitionsArg) -> None:
        """Seek past the last offset of ``partitions`` (default: all assigned)."""
        self._seek_to(partitions, LATEST_TIMESTAMP)

    def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The first offset of each partition."""
        return {
            tp: o
            for tp, (o, _) in self._list_offsets(
                dict.fromkeys(partitions, EARLIEST_TIMESTAMP)
            ).items()
        }

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition (the high watermark)."""
        return {
            tp: o
            for tp, (o, _) in self._list_offsets(
                dict.fromkeys(partitions, LATEST_TIMESTAMP)
            ).items()
        }

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset whose timestamp is at or after each given time (ms), or None."""
        found = self._list_offsets(timestamps)
        return {
            tp: (OffsetAndTimestamp(*found[tp]) if found[tp][0] >= 0 else None) for tp in timestamps
        }

    # -- pause / resume ---------------------------------------------------------------------------
    def pause(self, *partitions: PartitionsArg) -> None:
        """Stop returning and fetching records of ``partitions`` (TopicPartitions or
        ``(topic, partition)`` tuples, or lists of them) until resume()."""
        tps = topic_partitions(partitions, "pause()")
        for tp in tps:
            self._check(tp)
        self._paused.update(tps)

    def resume(self, *partitions: PartitionsArg) -> None:
        """Undo pause() for ``partitions`` (the forms pause() takes; as pause() and
        AIOConsumer.resume(), a partition not assigned is an IllegalStateError)."""
        tps = topic_partitions(partitions, "resume()")
        for tp in tps:
            self._check(tp)
        self._paused.difference_update(tps)

    def paused(self) -> set[TopicPartition]:
        """The paused partitions."""
        return set(self._paused)

    # -- commit ------------------------------------------------------------------------------------
    def _offsets_to_commit(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None
    ) -> dict[tuple[str, int], int]:
        if self.offset_store is None:
            raise IllegalStateError("committing offsets needs group.id")
        if offsets is None:
            return {(tp.topic, tp.partition): off for tp, off in self._positions.items()}
        return commit_offsets(offsets)

    def commit(
        self,
        offsets: Mapping[Any, int | OffsetAndMetadata] | None = None,
        asynchronous: bool = False,
        *,
        message: Any = None,
    ) -> Future[None] | None:
        """Commit ``offsets`` (the next offset to read per partition), by default the position
        of every assigned partition; a fenced member's commit raises and rejoins at next poll.

        confluent-kafka's forms: ``message=record`` commits past that record,
        ``asynchronous=True`` is commit_async() (returns its Future; the default False waits)."""
        if message is not None:
            if offsets is not None:
                raise TypeError("commit() takes offsets or message, not both")
            offsets = {(message.topic, message.partition): message.offset + 1}
        if asynchronous:
            return self.commit_async(offsets)
        todo = self._offsets_to_commit(offsets)
        assert self.offset_store is not None
        try:
            self.offset_store.commit(todo)
        except KafkaError as exc:
            if getattr(exc, "errno", None) in REJOIN and not self._manual and self._joining is None:
                self._joined.clear()
                self._rejoin = "lost" if getattr(exc, "errno", None) in _LOST else "revoke"
            raise
        return None

    def commit_async(
        self,
        offsets: Mapping[Any, int | OffsetAndMetadata] | None = None,
        callback: Callable[[dict[TopicPartition, int], BaseException | None], Any] | None = None,
    ) -> Future[None]:
        """commit() in a background thread; ``callback(offsets, exception or None)`` after."""
        todo = self._offsets_to_commit(offsets)
        if self._async is None:
            self._async = ThreadPoolExecutor(1, thread_name_prefix=f"{self.consumer_id}-commit")
        given = {TopicPartition(t, p): o for (t, p), o in todo.items()}

        def run() -> None:
            error: BaseException | None = None
            try:
                assert self.offset_store is not None
                self.offset_store.commit(todo)
            except BaseException as exc:  # noqa: BLE001 - handed to the commit callback
                error = exc
            if callback is not None:
                callback(given, error)
            if error is not None:
                raise error

        return self._async.submit(run)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """Group id, generation and member id: what Producer.send_offsets_to_transaction
        takes."""
        if self.group is None or self.offset_store is None:
            raise IllegalStateError("group_metadata() needs group.id")
        generation, member_id = self.offset_store.generation()
        return ConsumerGroupMetadata(self.group, generation, member_id)

    @overload
    def committed(
        self, partitions: TopicPartition | tuple[str, int], timeout: float | None = None
    ) -> int | None: ...

    @overload
    def committed(
        self, partitions: Iterable[Any], timeout: float | None = None
    ) -> dict[TopicPartition, int | None]: ...

    def committed(
        self, partitions: PartitionsArg, timeout: float | None = None
    ) -> int | None | dict[TopicPartition, int | None]:
        """The committed offset of a partition in the group (None: none); given a list of
        partitions, ``{TopicPartition: offset or None}``."""
        if self.offset_store is None:
            raise IllegalStateError("committed() needs group.id")
        tps, one = partition_list(partitions, "committed()")
        off = self.offset_store.fetch([(tp.topic, tp.partition) for tp in tps])
        found = {
            tp: (v if (v := off.get((tp.topic, tp.partition), -1)) >= 0 else None) for tp in tps
        }
        return found[tps[0]] if one else found

    def _try_commit(self, why: str) -> None:
        try:
            self.commit()
        except KafkaError as exc:
            log.info("%s: auto commit (%s) failed: %s", self.consumer_id, why, exc)

    def _auto_commit(self) -> None:
        if (
            not (self._auto_commits and self.offset_store is not None and self._positions)
            or time.monotonic() < self._next_commit
            or self._joining is not None
        ):
            return
        self._next_commit = time.monotonic() + self.config["auto.commit.interval.ms"] / 1000.0
        self._try_commit("interval")

    # -- poll -------------------------------------------------------------------------------------
    def poll(
        self,
        *args: int,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        timeout: float | None = None,
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records fetched within ``timeout_ms`` (kafka-python: ``poll(500)``,
        ``poll(timeout_ms=500)``) or ``timeout`` seconds (confluent-kafka: ``poll(timeout=0.5)``;
        negative or None: no limit): ``{TopicPartition: [ConsumerRecord]}``, at most
        ``max_records`` (default max.poll.records) in all.  A positional float is refused.

        Raises BrokersUnreachableError (a KafkaConnectionError naming the brokers tried) when
        no broker could be reached for request.timeout.ms or until this poll's deadline."""
        if self._closed.is_set():
            raise IllegalStateError("poll() on a closed consumer")
        if not (self._manual or self._sub.active):
            raise IllegalStateError("poll() needs subscribe() or assign() first")
        timeout_ms = poll_timeout_ms(args, timeout, timeout_ms)
        limit = max_records or self._max_poll_records
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms >= 0 else math.inf
        while True:
            if self._fatal is not None:
                raise self._fatal
            if self._kip848 is not None:
                if self._sub.active:
                    self._kip848_step()
            elif not self._manual or self._joining is not None:  # (assign(): no group step)
                step = self._classic_group_step(deadline)
                if step is False:  # a rebalance to do, and no time left
                    return {}
                if step is None:  # backed off: try the rebalance again
                    continue
            if self._auto_commits:
                self._auto_commit()
            positions = self._positions
            for tp in self._assignment:  # (inline: a caught-up poll has every position)
                if tp not in positions:
                    self._resolve_positions_quietly()
                    break
            out = self._drain(limit)
            if out:
                return out
            remaining = deadline - time.monotonic()
            if remaining <= 0 and timeout_ms >= 0:
                return {}
            if self._fetch(max(0, int(min(remaining * 1000, self._fetch_wait_ms)))):
                out = self._drain(limit)  # at once: the group's steps ran before this fetch
                if out:
                    return out

    def _drain(self, limit: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        k, v = self._key, self._value
        for tp in self._assignment:
            st = self._buffer.get(tp)
            if st is None or tp in self._paused or limit <= 0:
                continue
            if not st.chunks:
                if st.error is not None:  # a corrupt entry, after the records before it
                    del self._buffer[tp]
                    raise st.error
                continue
            whole = take_whole(st, limit)
            if whole is not None:  # one fetch's records, all of them
                got = build_records(tp, whole, 0, len(whole.offsets), k, v, empty_lists=True)
            else:
                got = []
                for cols, i, j in take(st, limit):
                    got += build_records(tp, cols, i, j, k, v, empty_lists=True)
            limit -= len(got)
            self._metrics.messages[tp] += len(got)
            out[tp] = got
            self._positions[tp] = st.position
        return out

    def _fetcher(self, node: int) -> Fetcher:
        f = self._fetchers.get(node)
        if f is None or not f.conn.connected:
            b = self.cluster.brokers[node]
            conn = BrokerConnection(b.host, b.port, self.settings, node_id=node)
            conn.connect()
            f = self._fetchers[node] = Fetcher(
                conn,
                min_bytes=self.config["fetch.min.bytes"],
                prefetch=True,
                session=True,
                max_bytes=self.config["fetch.max.bytes"],
                isolation_level=ISOLATION_LEVELS[self.config["isolation.level"]],
            )
        return f

    def _fetch(self, wait_ms: int) -> bool:
        """One Fetch per leader of the fetchable partitions; records go to the buffer. True
        when an answer was taken (something may be there to drain)."""
        by_leader: dict[int, list[PartitionFetch]] = {}
        asked: dict[int, list[TopicPartition]] = {}  # the same partitions, as the buffer's keys
        leaderless: set[str] = set()
        for tp in self._assignment:
            st = self._buffer.get(tp)
            if (
                tp in self._paused
                or (st is not None and (st.chunks or st.error))
                or tp not in self._positions
            ):
                continue
            node = self.cluster.leader(tp.topic, tp.partition)
            if node is None:  # its leader is down or being elected: the others go on
                leaderless.add(tp.topic)
                continue
            by_leader.setdefault(node, []).append(
                PartitionFetch(tp.topic, tp.partition, self._positions[tp], self._fetch_size)
            )
            asked.setdefault(node, []).append(tp)
        if leaderless:
            self._refresh(leaderless, "no leader known")
        if not by_leader:
            time.sleep(wait_ms / 1000.0)
            return False
        started = []  # every leader's request on the wire before any wait
        took = False
        for node, reqs in by_leader.items():
            try:
                fetcher = self._fetcher(node)
                fetcher.max_wait_ms = wait_ms if len(by_leader) == 1 else 0
                started.append((node, reqs, fetcher, fetcher.begin(reqs)))
            except KafkaError as exc:
                self._fetch_failed(node, reqs, exc)
        for node, reqs, fetcher, handle in started:
            try:
                sets = (
                    fetcher.complete_plain(handle) if len(reqs) == 1 else fetcher.complete(handle)
                )
            except KafkaError as exc:
                self._fetch_failed(node, reqs, exc)
                continue
            if type(sets) is tuple:  # the usual answer, as columns (kclient.core.fetch_plain)
                self._take_plain(asked[node][0], reqs[0].offset, *sets)
                took = True
                continue
            for tp, req, ms in zip(asked[node], reqs, sets):
                self._take(tp, req.offset, ms)
                took = True
        return took

    def _fetch_failed(self, node: int, reqs: list[PartitionFetch], exc: KafkaError) -> None:
        log.info("%s: fetch from broker %d failed: %s", self.consumer_id, node, exc)
        self._metrics.error(exc)
        self._fetchers.pop(node, None)
        self._refresh({r.topic for r in reqs}, f"fetch from broker {node} failed")

    def _refresh(self, topics: set[str], why: str) -> None:
        """Metadata of ``topics`` after a fetch found no leader or failed. A retriable failure
        (every broker down for now) is logged and the next poll tries again: as Java's poll,
        poll() does not raise for a partition whose leader is away."""
        try:
            self.cluster.refresh(sorted(topics), allow_auto_create=False)
        except KafkaError as exc:
            if not getattr(exc, "retriable", False):
                raise
            log.info("%s: metadata of %s (%s): %s", self.consumer_id, sorted(topics), why, exc)

    def _take(self, tp: TopicPartition, offset: int, ms: Any) -> None:
        if ms.error is not None and isinstance(ms.error, OffsetOutOfRangeError):
            if self.config["auto.offset.reset"] == "none":
                raise ms.error
            self._positions[tp] = self._reset_offset(tp)
            return
        if (
            ms.error is not None and not ms.entries and not isinstance(ms.error, CorruptRecordError)
        ):  # that one poll raises
            self._metrics.error(ms.error)
            log.info("%s: fetching %s: %s", self.consumer_id, tp, ms.error)
            self._refresh({tp.topic}, str(ms.error))
            return
        st = self._answered(tp, offset, ms.high_watermark)
        if st is None:
            return
        take_answer(st, offset, st.epoch, ms)
        if not st.chunks and st.fetch_offset > offset:
            self._positions[tp] = st.fetch_offset  # only markers or aborted records: past them

    def _take_plain(self, tp: TopicPartition, offset: int, cols: MessageColumns, size: int) -> None:
        """:meth:`_take` of an answer the fetcher gave as columns (no error, records there)."""
        st = self._answered(tp, offset, cols.high_watermark)
        if st is not None:  # just reset to offset: take_answer's checks hold, its step skipped
            if cols.high_watermark >= 0:
                st.high_watermark = cols.high_watermark
            take_columns(st, offset, cols, size)

    def _answered(self, tp: TopicPartition, offset: int, hw: int) -> PartitionState | None:
        """The high watermark noted and the partition's state reset to ``offset`` for an answer
        to a fetch from there; None when a seek meanwhile moved the position."""
        if hw >= 0:
            self._high_watermarks[tp] = hw
        if self._positions.get(tp) != offset:  # seeked while fetching
            return None
        st = self._buffer.get(tp)  # fetched only when nothing is queued: reset, not replaced
        if st is None:
            st = self._buffer[tp] = PartitionState(tp)
        st.reset_to(offset)
        return st

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records one by one, forever (until close()); consumer.timeout.ms >= 0 ends the
        iteration after that long without a record."""
        idle = self.config["consumer.timeout.ms"]
        while not self._closed.is_set():
            batch = self.poll(idle if idle >= 0 else 1000)
            if not batch and idle >= 0:
                return
            for records in batch.values():
                yield from records

    def metrics(self) -> dict[str, Any]:
        """Counts since creation (docs/metrics.md): per broker requests, errors, round trips,
        bytes and connection state; per assigned partition the position, the high watermark
        of the last fetch, the lag, records buffered and whether paused; rebalances."""
        partitions = {}
        for tp in self._assignment:
            pos, hw = self._positions.get(tp, -1), self._high_watermarks.get(tp, -1)
            partitions[f"{tp.topic}/{tp.partition}"] = {
                "topic": tp.topic,
                "partition": tp.partition,
                "position": pos,
                "high_watermark": hw,
                "lag": max(0, hw - pos) if hw >= 0 and pos >= 0 else None,
                "buffered": self._buffer[tp].buffered if tp in self._buffer else 0,
                "paused": tp in self._paused,
            }
        return self._metrics.snapshot(
            type="consumer",
            client_id=self.config["client.id"],
            group_id=self.group,
            consumer_id=self.consumer_id,
            partitions=self._metrics.with_messages(partitions, "consumed"),
        )

    # -- close --------------------------------------------------------------------------------------
    def close(self, autocommit: bool = True) -> None:
        """Commit (with auto-commit on), leave the group, close connections."""
        if self._closed.is_set():
            return
        if (
            autocommit
            and self.config["auto.commit.enable"]
            and self.offset_store is not None
            and self._positions
            and (self._joined.is_set() or self._manual)
        ):
            self._try_commit("close")
        self._closed.set()
        if self.membership is not None:
            self.membership.coordinator.transport.wake()  # the heartbeat loop's sleep
        if self._reporter is not None:
            self._reporter.stop()
        if self._joining is not None and self.membership is not None:
            self.membership.coordinator.interrupt("consumer closed during a rebalance")
        if self._group_pool is not None:
            self._group_pool.shutdown(wait=True)
        if self._sub.active:
            if self._kip848 is not None and self._assignment:
                # Java: on_partitions_revoked before leaving (committed above when asked)
                self._call_listener("on_partitions_revoked", set(self._assignment))
                self._set_assignment([])
            self._leave()
        if self._kip848 is not None:
            self._kip848.stop()
            self._kip848.coordinator.close()
        if self._heartbeat is not None:
            self._heartbeat.join(10)
        if self._async is not None:
            self._async.shutdown(wait=True)

        for f in self._fetchers.values():
            f.close()  # ends its fetch session
        self._fetchers.clear()
        if self.membership is not None:
            self.membership.coordinator.close()
        self.cluster.close()
