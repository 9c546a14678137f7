"""ZooKeeper registration of a mini-broker, so ZooKeeper-based clients and tools discover it.

The znodes and their JSON come from :mod:`kclient.protocol.zookeeper` (the layout the clients
read too): ``/brokers/ids/[id]`` (ephemeral, the registration version Kafka's ``BrokerInfo``
picks for ``inter.broker.protocol.version``: 5 by default, as Kafka 3.x), each topic's assignment,
config and partition states, and ``/controller``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError

from kclient.protocol.zookeeper import (
    COMMON_PATHS,
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    REGISTRATION_VERSION,
    broker_path,
    broker_registration,
    controller,
    partition_state,
    partition_state_path,
    topic_assignment,
    topic_config,
    topic_config_path,
    topic_path,
)

__all__ = ["ZkRegistry"]

log = logging.getLogger("kclient.broker.zk")


def _now_ms() -> int:
    """Wall-clock milliseconds."""
    return int(time.time() * 1000)


class ZkRegistry:
    """One broker's ZooKeeper session: its ephemeral id node plus the topic znodes it writes."""

    def __init__(
        self,
        connect: str,
        broker_id: int,
        host: str,
        port: int,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        *,
        rack: str | None = None,
        version: int = REGISTRATION_VERSION,
        listeners: Sequence[tuple[str, str, str, int]] = (),
    ):
        """``host``/``port`` are the advertised address; ``version`` the registration's;
        ``listeners`` every advertised (name, security protocol, host, port) when not only
        PLAINTEXT."""
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.rack = rack
        self.version = version
        self.listeners = tuple(listeners)
        self.zk = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000.0)
        self._connect_timeout = (connection_timeout_ms or session_timeout_ms) / 1000.0
        self._lost = False
        self._closed = False

    @property
    def id_path(self) -> str:
        """This broker's registration znode."""
        return broker_path(self.broker_id)

    def start(self) -> None:
        """Connect, create the common paths, register this broker (and try to be controller)."""
        self.zk.start(timeout=self._connect_timeout)
        self.zk.add_listener(self._on_state)
        for path in COMMON_PATHS:
            self.zk.ensure_path(path)
        self.register_broker()

    def _on_state(self, state: str) -> None:
        """Re-register after a session loss, as Kafka does on a new session."""
        if state == KazooState.LOST:
            self._lost = True
        elif state == KazooState.CONNECTED and self._lost and not self._closed:
            self._lost = False
            self.zk.handler.spawn(self.register_broker)

    def register_broker(self) -> None:
        """Create the ephemeral ``/brokers/ids/[id]`` (replacing a dead session's leftover)."""
        data = broker_registration(
            self.host,
            self.port,
            _now_ms(),
            version=self.version,
            rack=self.rack,
            listeners=self.listeners,
        )
        try:
            self.zk.create(self.id_path, data, ephemeral=True, makepath=True)
        except NodeExistsError:
            _, stat = self.zk.get(self.id_path)
            if stat.ephemeralOwner == self.zk.client_id[0]:
                return
            log.warning("replacing %s left by an earlier session", self.id_path)
            self.zk.delete(self.id_path)
            self.zk.create(self.id_path, data, ephemeral=True, makepath=True)
        self._elect_controller()

    def _elect_controller(self) -> None:
        """Take ``/controller`` if nobody holds it (ephemeral)."""
        self.zk.ensure_path(CONTROLLER_EPOCH_PATH)
        data, _ = self.zk.get(CONTROLLER_EPOCH_PATH)
        if not data:
            self.zk.set(CONTROLLER_EPOCH_PATH, b"1")
        try:
            self.zk.create(CONTROLLER_PATH, controller(self.broker_id, _now_ms()), ephemeral=True)
        except NodeExistsError:
            pass

    def register_topic(
        self,
        topic: str,
        leaders: Mapping[int, int],
        config: Mapping[str, str] | None = None,
        epochs: Mapping[int, int] | None = None,
    ) -> None:
        """Write (or overwrite) a topic's assignment, config and partition states."""
        replicas = {p: [leader] for p, leader in leaders.items()}
        self._put(topic_path(topic), topic_assignment(replicas))
        self._put(topic_config_path(topic), topic_config(config or {}))
        for p, leader in leaders.items():
            self.set_partition_state(topic, p, leader, (epochs or {}).get(p, 0))

    def set_partition_state(
        self, topic: str, partition: int, leader: int, leader_epoch: int = 0
    ) -> None:
        """Write ``/brokers/topics/[topic]/partitions/[n]/state``."""
        self._put(partition_state_path(topic, partition), partition_state(leader, leader_epoch))

    def delete_topic(self, topic: str) -> None:
        """Remove a topic's znodes."""
        for path in (topic_path(topic), topic_config_path(topic)):
            try:
                self.zk.delete(path, recursive=True)
            except NoNodeError:
                pass

    def _put(self, path: str, data: bytes) -> None:
        """Create a persistent node or replace its data."""
        try:
            self.zk.create(path, data, makepath=True)
        except NodeExistsError:
            self.zk.set(path, data)

    def close(self) -> None:
        """End the session: the ephemeral id (and /controller, if ours) disappear at once."""
        self._closed = True
        try:
            self.zk.stop()
            self.zk.close()
        except Exception:
            log.exception("closing the ZooKeeper session failed")
