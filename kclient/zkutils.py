"""The Kafka 0.8 ZooKeeper layout, byte for byte, over kazoo (Kafka's ``ZkUtils``).

Paths::

    /brokers/ids/[id]                               ephemeral, broker JSON (host, port, endpoints)
    /brokers/topics/[topic]                         {"version":1,"partitions":{"0":[0,1]}}
    /brokers/topics/[topic]/partitions/[p]/state    {"controller_epoch":..,"leader":..,...}
    /consumers/[group]/ids/[consumer_id]            ephemeral, registration JSON
    /consumers/[group]/owners/[topic]/[partition]   ephemeral, owning thread id
    /consumers/[group]/offsets/[topic]/[partition]  persistent, offset as a decimal string

JSON is written as Kafka's ``kafka.utils.Json.encode`` writes it: compact, keys in insertion
order, strings escaped as ``Utils.JSONEscapeString`` does (``/`` becomes ``\\/``).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

from kclient.errors import ZooKeeperError

__all__ = [
    "BROKER_IDS_PATH", "BROKER_TOPICS_PATH", "CONSUMERS_PATH", "kafka_json", "GroupDirs",
    "registration_json", "parse_registration", "get_children",
    "create_ephemeral_expect_conflict", "update_persistent", "read_data", "get_all_brokers",
    "parse_broker", "partitions_for_topics", "leader_for_partition", "get_all_topics",
    "consumers_in_group", "register_broker", "register_topic",
    "make_client", "zk_errors", "ZK_FAILURES",
]

log = logging.getLogger(__name__)

BROKER_IDS_PATH = "/brokers/ids"
BROKER_TOPICS_PATH = "/brokers/topics"
CONSUMERS_PATH = "/consumers"

_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n",
            "\r": "\\r", "\t": "\\t"}


def _escape(s: str) -> str:
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch <= "\x1f" or "\x7f" <= ch <= "\x9f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def kafka_json(obj: Any) -> str:
    """Encode like Kafka 0.8's ``Json.encode`` (compact, insertion order)."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, str):
        return '"' + _escape(obj) + '"'
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, Mapping):
        return "{" + ",".join(kafka_json(str(k)) + ":" + kafka_json(v) for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(kafka_json(v) for v in obj) + "]"
    raise TypeError(f"cannot encode {type(obj).__name__} as Kafka JSON")


class GroupDirs:
    """The znode directories of one consumer group (Kafka's ``ZKGroupDirs``)."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.group_dir = f"{CONSUMERS_PATH}/{group}"
        self.ids_dir = f"{self.group_dir}/ids"
        self.owners_dir = f"{self.group_dir}/owners"
        self.offsets_dir = f"{self.group_dir}/offsets"

    def consumer(self, consumer_id: str) -> str:
        return f"{self.ids_dir}/{consumer_id}"

    def owner(self, topic: str, partition: int) -> str:
        return f"{self.owners_dir}/{topic}/{partition}"

    def offset(self, topic: str, partition: int) -> str:
        return f"{self.offsets_dir}/{topic}/{partition}"


# -- consumer registration ----------------------------------------------------------------------
def registration_json(subscription: Mapping[str, int], pattern: str, timestamp_ms: int) -> str:
    """``{"version":1,"subscription":{...},"pattern":"static","timestamp":"<ms>"}``."""
    return kafka_json({"version": 1, "subscription": dict(subscription), "pattern": pattern,
                       "timestamp": str(timestamp_ms)})


def parse_registration(data: bytes | str) -> tuple[str, dict[str, int]]:
    """``(pattern, subscription)`` of a consumer registration (also the pre-0.8.1 plain map)."""
    obj = json.loads(data)
    if "subscription" not in obj:              # old format: {"topic": #streams}
        return "static", {k: int(v) for k, v in obj.items()}
    return obj.get("pattern", "static"), {k: int(v) for k, v in obj["subscription"].items()}


# -- generic helpers ----------------------------------------------------------------------------
def get_children(zk: KazooClient, path: str, watch=None) -> list[str]:
    """Children of ``path``; empty when it does not exist (``getChildrenParentMayNotExist``)."""
    try:
        return zk.get_children(path, watch=watch)
    except NoNodeError:
        return []


def read_data(zk: KazooClient, path: str) -> str | None:
    """The data of ``path`` as text, or None when the node does not exist."""
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    return None if data is None else data.decode("utf-8")


def create_ephemeral_expect_conflict(zk: KazooClient, path: str, data: str) -> None:
    """Create an ephemeral node (parents as needed); NodeExistsError unless it holds ``data``.

    As Kafka's ``createEphemeralPathExpectConflict``: a node that already holds exactly our
    data (a create retried across a connection loss) counts as created.
    """
    raw = data.encode("utf-8")
    try:
        zk.create(path, raw, ephemeral=True, makepath=True)
    except NodeExistsError:
        try:
            stored, stat = zk.get(path)
        except NoNodeError:
            raise NodeExistsError(path) from None
        if stored != raw or stat.ephemeralOwner != zk.client_id[0]:
            raise
        log.info("%s exists with value %s during connection loss; this is ok", path, data)


def update_persistent(zk: KazooClient, path: str, data: str) -> None:
    """Set a persistent node's data, creating it and its parents when missing."""
    raw = data.encode("utf-8")
    try:
        zk.set(path, raw)
    except NoNodeError:
        try:
            zk.create(path, raw, makepath=True)
        except NodeExistsError:
            zk.set(path, raw)


#: kazoo's failures of the ensemble itself (not answers such as NoNodeError)
ZK_FAILURES = (KazooTimeoutError, ConnectionLoss, SessionExpiredError, OperationTimeoutError)


@contextmanager
def zk_errors(connect: str, what: str) -> Iterator[None]:
    """Turn kazoo's connection failures inside the block into :class:`ZooKeeperError` naming
    ``connect`` and ``what`` was being done (the kazoo error chained as the cause)."""
    try:
        yield
    except ZK_FAILURES as exc:
        detail = str(exc) or type(exc).__name__
        raise ZooKeeperError(connect, f"{what} failed: {type(exc).__name__}: {detail}") from exc


def make_client(connect: str, session_timeout_ms: int, connection_timeout_ms: int
                ) -> KazooClient:
    """A started kazoo client (``connect`` may end with a chroot path).

    Raises :class:`ZooKeeperError` naming ``connect`` when no server answers within
    ``connection_timeout_ms``."""
    zk = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000.0)
    wait = max(1.0, connection_timeout_ms / 1000.0)
    try:
        with zk_errors(connect, f"connecting (zookeeper.connection.timeout.ms {wait * 1000:.0f})"):
            zk.start(timeout=wait)
    except ZooKeeperError:
        zk.stop()
        zk.close()
        raise
    return zk


