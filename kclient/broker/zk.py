"""ZooKeeper registration in Kafka 0.8's layout, so ZooKeeper-based clients discover the broker.

- ``/brokers/ids/[id]`` (ephemeral): ``{"jmx_port":-1,"timestamp":"<ms>","host":h,"version":1,"port":p}``
- ``/brokers/topics/[topic]`` (persistent): ``{"version":1,"partitions":{"0":[id],...}}``
- ``/brokers/topics/[topic]/partitions/[n]/state``:
  ``{"controller_epoch":1,"leader":id,"version":1,"leader_epoch":0,"isr":[id]}``
- ``/config/topics/[topic]``: ``{"version":1,"config":{...}}``; ``/controller`` (ephemeral)

JSON is compact (no spaces) with Kafka's key order, byte for byte what a 0.8.2 broker writes.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError

__all__ = ["ZkRegistry", "dumps", "broker_json", "topic_json", "state_json"]

log = logging.getLogger("kclient.broker.zk")

#: Persistent paths a Kafka 0.8.2 broker creates at startup (ZkUtils.setupCommonPaths).
COMMON_PATHS = ("/consumers", "/brokers/ids", "/brokers/topics", "/config/changes",
                "/config/topics", "/admin/delete_topics")


def dumps(value: Any) -> bytes:
    """Kafka-style compact JSON (no spaces, insertion order)."""
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def _now_ms() -> str:
    """Wall-clock milliseconds as the string Kafka writes."""
    return str(int(time.time() * 1000))


def broker_json(host: str, port: int) -> bytes:
    """The broker registration of Kafka 0.8.2."""
    return dumps({"jmx_port": -1, "timestamp": _now_ms(), "host": host, "version": 1,
                  "port": port})


def topic_json(leaders: Mapping[int, int]) -> bytes:
    """The topic's replica assignment (one replica, the leader, per partition)."""
    return dumps({"version": 1, "partitions": {str(p): [leaders[p]] for p in sorted(leaders)}})


def state_json(leader: int, leader_epoch: int = 0) -> bytes:
    """A partition's leader-and-ISR state."""
    return dumps({"controller_epoch": 1, "leader": leader, "version": 1,
                  "leader_epoch": leader_epoch, "isr": [leader]})


class ZkRegistry:
    """One broker's ZooKeeper session: its ephemeral id node plus the topic znodes it writes."""

    def __init__(self, connect: str, broker_id: int, host: str, port: int,
                 session_timeout_ms: int = 18000, connection_timeout_ms: int | None = None):
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.zk = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000.0)
        self._connect_timeout = (connection_timeout_ms or session_timeout_ms) / 1000.0
        self._lost = False
        self._closed = False

    @property
    def id_path(self) -> str:
        """This broker's registration znode."""
        return f"/brokers/ids/{self.broker_id}"

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
        data = broker_json(self.host, self.port)
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
        """Take ``/controller`` if nobody holds it (ephemeral, Kafka 0.8.2 JSON)."""
        self.zk.ensure_path("/controller_epoch")
        data, _ = self.zk.get("/controller_epoch")
        if not data:
            self.zk.set("/controller_epoch", b"1")
        try:
            self.zk.create("/controller", dumps({"version": 1, "brokerid": self.broker_id,
                                                 "timestamp": _now_ms()}), ephemeral=True)
        except NodeExistsError:
            pass

    def register_topic(self, topic: str, leaders: Mapping[int, int],
                       config: Mapping[str, str] | None = None,
                       epochs: Mapping[int, int] | None = None) -> None:
        """Write (or overwrite) a topic's assignment, config and partition states."""
        self._put(f"/brokers/topics/{topic}", topic_json(leaders))
        self._put(f"/config/topics/{topic}", dumps({"version": 1, "config": dict(config or {})}))
        for p, leader in leaders.items():
            self.set_partition_state(topic, p, leader, (epochs or {}).get(p, 0))

    def set_partition_state(self, topic: str, partition: int, leader: int,
                            leader_epoch: int = 0) -> None:
        """Write ``/brokers/topics/[topic]/partitions/[n]/state``."""
        self._put(f"/brokers/topics/{topic}/partitions/{partition}/state",
                  state_json(leader, leader_epoch))

    def delete_topic(self, topic: str) -> None:
        """Remove a topic's znodes."""
        for path in (f"/brokers/topics/{topic}", f"/config/topics/{topic}"):
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
