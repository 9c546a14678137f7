"""Cluster metadata: the bootstrap list, brokers, topics and partition leaders, refreshed on demand.

A :class:`Cluster` keeps one :class:`BrokerConnection` per broker, answers "who leads this
partition", and offers the admin calls the tests and tools need (create / delete topics).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from .connection import BrokerConnection, ConnectionSettings
from .core.metadata import (
    BrokerInfo,
    ClusterState,
    PartitionInfo,
    TopicInfo,
    list_offsets_answers,
    list_offsets_body,
    refresh_metadata,
    topics_from_metadata,
)
from .core.metadata_recovery import Candidate, MetadataRecovery
from .errors import KafkaConnectionError, KafkaError, NoBrokersAvailableError, error_for_code
from .io.driver import ConnectionTransport, run
from .protocol.apis import CREATE_TOPICS, DELETE_TOPICS

if TYPE_CHECKING:
    from .protocol.messages import MetadataResponse

__all__ = [
    "BrokerInfo",
    "PartitionInfo",
    "TopicInfo",
    "Cluster",
    "parse_bootstrap",
    "topics_from_metadata",
    "list_offsets_body",
    "list_offsets_answers",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")


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


class Cluster(ClusterState):
    """Known brokers and topic metadata, with one pooled connection per broker.

    Every connection uses ``settings`` (with keyword ``overrides`` of its fields applied).
    """

    def __init__(
        self,
        bootstrap: str | Iterable[str],
        settings: ConnectionSettings | None = None,
        **overrides: Any,
    ):
        super().__init__()
        self.bootstrap = parse_bootstrap(bootstrap)
        settings = settings or ConnectionSettings()
        self.settings = settings.replace(**overrides) if overrides else settings
        self.recovery = MetadataRecovery(
            self.settings.metadata_recovery_strategy,
            self.settings.metadata_recovery_rebootstrap_trigger_ms,
        )
        self._conns: dict[int | str, BrokerConnection] = {}
        self._lock = threading.RLock()
        #: set by :meth:`halt`: no connection opens again, and this says why
        self._halted: str | None = None

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
            conn = BrokerConnection(
                host, port, self.settings, node_id=key if isinstance(key, int) else None
            )
            self._conns[key] = conn
            if self._halted is not None:  # after the insertion: halt() saw it or we see this
                conn.shut(self._halted)
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
            log.warning(
                "no metadata from the known brokers for %.0f s: rebootstrapping from %s",
                self.recovery.trigger_s,
                self.bootstrap,
            )
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
            except KafkaError as exc:  # connection, timeout, broken answer, ...
                failed = self._conns.get(key)
                if failed is not None:
                    failed.close(f"failed: {exc}")
                if isinstance(exc, KafkaConnectionError) and not exc.retriable:
                    raise  # TLS or SASL refused us: every broker would, say so now
                self.recovery.failed((key, host, port), known, time.monotonic())
                errors.append(str(exc))
                last = exc
                continue
            if self.recovery.answered((key, host, port), known, time.monotonic()):
                log.warning(
                    "rebootstrapped: %s:%s from the bootstrap list answered after every "
                    "known broker failed",
                    host,
                    port,
                )
            return result
        raise NoBrokersAvailableError(f"could not {what}: " + "; ".join(errors), tried) from last

    def interrupt(self, reason: str = "interrupted") -> None:
        """Close every connection's socket now, from any thread, without waiting for the lock
        a request may hold: whoever waits on one fails at once (later use reconnects)."""
        for conn in list(self._conns.values()):
            conn.close(reason)

    def halt(self, reason: str) -> None:
        """Stop for good, from any thread and without the lock a request may hold: whoever
        waits on a connection or is connecting fails at once, and nothing connects again."""
        self._halted = reason
        for conn in list(self._conns.values()):
            conn.shut(reason)

    def close(self) -> None:
        with self._lock:
            for conn in self._conns.values():
                conn.close()
            self._conns.clear()

    # -- metadata ----------------------------------------------------------------------------
    def refresh(
        self, topics: Iterable[str] | None = None, allow_auto_create: bool = True
    ) -> MetadataResponse:
        """Fetch metadata (all topics when ``topics`` is None) and update what we know."""
        names = None if topics is None else sorted(set(topics))

        def ask(conn: BrokerConnection) -> MetadataResponse:
            return run(refresh_metadata(names, allow_auto_create), ConnectionTransport(conn))

        what = "fetch metadata" + (f" of {', '.join(names)}" if names else "") + " from any broker"
        resp = self._on_any_broker(ask, what)
        with self._lock:
            self.apply(resp, names is None, time.monotonic())
        return resp

    def partitions_for(self, topic: str, refresh: bool = True) -> list[int]:
        """The partition ids of ``topic``; raises UnknownTopicOrPartitionError."""
        info = self.topics.get(topic)
        if (info is None or not info.partitions) and refresh:
            self.refresh([topic])
        return self.partition_ids(topic)

    def leader_for(self, topic: str, partition: int, refresh: bool = True) -> BrokerInfo:
        """The broker leading ``topic``/``partition``, refreshing metadata once if unknown."""
        node = self.leader(topic, partition)
        if node is None and refresh:
            self.refresh([topic])
            node = self.leader(topic, partition)
        if node is None:
            raise self.no_leader(topic, partition)
        return self.brokers[node]

    # -- admin -------------------------------------------------------------------------------
    def _controller(self) -> BrokerConnection:
        if not self.brokers:
            self.refresh([])
        if self.controller_id in self.brokers:
            return self.connection(self.controller_id)
        return self.any_connection()

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: dict[str, str] | None = None,
        timeout_ms: int = 30000,
    ) -> None:
        """Create a topic; raises the broker's error (e.g. TopicAlreadyExistsError)."""
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": replication_factor,
                    "assignments": [],
                    "configs": [{"name": k, "value": str(v)} for k, v in (config or {}).items()],
                }
            ],
            "timeout_ms": timeout_ms,
            "validate_only": False,
        }
        resp = self._controller().request(CREATE_TOPICS, body)
        for t in resp.topics:
            if t.error_code:
                raise error_for_code(t.error_code)(
                    f"creating topic {t.name!r}: {t.get('error_message') or ''}".rstrip(": ")
                )

    def delete_topic(self, name: str, timeout_ms: int = 30000) -> None:
        """Delete a topic; raises the broker's error."""
        resp = self._controller().request(
            DELETE_TOPICS, {"topic_names": [name], "timeout_ms": timeout_ms}
        )
        for r in resp.responses:
            if r.error_code:
                raise error_for_code(r.error_code)(f"deleting topic {r.name!r}")
