"""Cluster metadata: the bootstrap list, brokers, topics and partition leaders, refreshed on demand.

A :class:`Cluster` keeps one :class:`BrokerConnection` per broker, answers "who leads this
partition", and offers the admin calls the tests and tools need (create / delete topics).
"""
from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .connection import BrokerConnection, ConnectionSettings
from .core.metadata_recovery import Candidate, MetadataRecovery
from .errors import (
    KafkaConnectionError,
    KafkaError,
    LeaderNotAvailableError,
    NoBrokersAvailableError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from .protocol.apis import CREATE_TOPICS, DELETE_TOPICS, METADATA
from .structs import TopicPartition

if TYPE_CHECKING:
    from .protocol.messages import MetadataResponse

__all__ = ["BrokerInfo", "PartitionInfo", "TopicInfo", "Cluster", "parse_bootstrap",
           "topics_from_metadata", "list_offsets_body", "list_offsets_answers"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    error_code: int = 0


@dataclass
class TopicInfo:
    name: str
    error_code: int = 0
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    is_internal: bool = False


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """Parse "h1:p1,h2:p2" (or a list) into (host, port) pairs; a clear error otherwise."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in (s.strip() for s in items):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bootstrap server {item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap servers given (metadata.broker.list / bootstrap.servers)")
    return out


def topics_from_metadata(resp: MetadataResponse, known: Mapping[str, TopicInfo] | None
                         ) -> dict[str, TopicInfo]:
    """The topics a Metadata answer describes, over ``known`` (None: the answer is complete)."""
    topics = dict(known or {})
    for t in resp.topics:
        if t.name is None:               # only a lookup by topic id (v12) answers without one
            continue
        info = TopicInfo(t.name, t.error_code, is_internal=t.is_internal)
        for p in t.partitions:
            info.partitions[p.partition_index] = PartitionInfo(
                t.name, p.partition_index, p.leader_id, tuple(p.replica_nodes),
                tuple(p.isr_nodes), p.error_code)
        topics[t.name] = info
    return topics


def list_offsets_body(query: Mapping[TopicPartition, int], isolation_level: int = 0
                      ) -> dict[str, Any]:
    """A ListOffsets request body asking for ``{tp: timestamp}`` (-2 earliest, -1 latest)."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, timestamp in query.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "timestamp": timestamp, "max_num_offsets": 1})
    return {"replica_id": -1, "isolation_level": isolation_level,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}


def list_offsets_answers(resp: Any, version: int
                         ) -> Iterator[tuple[TopicPartition, int, int, int]]:
    """``(tp, error code, offset, timestamp)`` per partition of a ListOffsets answer (v0: its
    first old-style offset, timestamp -1)."""
    for t in resp.topics:
        for p in t.partitions:
            if version == 0:
                offset = p.old_style_offsets[0] if p.old_style_offsets else -1
                yield TopicPartition(t.name, p.partition_index), p.error_code, offset, -1
            else:
                yield TopicPartition(t.name, p.partition_index), p.error_code, p.offset, \
                    p.timestamp


class Cluster:
    """Known brokers and topic metadata, with one pooled connection per broker.

    Every connection uses ``settings`` (with keyword ``overrides`` of its fields applied).
    """

    def __init__(self, bootstrap: str | Iterable[str], settings: ConnectionSettings | None = None,
                 **overrides: Any):
        self.bootstrap = parse_bootstrap(bootstrap)
        settings = settings or ConnectionSettings()
        self.settings = settings.replace(**overrides) if overrides else settings
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self.last_refresh = 0.0
        self.recovery = MetadataRecovery(self.settings.metadata_recovery_strategy,
                                         self.settings.metadata_recovery_rebootstrap_trigger_ms)
        self._conns: dict[int | str, BrokerConnection] = {}
        self._lock = threading.RLock()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections -------------------------------------------------------------------------
    def connection(self, node_id: int) -> BrokerConnection:
        """The (connected) connection to broker ``node_id``."""
        with self._lock:
            info = self.brokers.get(node_id)
            if info is None:
                raise NoBrokersAvailableError(f"broker {node_id} is not in the cluster metadata")
            return self._connect(node_id, info.host, info.port)

    def _connect(self, key: int | str, host: str, port: int) -> BrokerConnection:
        conn = self._conns.get(key)
        if conn is None or (conn.host, conn.port) != (host, port):
            if conn is not None:
                conn.close()
            conn = BrokerConnection(host, port, self.settings,
                                    node_id=key if isinstance(key, int) else None)
            self._conns[key] = conn
        if not conn.connected:
            conn.connect()
        return conn

    def _known(self) -> list[Candidate]:
        """The brokers the last metadata named (shuffled)."""
        known: list[Candidate] = [(b.node_id, b.host, b.port) for b in self.brokers.values()]
        random.shuffle(known)
        return known

    def _candidates(self, known: list[Candidate]) -> list[Candidate]:
        """Whom to ask, in order, as :class:`MetadataRecovery` plans it (the known brokers,
        then the bootstrap list unless metadata.recovery.strategy=none), each address once."""
        bootstrap: list[Candidate] = [(f"bootstrap-{h}:{p}", h, p) for h, p in self.bootstrap]
        plan = self.recovery.plan(known, bootstrap, time.monotonic())
        if plan.rebootstrap:
            log.warning("no metadata from the known brokers for %.0f s: rebootstrapping from %s",
                        self.recovery.trigger_s, self.bootstrap)
        return plan.candidates

    def any_connection(self) -> BrokerConnection:
        """A connection to some live broker: known brokers first, then the bootstrap list.

        Raises NoBrokersAvailableError naming every broker tried and why each failed (the last
        failure chained as its cause)."""
        return self._on_any_broker(lambda conn: conn, "connect to any broker")

    def _on_any_broker(self, call: Callable[[BrokerConnection], _T], what: str) -> _T:
        """``call(conn)`` on the first broker where connecting and ``call`` both work; a broker
        that fails (connection, timeout, a broken answer) is closed and the next one tried."""
        errors: list[str] = []
        tried: list[tuple[str, int]] = []
        last: KafkaError | None = None
        known = self._known()
        for key, host, port in self._candidates(known):
            tried.append((host, port))
            try:
                with self._lock:
                    conn = self._connect(key, host, port)
                result = call(conn)
            except KafkaError as exc:   # connection, timeout, broken answer, ...
                failed = self._conns.get(key)
                if failed is not None:
                    failed.close(f"failed: {exc}")
                if isinstance(exc, KafkaConnectionError) and not exc.retriable:
                    raise   # TLS or SASL refused us: every broker would, say so now
                self.recovery.failed((key, host, port), known, time.monotonic())
                errors.append(str(exc))
                last = exc
                continue
            if self.recovery.answered((key, host, port), known, time.monotonic()):
                log.warning("rebootstrapped: %s:%s from the bootstrap list answered after every "
                            "known broker failed", host, port)
            return result
        raise NoBrokersAvailableError(
            f"could not {what}: " + "; ".join(errors), tried) from last

    def interrupt(self, reason: str = "interrupted") -> None:
        """Close every connection's socket now, from any thread, without waiting for the lock
        a request may hold: whoever waits on one fails at once (later use reconnects)."""
        for conn in list(self._conns.values()):
            conn.close(reason)

    def close(self) -> None:
        with self._lock:
            for conn in self._conns.values():
                conn.close()
            self._conns.clear()

    # -- metadata ----------------------------------------------------------------------------
    def refresh(self, topics: Iterable[str] | None = None, allow_auto_create: bool = True
                ) -> MetadataResponse:
        """Fetch metadata (all topics when ``topics`` is None) and update what we know."""
        names = None if topics is None else sorted(set(topics))

        def ask(conn: BrokerConnection) -> MetadataResponse:
            version = conn.version(METADATA)
            body_topics: Any
            if names is None and version == 0:
                body_topics = []  # v0: an empty list means all topics
            else:
                body_topics = None if names is None else [{"name": n} for n in names]
            return conn.request(METADATA, {"topics": body_topics,
                                           "allow_auto_topic_creation": allow_auto_create})

        what = "fetch metadata" + (f" of {', '.join(names)}" if names else "") + \
            " from any broker"
        resp = self._on_any_broker(ask, what)
        self._apply(resp, full=names is None)
        return resp

    def _apply(self, resp: MetadataResponse, full: bool) -> None:
        with self._lock:
            self.brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack)
                            for b in resp.brokers}
            self.controller_id = resp.controller_id
            self.cluster_id = resp.cluster_id
            self.topics = topics_from_metadata(resp, None if full else self.topics)
            self.last_refresh = time.monotonic()

    def partitions_for(self, topic: str, refresh: bool = True) -> list[int]:
        """The partition ids of ``topic``; raises UnknownTopicOrPartitionError."""
        info = self.topics.get(topic)
        if (info is None or not info.partitions) and refresh:
            self.refresh([topic])
            info = self.topics.get(topic)
        if info is None or info.error_code or not info.partitions:
            code = info.error_code if info is not None else UnknownTopicOrPartitionError.errno
            raise error_for_code(code or UnknownTopicOrPartitionError.errno)(f"topic {topic!r}")
        return sorted(info.partitions)

    def leader_for(self, topic: str, partition: int, refresh: bool = True) -> BrokerInfo:
        """The broker leading ``topic``/``partition``, refreshing metadata once if unknown."""
        for attempt in (0, 1):
            info = self.topics.get(topic)
            part = info.partitions.get(partition) if info else None
            if part is not None and part.leader >= 0 and part.leader in self.brokers:
                return self.brokers[part.leader]
            if attempt == 0 and refresh:
                self.refresh([topic])
        if part is None:
            raise UnknownTopicOrPartitionError(f"{topic}/{partition}")
        raise LeaderNotAvailableError(f"{topic}/{partition} has no leader (leader id {part.leader})")

    # -- admin -------------------------------------------------------------------------------
    def _controller(self) -> BrokerConnection:
        if not self.brokers:
            self.refresh([])
        if self.controller_id in self.brokers:
            return self.connection(self.controller_id)
        return self.any_connection()

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: dict[str, str] | None = None, timeout_ms: int = 30000) -> None:
        """Create a topic; raises the broker's error (e.g. TopicAlreadyExistsError)."""
        body = {"topics": [{"name": name, "num_partitions": partitions,
                            "replication_factor": replication_factor, "assignments": [],
                            "configs": [{"name": k, "value": str(v)}
                                        for k, v in (config or {}).items()]}],
                "timeout_ms": timeout_ms, "validate_only": False}
        resp = self._controller().request(CREATE_TOPICS, body)
        for t in resp.topics:
            if t.error_code:
                raise error_for_code(t.error_code)(f"creating topic {t.name!r}: "
                                                   f"{t.get('error_message') or ''}".rstrip(": "))

    def delete_topic(self, name: str, timeout_ms: int = 30000) -> None:
        """Delete a topic; raises the broker's error."""
        resp = self._controller().request(DELETE_TOPICS, {"topic_names": [name],
                                                           "timeout_ms": timeout_ms})
        for r in resp.responses:
            if r.error_code:
                raise error_for_code(r.error_code)(f"deleting topic {r.name!r}")
