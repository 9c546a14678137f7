"""SimpleConsumer: the low-level, stateless consumer that talks to one broker.

Every request carries its offset; nothing is remembered between calls (the only hidden state is
an optional speculative prefetch, see :mod:`kclient.io.fetcher`).  The calls map one to one
onto the wire: ``fetch`` / ``multifetch`` are Fetch requests, ``get_offsets_before`` is
ListOffsets, ``commit_offsets`` / ``fetch_offsets`` are OffsetCommit / OffsetFetch sent to the
group's coordinator (found with FindCoordinator, as the Scala simple consumer does).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from kclient.cluster import BrokerInfo
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.core.columns import MessageColumns, message_columns
from kclient.core.coordinator import CoordinatorAddress, find_coordinators
from kclient.core.fetch import ISOLATION_LEVELS
from kclient.core.message_set import ByteBufferMessageSet
from kclient.core.messages import MessageAndOffset
from kclient.core.offsets import fetched_group, offset_commit_body, offset_fetch_body
from kclient.errors import (
    BrokerResponseError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    LeaderNotAvailableError,
    NotCoordinatorError,
    NotLeaderForPartitionError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kclient.io.driver import ConnectionTransport, run
from kclient.io.fetcher import DEFAULT_MAX_BUFFER_SIZE, Fetcher, PartitionFetch
from kclient.metrics import ClientMetrics, start_reporter
from kclient.protocol.apis import (
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
)
from kclient.protocol.compression import DEFAULT_MAX_DECOMPRESSED
from kclient.protocol.versions import DEFAULT_BROKER_VERSION_FALLBACK
from kclient.security import SecuritySettings

if TYPE_CHECKING:
    from kclient.protocol.messages import (
        ListOffsetsResponse,
        MetadataResponse,
    )

__all__ = [
    "SimpleConsumer",
    "FetchRequest",
    "OffsetRequest",
    "MultiFetchResponse",
    "OffsetAndMetadata",
]

_R = TypeVar("_R")

_LEADER_ERRORS = (NotLeaderForPartitionError, UnknownTopicOrPartitionError)
_COORDINATOR_ERRORS = (
    NotCoordinatorError,
    CoordinatorNotAvailableError,
    CoordinatorLoadInProgressError,
)


class FetchRequest(NamedTuple):
    """Fetch ``topic``/``partition`` from ``offset``, at most ``max_size`` bytes of messages."""

    topic: str
    partition: int
    offset: int
    max_size: int = 1 << 20


class OffsetRequest:
    """The special times of ``get_offsets_before``."""

    LATEST_TIME = -1
    EARLIEST_TIME = -2


class OffsetAndMetadata(NamedTuple):
    """A committed position: ``offset`` (-1 when the group has none) and its metadata string."""

    offset: int
    metadata: str = ""


class MultiFetchResponse(list[ByteBufferMessageSet]):
    """The message sets of a multifetch, in request order (a list), with lookups by partition."""

    def message_set(self, topic: str, partition: int) -> ByteBufferMessageSet:
        for ms in self:
            if ms.topic == topic and ms.partition == partition:
                return ms
        raise KeyError(f"{topic}-{partition} was not in this fetch")

    def high_watermark(self, topic: str, partition: int) -> int:
        return self.message_set(topic, partition).high_watermark

    def error(self, topic: str, partition: int) -> BaseException | None:
        return self.message_set(topic, partition).error

    @property
    def has_error(self) -> bool:
        return any(ms.error is not None for ms in self)


#: isolation_level argument -> the Fetch / ListOffsets isolation_level field


class SimpleConsumer:
    """A consumer of one broker: ``fetch``, ``multifetch``, ``get_offsets_before``, offsets.

    ``so_timeout`` (ms) bounds every socket wait; ``buffer_size`` is the socket receive buffer
    (``SO_RCVBUF``; None or 0 leaves the kernel's auto-tuning, which is faster for large
    fetches); ``client_id`` goes into every request.  Keywords: ``max_wait_ms`` / ``min_bytes``
    (Fetch long poll: the broker answers once it has ``min_bytes`` or after ``max_wait_ms``;
    default 100 ms / 1 byte), ``max_buffer_size`` (the bound an oversized
    message may grow a fetch to), ``prefetch`` (pipeline the next fetch), ``fetch_version``
    (cap the Fetch version), ``validate_crc``, ``api_version_request`` /
    ``broker_version_fallback`` (for brokers older than 0.10, as librdkafka names them),
    ``security`` (Kafka's ``security.protocol``, ``ssl.*`` and ``sasl.*`` keys, as a dict),
    ``isolation_level`` (``"read_uncommitted"``, the default, or ``"read_committed"``: fetches
    stop at the last stable offset and leave out aborted transactions; the latest offset is
    the last stable offset).

    Not for concurrent use from several threads (calls are serialised by a lock).
    """

    def __init__(
        self,
        host: str,
        port: int,
        so_timeout: int = 30000,
        buffer_size: int | None = 65536,
        client_id: str = "",
        *,
        max_wait_ms: int = 100,
        min_bytes: int = 1,
        max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
        prefetch: bool = True,
        fetch_version: int | None = None,
        validate_crc: bool = True,
        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
        api_version_request: bool = True,
        broker_version_fallback: str = DEFAULT_BROKER_VERSION_FALLBACK,
        connect_timeout_ms: int = 10000,
        security: Mapping[str, Any] | None = None,
        isolation_level: str = "read_uncommitted",
        stats_cb: Callable[[str], Any] | None = None,
        statistics_interval_ms: int = 0,
    ) -> None:
        self.host, self.port = host, int(port)
        if isolation_level not in ISOLATION_LEVELS:
            raise ValueError(
                f"isolation_level must be read_uncommitted or read_committed, "
                f"not {isolation_level!r}"
            )
        self.isolation_level = ISOLATION_LEVELS[isolation_level]
        self.so_timeout, self.buffer_size, self.client_id = so_timeout, buffer_size, client_id
        self.settings = ConnectionSettings(
            client_id=client_id or "kclient",
            request_timeout_ms=so_timeout,
            connect_timeout_ms=connect_timeout_ms,
            api_version_request=api_version_request,
            broker_version_fallback=broker_version_fallback,
            receive_buffer_bytes=buffer_size or None,
            security=SecuritySettings.from_keys(security),
            metrics=ClientMetrics(),
        )
        self._metrics: ClientMetrics = self.settings.metrics
        #: (topic, partition) -> (requested offset, high watermark) of its last fetch
        self._positions: dict[tuple[str, int], tuple[int, int]] = {}
        self._conn = BrokerConnection(self.host, self.port, self.settings)
        self._fetcher = Fetcher(
            self._conn,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_buffer_size=max_buffer_size,
            version=fetch_version,
            validate_crc=validate_crc,
            max_decompressed=max_decompressed,
            prefetch=prefetch,
            isolation_level=self.isolation_level,
        )
        self._coordinators: dict[str, BrokerConnection] = {}
        self._lock = threading.RLock()
        self._closed = False
        self._reporter = start_reporter(statistics_interval_ms, stats_cb, self.metrics)

    def __repr__(self) -> str:
        return f"SimpleConsumer({self.host}:{self.port}, client_id={self.client_id!r})"

    def __enter__(self) -> SimpleConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def fetcher(self) -> Fetcher:
        """The :class:`Fetcher` under ``fetch`` / ``multifetch`` (prefetch counters, limits)."""
        return self._fetcher

    @property
    def connection(self) -> BrokerConnection:
        """The connection to the broker (connected on first use)."""
        return self._connected()

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """Close the broker connection and any coordinator connections.

        Does not wait for a call in progress on another thread: its socket is closed first,
        so that call fails at once (KafkaConnectionError) instead of at its deadline."""
        self._closed = True
        if self._reporter is not None:
            self._reporter.stop()
        self._conn.close("the SimpleConsumer is closed")
        for conn in list(self._coordinators.values()):
            conn.close("the SimpleConsumer is closed")
        with self._lock:
            self._closed = True
            self._fetcher.reset()
            self._conn.close()
            for conn in self._coordinators.values():
                conn.close()
            self._coordinators.clear()

    def _connected(self) -> BrokerConnection:
        if self._closed:
            raise KafkaConnectionError(self.host, self.port, "the SimpleConsumer is closed")
        if not self._conn.connected:
            self._fetcher.reset()
            self._conn.connect()
        return self._conn

    def _call(self, fn: Callable[[BrokerConnection], _R]) -> _R:
        """Run ``fn(conn)``; on a broken connection reconnect once and retry (as 0.8 did)."""
        with self._lock:
            try:
                return fn(self._connected())
            except KafkaConnectionError:
                if self._closed:
                    raise
                self._fetcher.reset()
                self._conn.close()
                return fn(self._connected())

    # -- fetch -------------------------------------------------------------------------------
    def fetch(self, request: FetchRequest) -> ByteBufferMessageSet:
        """Fetch one partition: its message set, or raise the partition's error.

        Raises ``OffsetOutOfRangeError`` for an offset outside the log,
        ``NotLeaderForPartitionError`` naming the leader when another broker leads the
        partition, ``MessageSizeTooLargeError`` when the message at the offset exceeds
        ``max_buffer_size``, and ``CorruptRecordError`` (with ``offset``) for a corrupt entry at
        the start (a corrupt entry after good ones is raised by iteration, after them).
        """
        ms = self.multifetch([request])[0]
        if ms.error is not None and not ms.entries:
            raise ms.error
        return ms

    def fetch_columns(self, request: FetchRequest, end_offset: int | None = None) -> MessageColumns:
        """Fetch one partition and decode it into columns (no object per message).

        The messages from ``request.offset`` below ``end_offset`` (default: all that arrived) as
        :class:`~kclient.core.columns.MessageColumns`: lists of offsets, timestamps,
        timestamp types, keys, values and headers, plus ``next_offset`` and the high watermark.
        Raises like :meth:`fetch`.
        """
        return message_columns(self.multifetch([request])[0], end_offset)

    def multifetch(self, requests: Sequence[FetchRequest]) -> MultiFetchResponse:
        """Fetch several partitions in one round trip; message sets in request order.

        Errors stay per request (``message_set.error``; iterating it raises), so one bad
        partition does not hide the others' data.
        """
        wanted = [
            PartitionFetch(r[0], r[1], r[2], r[3] if len(r) > 3 else 1 << 20) for r in requests
        ]
        results = self._call(lambda conn: self._fetcher.fetch(wanted))
        for w, ms in zip(wanted, results):
            if ms.error is not None:
                self._metrics.error(ms.error)
            elif ms.high_watermark >= 0:
                self._positions[(w[0], w[1])] = (w[2], ms.high_watermark)
        leader_errors = [ms for ms in results if isinstance(ms.error, _LEADER_ERRORS)]
        if leader_errors:
            self._name_leaders(leader_errors)
        return MultiFetchResponse(results)

    def metrics(self) -> dict[str, Any]:
        """Counts since creation (docs/metrics.md): per broker requests, errors, round-trip
        p50/p99 (ms), bytes out and in, connection state; per partition fetched the offset of
        the last fetch, the high watermark and the lag between them; errors by code."""
        partitions = {
            f"{t}/{p}": {
                "topic": t,
                "partition": p,
                "fetch_offset": off,
                "high_watermark": hw,
                "lag": max(0, hw - off),
            }
            for (t, p), (off, hw) in sorted(self._positions.items())
        }
        return self._metrics.snapshot(
            type="simple_consumer", client_id=self.client_id, partitions=partitions
        )

    def iter_messages(
        self,
        topic: str,
        partition: int,
        offset: int = 0,
        max_size: int = 1 << 20,
        end_offset: int | None = None,
    ) -> Iterator[MessageAndOffset]:
        """Every message from ``offset`` up to ``end_offset`` (default: the high watermark the
        first fetch reports; read_committed: its last stable offset), fetching as it goes."""
        while True:
            ms = self.fetch(FetchRequest(topic, partition, offset, max_size))
            if end_offset is None:
                end_offset = self._fetcher.end_of(ms)
            for mo in ms:
                if mo[0] >= end_offset:
                    return
                yield mo
            if ms.next_offset >= end_offset or ms.next_offset <= offset:
                return
            offset = ms.next_offset

    def _name_leaders(self, sets: list[ByteBufferMessageSet]) -> None:
        """Replace not-the-leader errors with ones that say which broker leads instead."""
        try:
            brokers, leaders = self._leaders({ms.topic for ms in sets if ms.topic is not None})
        except KafkaError:
            return
        here = f"{self.host}:{self.port}"
        for ms in sets:
            topic, partition = ms.topic, ms.partition
            if topic is None or partition is None:
                continue  # not fetched by partition: nothing to name
            tp = f"{topic}-{partition}"
            err: BrokerResponseError
            if (topic, partition) not in leaders:
                err = UnknownTopicOrPartitionError(
                    f"{tp}: no such topic or partition (asked {here})"
                )
            elif leaders[(topic, partition)] < 0:
                err = LeaderNotAvailableError(f"{tp} has no leader right now (asked {here})")
            else:
                leader = leaders[(topic, partition)]
                info = brokers.get(leader)
                if info is None or (info.host, info.port) == (self.host, self.port):
                    continue  # leadership is moving to this broker, or unknown: keep the error
                err = NotLeaderForPartitionError(
                    f"{tp} is led by broker {leader} at {info.host}:{info.port}, not by {here}"
                )
                err.leader = info  # type: ignore[attr-defined]  # the 0.8 API's extra attribute
            err.topic, err.partition, err.offset = topic, partition, ms.fetch_offset
            ms.error = err

    def _leaders(
        self, topics: Iterable[str]
    ) -> tuple[dict[int, BrokerInfo], dict[tuple[str, int], int]]:
        """This broker's view: brokers by id, and the leader id (-1: none) of each partition."""

        def ask(conn: BrokerConnection) -> MetadataResponse:
            self._fetcher.discard_prefetch()
            return conn.request(
                METADATA,
                {
                    "topics": [{"name": t} for t in sorted(topics)],
                    "allow_auto_topic_creation": False,
                },
            )

        resp = self._call(ask)
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port) for b in resp.brokers}
        leaders: dict[tuple[str, int], int] = {}
        for t in resp.topics:
            if t.error_code or t.name is None:  # no name: only a lookup by topic id (v12)
                continue
            for p in t.partitions:
                leaders[(t.name, p.partition_index)] = p.leader_id
        return brokers, leaders

    # -- offsets -----------------------------------------------------------------------------
    def get_offsets_before(
        self, topic: str, partition: int, time: int, max_num_offsets: int = 1
    ) -> list[int]:
        """Valid offsets before ``time`` (ms), at most ``max_num_offsets``, in descending order.

        ``OffsetRequest.LATEST_TIME`` (-1) gives the log end offset, ``EARLIEST_TIME`` (-2) the
        log start.  Asking for several offsets needs ListOffsets v0 (brokers before Kafka 4),
        which answers with segment start offsets, as the 0.8 API did.  Asking for one uses the
        broker's newest ListOffsets: for an ordinary ``time`` that is the first offset whose
        timestamp is at or after it (every message before it is older), or the log end.
        """
        if max_num_offsets < 1:
            return []
        lo, hi = self._connected().versions.get(LIST_OFFSETS.key, (0, 0))
        if lo == 0 and (max_num_offsets > 1 or hi == 0):
            try:
                return self._list_offsets(topic, partition, time, max_num_offsets, 0)
            except KafkaConnectionError as exc:
                if hi == 0 or "bad response" not in str(exc):
                    raise
                # a broker that announces v0 but cannot answer it (tansu): one offset, newest API
        return self._list_offsets(topic, partition, time, max_num_offsets, None)

    def _list_offsets(
        self, topic: str, partition: int, time: int, max_num_offsets: int, version: int | None
    ) -> list[int]:
        def ask(conn: BrokerConnection) -> tuple[int, ListOffsetsResponse]:
            self._fetcher.discard_prefetch()
            v = conn.version(LIST_OFFSETS) if version is None else version
            body = {
                "replica_id": -1,
                "isolation_level": self.isolation_level,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": partition,
                                "timestamp": time,
                                "max_num_offsets": max_num_offsets,
                            }
                        ],
                    }
                ],
            }
            return v, conn.request(LIST_OFFSETS, body, v)

        version, resp = self._call(ask)
        for t in resp.topics:
            for p in t.partitions:
                if t.name != topic or p.partition_index != partition:
                    continue
                if p.error_code:
                    err: BaseException = error_for_code(p.error_code)(
                        f"{topic}-{partition}: offsets before {time}"
                    )
                    if isinstance(err, _LEADER_ERRORS):
                        probe = ByteBufferMessageSet(
                            b"", -1, topic=topic, partition=partition, error=err
                        )
                        self._name_leaders([probe])
                        err = probe.error or err
                    raise err
                if version == 0:
                    return sorted(p.old_style_offsets, reverse=True)[:max_num_offsets]
                return [p.offset] if p.offset >= 0 else []
        raise UnknownTopicOrPartitionError(f"{topic}-{partition}: not in the ListOffsets answer")

    def find_coordinator(self, group: str) -> BrokerInfo:
        """The broker coordinating ``group`` (its offset manager)."""

        def ask(conn: BrokerConnection) -> CoordinatorAddress | KafkaError:
            self._fetcher.discard_prefetch()
            return run(find_coordinators([group]), ConnectionTransport(conn))[group]

        found = self._call(ask)
        if isinstance(found, KafkaError):
            raise found
        return BrokerInfo(found.node_id, found.host, found.port)

    def _coordinator(self, group: str, refresh: bool = False) -> BrokerConnection:
        with self._lock:
            conn = self._coordinators.get(group)
            if conn is not None and not refresh and conn.connected:
                return conn
            if conn is not None:
                conn.close()
                del self._coordinators[group]
            info = self.find_coordinator(group)
            if (info.host, info.port) == (self.host, self.port):
                self._fetcher.discard_prefetch()
                return self._connected()
            conn = BrokerConnection(info.host, info.port, self.settings, node_id=info.node_id)
            conn.connect()
            self._coordinators[group] = conn
            return conn

    def _with_coordinator(
        self,
        group: str,
        fn: Callable[[BrokerConnection], _R],
        retries: int = 5,
        backoff: float = 0.1,
    ) -> _R:
        """Run ``fn(conn)`` against the group's coordinator, rediscovering it when it moved."""
        refresh = False
        for attempt in range(retries + 1):
            try:
                with self._lock:
                    return fn(self._coordinator(group, refresh))
            except _COORDINATOR_ERRORS + (KafkaConnectionError,):
                if attempt == retries or self._closed:
                    raise
                refresh = True
                time.sleep(backoff * (attempt + 1))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def commit_offsets(
        self,
        group: str,
        offsets: Mapping[tuple[str, int], int | tuple[int, str]],
        *,
        generation_id: int = -1,
        member_id: str = "",
        retention_ms: int = -1,
    ) -> None:
        """Commit ``{(topic, partition): offset or (offset, metadata)}`` for ``group``.

        Goes to the group's coordinator (found and followed when it moves).  Raises the first
        partition's error; the exception's ``errors`` maps every failed partition to its error.
        """
        body = offset_commit_body(
            group,
            {tp: v if isinstance(v, int) else (v[0], v[1]) for tp, v in offsets.items()},
            generation_id,
            member_id,
            None,
            retention_ms,
        )

        def commit(conn: BrokerConnection) -> dict[tuple[str, int], BrokerResponseError]:
            resp = conn.request(OFFSET_COMMIT, body)
            errors: dict[tuple[str, int], BrokerResponseError] = {}
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code:
                        errors[(t.name, p.partition_index)] = error_for_code(p.error_code)(
                            f"committing {t.name}-{p.partition_index} for group {group!r}"
                        )
            first = next(iter(errors.values()), None)
            if isinstance(first, _COORDINATOR_ERRORS):
                raise first
            return errors

        errors = self._with_coordinator(group, commit)
        if errors:
            first = next(iter(errors.values()))
            first.errors = errors  # type: ignore[attr-defined]  # every partition's, for callers
            raise first

    def fetch_offsets(
        self, group: str, partitions: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], OffsetAndMetadata]:
        """The offsets ``group`` committed for ``partitions`` (offset -1 where it has none)."""
        body = offset_fetch_body(group, partitions)

        def ask(conn: BrokerConnection) -> dict[tuple[str, int], OffsetAndMetadata]:
            resp = fetched_group(conn.request(OFFSET_FETCH, body))
            if resp.get("error_code", 0):
                raise error_for_code(resp.error_code)(f"fetching offsets of group {group!r}")
            out: dict[tuple[str, int], OffsetAndMetadata] = {}
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code:
                        raise error_for_code(p.error_code)(
                            f"fetching the offset of {t.name}-{p.partition_index} "
                            f"for group {group!r}"
                        )
                    out[(t.name, p.partition_index)] = OffsetAndMetadata(
                        p.committed_offset, p.metadata or ""
                    )
            return out

        return self._with_coordinator(group, ask)