# -- brokers and topics ------------------------------------------------------------------------
def parse_broker(data: bytes | str) -> tuple[str, int]:
    """``(host, port)`` from a broker registration (0.8 host/port, or 0.9+ endpoints)."""
    obj = json.loads(data)
    host, port = obj.get("host"), obj.get("port", -1)
    if host and port is not None and int(port) >= 0:
        return host, int(port)
    for ep in obj.get("endpoints", ()):
        proto, _, rest = ep.partition("://")
        if proto in ("PLAINTEXT", "") or len(obj.get("endpoints")) == 1:
            h, _, p = rest.rpartition(":")
            return h.strip("[]"), int(p)
    raise ValueError(f"broker registration without host/port: {obj!r}")


def get_all_brokers(zk: KazooClient, watch=None) -> dict[int, tuple[str, int]]:
    """``{broker id: (host, port)}`` of every registered broker."""
    out: dict[int, tuple[str, int]] = {}
    for child in get_children(zk, BROKER_IDS_PATH, watch):
        data = read_data(zk, f"{BROKER_IDS_PATH}/{child}")
        if data:
            out[int(child)] = parse_broker(data)
    return dict(sorted(out.items()))


def get_all_topics(zk: KazooClient, watch=None) -> list[str]:
    return sorted(get_children(zk, BROKER_TOPICS_PATH, watch))


def partitions_for_topics(zk: KazooClient, topics: Iterable[str]) -> dict[str, list[int]]:
    """``{topic: sorted partition ids}`` from ``/brokers/topics/[topic]``; missing topics: []."""
    out: dict[str, list[int]] = {}
    for topic in topics:
        data = read_data(zk, f"{BROKER_TOPICS_PATH}/{topic}")
        if not data:
            out[topic] = []
            continue
        obj = json.loads(data)
        out[topic] = sorted(int(p) for p in obj.get("partitions", {}))
    return out


def leader_for_partition(zk: KazooClient, topic: str, partition: int) -> int | None:
    """The leader broker id from the partition state znode, or None."""
    data = read_data(zk, f"{BROKER_TOPICS_PATH}/{topic}/partitions/{partition}/state")
    if not data:
        return None
    leader = json.loads(data).get("leader", -1)
    return None if leader is None or leader < 0 else int(leader)


# -- group membership --------------------------------------------------------------------------
def consumers_in_group(zk: KazooClient, group: str, watch=None) -> list[str]:
    return sorted(get_children(zk, GroupDirs(group).ids_dir, watch))


# -- writers for brokers (tests, tools; the mini-broker has its own) -----------------------------
def register_broker(zk: KazooClient, broker_id: int, host: str, port: int,
                    timestamp_ms: int = 0, ephemeral: bool = True) -> None:
    """Write ``/brokers/ids/[id]`` as a Kafka 0.9+ broker does (host, port and endpoints)."""
    data = kafka_json({"jmx_port": -1, "timestamp": str(timestamp_ms),
                       "endpoints": [f"PLAINTEXT://{host}:{port}"], "host": host,
                       "version": 2, "port": port})
    zk.create(f"{BROKER_IDS_PATH}/{broker_id}", data.encode(), ephemeral=ephemeral, makepath=True)


def register_topic(zk: KazooClient, topic: str, replicas: Mapping[int, list[int]]) -> None:
    """Write ``/brokers/topics/[topic]`` and each partition's state (leader = first replica)."""
    assignment = {str(p): list(r) for p, r in sorted(replicas.items())}
    base = f"{BROKER_TOPICS_PATH}/{topic}"
    update_persistent(zk, base, kafka_json({"version": 1, "partitions": assignment}))
    for p, r in sorted(replicas.items()):
        state = kafka_json({"controller_epoch": 1, "leader": r[0], "version": 1,
                            "leader_epoch": 0, "isr": list(r)})
        update_persistent(zk, f"{base}/partitions/{p}/state", state)
