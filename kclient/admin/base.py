"""The connection side of AdminClient: the cluster, which broker to ask, and error raising."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kclient.cluster import Cluster
from kclient.config import load_config
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.errors import InvalidConfigError, KafkaError, NoBrokersAvailableError, error_for_code

from .types import TopicPartition

if TYPE_CHECKING:
    from kazoo.client import KazooClient

__all__ = ["AdminBase", "check", "topic_id_text", "by_topic", "as_partition", "offsets_map"]


def check(code: int, context: str, message: str | None = None) -> None:
    """Raise the typed error of a non-zero Kafka error code, naming what it was about."""
    if code:
        detail = f": {message}" if message and message not in context else ""
        raise error_for_code(code)(f"{context}{detail}")


def topic_id_text(raw: Any) -> str | None:
    """A topic id as Kafka prints it (base64url of the UUID), None for the zero id."""
    if not raw or raw == bytes(16):
        return None
    value = raw.bytes if isinstance(raw, uuid.UUID) else bytes(raw)
    return base64.urlsafe_b64encode(value).decode("ascii").rstrip("=")


def admin_config(
    given: Any,
    overrides: Mapping[str, Any],
    settings: ConnectionSettings | None,
    client_id: str,
    request_timeout_ms: int,
) -> tuple[list[str], ConnectionSettings]:
    """Bootstrap list and connection settings from the config forms every client takes: a
    dict with dotted keys and/or snake_case keywords (validated as a client's keys are)."""
    layer: dict[str, Any] = {}
    if isinstance(given, Mapping):
        layer.update(given)
    elif given is not None:
        layer["metadata.broker.list"] = given
    try:
        conf = load_config("consumer", layer, **overrides)
        conf.require("metadata.broker.list")
    except InvalidConfigError as exc:
        text = (
            str(exc)
            .replace("consumer config", "AdminClient config")
            .replace("the consumer does not", "the AdminClient does not")
        )
        raise InvalidConfigError(text, exc.key, exc.value, exc.allowed) from None
    if settings is None:
        settings = ConnectionSettings.from_config(
            conf,
            client_id=conf["client.id"] or client_id,
            request_timeout_ms=max(request_timeout_ms, conf["socket.timeout.ms"])
            if conf.is_set("socket.timeout.ms")
            else request_timeout_ms,
        )
    return [f"{h}:{p}" for h, p in conf["metadata.broker.list"]], settings


class AdminBase:
    """Holds the cluster connection and the optional ZooKeeper client of an AdminClient."""

    def __init__(
        self,
        bootstrap: str | Iterable[str] | Mapping[str, Any] | None = None,
        *,
        client_id: str = "kclient-admin",
        request_timeout_ms: int = 30000,
        zookeeper_connect: str | None = None,
        settings: ConnectionSettings | None = None,
        zookeeper_config: Mapping[str, Any] | None = None,
        **config: Any,
    ) -> None:
        """Connect lazily to ``bootstrap``: ``"host:port,..."``, or a config dict with dotted
        keys (``{"bootstrap.servers": ...}``, security keys, as every kclient client takes),
        and/or the same keys as ``snake_case`` keywords (``bootstrap_servers=...``).
        ``zookeeper_connect`` enables the 0.8 groups whose offsets live in ZooKeeper
        (``/consumers/<group>/offsets``), ``zookeeper_config`` its ``zookeeper.ssl.*`` /
        ``zookeeper.digest`` / ``zookeeper.set.acl`` keys."""
        if isinstance(bootstrap, Mapping) or config or bootstrap is None:
            bootstrap, settings = admin_config(
                bootstrap, config, settings, client_id, request_timeout_ms
            )
        settings = settings or ConnectionSettings(
            client_id=client_id, request_timeout_ms=request_timeout_ms
        )
        self.cluster = Cluster(bootstrap, settings)
        self.zookeeper_connect = zookeeper_connect
        self.zookeeper_config = dict(zookeeper_config or {})
        self._zk: KazooClient | None = None

    def __enter__(self) -> AdminBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every broker connection and the ZooKeeper session."""
        self.cluster.close()
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
            self._zk = None

    # -- where to send -----------------------------------------------------------------------
    def _any(self) -> BrokerConnection:
        """A connection to some broker (metadata loaded)."""
        if not self.cluster.brokers:
            self.cluster.refresh([], allow_auto_create=False)
        return self.cluster.any_connection()

    def _controller(self) -> BrokerConnection:
        """The controller if the metadata names a live one, else any broker (KRaft brokers
        forward admin requests to the controller themselves)."""
        self._any()
        if self.cluster.controller_id in self.cluster.brokers:
            return self.cluster.connection(self.cluster.controller_id)
        return self.cluster.any_connection()

    def _broker(self, node_id: int) -> BrokerConnection:
        """The connection to one broker by id."""
        self._any()
        if node_id not in self.cluster.brokers:
            self.cluster.refresh([], allow_auto_create=False)
        if node_id not in self.cluster.brokers:
            raise NoBrokersAvailableError(f"broker {node_id} is not in the cluster metadata")
        return self.cluster.connection(node_id)

    def _by_leader(self, partitions: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        """Partitions grouped by the id of the broker that leads them."""
        wanted = list(partitions)
        self.cluster.refresh(sorted({tp.topic for tp in wanted}), allow_auto_create=False)
        out: dict[int, list[TopicPartition]] = {}
        for tp in wanted:
            leader = self.cluster.leader_for(tp.topic, tp.partition, refresh=False)
            out.setdefault(leader.node_id, []).append(tp)
        return out

    def _partitions_of(self, topics: Iterable[str]) -> list[TopicPartition]:
        """Every partition of ``topics`` (UnknownTopicOrPartitionError for an unknown one)."""
        names = sorted(set(topics))
        if not names:
            return []
        self.cluster.refresh(names, allow_auto_create=False)
        return [
            TopicPartition(t, p)
            for t in names
            for p in self.cluster.partitions_for(t, refresh=False)
        ]

    def zk(self) -> KazooClient:
        """The ZooKeeper client (started on first use); KafkaError without zookeeper_connect."""
        if self._zk is None:
            if not self.zookeeper_connect:
                raise KafkaError("ZooKeeper-stored offsets need zookeeper_connect")
            from kclient.zkutils import kazoo_options, make_client

            self._zk = make_client(
                self.zookeeper_connect, 30000, 10000, kazoo_options(self.zookeeper_config)
            )
        return self._zk


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Topic -> partition numbers, in first-seen order."""
    out: dict[str, list[int]] = {}
    for tp in partitions:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def as_partition(value: TopicPartition | tuple[str, int]) -> TopicPartition:
    """Accept ``TopicPartition`` or a ``(topic, partition)`` pair."""
    return value if isinstance(value, TopicPartition) else TopicPartition(value[0], value[1])


def offsets_map(values: Mapping[Any, Any]) -> dict[TopicPartition, Any]:
    """A mapping keyed by TopicPartition (pairs accepted as keys)."""
    return {as_partition(k): v for k, v in values.items()}
