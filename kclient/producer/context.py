"""What a producer's EventHandler works with: config, cluster metadata, encoders, partitioner.

Brokers are found from ``metadata.broker.list`` (alias ``bootstrap.servers``, ``broker.list``)
or, with ``zookeeper.connect``, from the broker registry ``/brokers/ids/[id]`` that Kafka brokers
(and the mini-broker) write to ZooKeeper.  The ZooKeeper list is read again whenever none of the
known brokers answers, so a cluster that moved is found again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kclient.cluster import Cluster
from kclient.connection import ConnectionSettings
from kclient.encoders import StringEncoder
from kclient.errors import InvalidConfigError, NoBrokersAvailableError

__all__ = [
    "ProducerContext",
    "connection_settings",
    "zookeeper_brokers",
    "build_context",
    "create_encoder",
]

log = logging.getLogger(__name__)

#: Produce requests in flight per broker connection (not a 0.8.2 key; the Java client's 5).
DEFAULT_MAX_IN_FLIGHT = 5


@dataclass
class ProducerContext:
    """Everything an EventHandler needs; handed to ``EventHandler.init``."""

    config: Mapping[str, Any]
    cluster: Cluster
    encoder: Any
    key_encoder: Any
    partitioner: Any
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    zookeeper_connect: str | None = None
    #: the transactional producer's state (kclient.producer.transactions), shared with the
    #: EventHandler; None for other producers
    transaction_manager: Any = None

    def rediscover(self) -> bool:
        """Re-read the broker list from ZooKeeper (if configured); True if it changed."""
        if not self.zookeeper_connect:
            return False
        try:
            brokers = zookeeper_brokers(self.zookeeper_connect, self.config)
        except Exception as exc:  # noqa: BLE001 - ZooKeeperError, or a registration that does not parse
            log.warning("cannot read brokers from ZooKeeper %s: %s", self.zookeeper_connect, exc)
            return False
        new = [(h, p) for h, p in brokers]
        if new and new != self.cluster.bootstrap:
            self.cluster.bootstrap = new
            return True
        return False


def connection_settings(config: Mapping[str, Any]) -> ConnectionSettings:
    """Every broker connection's settings, from a loaded producer config.

    The socket read timeout is ``socket.timeout.ms`` if given, else ``request.timeout.ms`` plus
    one second (the 0.8 producer read with ``request.timeout.ms``; the broker may use all of it
    waiting for acks before it answers).
    """
    overrides: dict[str, Any] = {}
    is_set = getattr(config, "is_set", None)
    if is_set is None or not is_set("socket.timeout.ms"):
        overrides["request_timeout_ms"] = config["request.timeout.ms"] + 1000
    if not config["client.id"]:
        overrides["client_id"] = "kclient-producer"
    return ConnectionSettings.from_config(config, **overrides)


def zookeeper_brokers(connect: str, config: Mapping[str, Any]) -> list[tuple[str, int]]:
    """``(host, port)`` of every broker registered under ``/brokers/ids`` (sorted by id)."""
    from kclient import zkutils  # kazoo: imported by ZooKeeper discovery only (import time)

    zk = zkutils.make_client(
        connect,
        config["zookeeper.session.timeout.ms"],
        config["zookeeper.connection.timeout.ms"],
        zkutils.kazoo_options(config),
    )
    try:
        with zkutils.zk_errors(connect, "reading /brokers/ids"):
            protocol = str(config.get("security.protocol") or "PLAINTEXT").upper()
            return list(zkutils.get_all_brokers(zk, security_protocol=protocol).values())
    finally:
        zk.stop()
        zk.close()


def build_context(config: Mapping[str, Any], metrics: Any = None) -> ProducerContext:
    """Create the cluster view, encoders and partitioner that ``config`` names (``metrics``: the
    producer's ClientMetrics, which every connection reports to)."""
    settings = connection_settings(config).replace(metrics=metrics)
    zk = None
    if config["metadata.broker.list"]:
        bootstrap = [f"{h}:{p}" for h, p in config["metadata.broker.list"]]
    elif config["zookeeper.connect"]:
        zk = config["zookeeper.connect"]
        bootstrap = [f"{h}:{p}" for h, p in zookeeper_brokers(zk, config)]
        if not bootstrap:
            raise NoBrokersAvailableError(f"no broker registered in ZooKeeper {zk}/brokers/ids")
    else:
        raise InvalidConfigError(
            "the producer needs 'metadata.broker.list' (alias 'bootstrap.servers') or "
            "'zookeeper.connect' to find brokers",
            "metadata.broker.list",
        )
    cluster = Cluster(bootstrap, settings)
    return ProducerContext(
        config=config,
        cluster=cluster,
        encoder=create_encoder(config, "serializer.class"),
        key_encoder=create_encoder(config, "key.serializer.class"),
        partitioner=config.create("partitioner.class")
        if hasattr(config, "create")
        else config["partitioner.class"],
        max_in_flight=config["max.in.flight.requests.per.connection"],
        zookeeper_connect=zk,
    )


def create_encoder(config: Mapping[str, Any], key: str) -> Any:
    value = config[key]
    if isinstance(value, type):
        if issubclass(value, StringEncoder):
            return value(config["serializer.encoding"])
        return value()
    return value
