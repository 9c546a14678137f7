"""Kafka's ZooKeeper layout without I/O: the znode paths and the JSON each holds, byte for byte.

One definition for the mini-broker's registration (kclient/broker/zk.py) and the clients'
kazoo I/O (kclient/zkutils.py)::

    /brokers/ids/[id]                               ephemeral, broker registration
    /brokers/topics/[topic]                         replica assignment
    /brokers/topics/[topic]/partitions/[p]/state    leader, ISR, epochs
    /config/topics/[topic]                          topic config overrides
    /controller, /controller_epoch                  the controller's id and epoch
    /consumers/[group]/ids|owners|offsets/...       the ZooKeeper consumer of Kafka 0.8

Broker registrations follow Kafka's ``BrokerInfo``: version 5 (features) from
inter.broker.protocol.version 2.7, version 4 (listener map, rack) from 0.10.0, version 2
(endpoints) before -- not 3+ there, since 0.9.0.0 brokers and clients reject it (KAFKA-3100).
Every version keeps the top-level ``host`` and ``port`` a version-1 reader (Kafka 0.8) needs.
Broker-side znodes are written as Kafka 3.x's Jackson writes them (compact, its key order, ``/``
not escaped); a consumer registration as Kafka 0.8's ``Json.encode`` (``/`` escaped as ``\\/``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BROKER_IDS_PATH",
    "BROKER_TOPICS_PATH",
    "CONSUMERS_PATH",
    "CONFIG_TOPICS_PATH",
    "CONTROLLER_PATH",
    "CONTROLLER_EPOCH_PATH",
    "COMMON_PATHS",
    "REGISTRATION_VERSION",
    "BrokerRegistration",
    "GroupDirs",
    "broker_path",
    "topic_path",
    "partition_state_path",
    "topic_config_path",
    "kafka_json",
    "jackson_json",
    "registration_version",
    "broker_registration",
    "parse_broker_registration",
    "parse_broker",
    "topic_assignment",
    "parse_topic_assignment",
    "partition_state",
    "parse_partition_leader",
    "topic_config",
    "controller",
    "registration_json",
    "parse_registration",
]

BROKER_IDS_PATH = "/brokers/ids"
BROKER_TOPICS_PATH = "/brokers/topics"
CONSUMERS_PATH = "/consumers"
CONFIG_TOPICS_PATH = "/config/topics"
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"

#: Persistent paths a broker creates at startup (Kafka's ``ZkUtils.setupCommonPaths``).
COMMON_PATHS = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    BROKER_TOPICS_PATH,
    "/config/changes",
    CONFIG_TOPICS_PATH,
    "/admin/delete_topics",
)

#: The registration version Kafka 2.7+ (so 3.x) writes.
REGISTRATION_VERSION = 5


def broker_path(broker_id: int) -> str:
    """``/brokers/ids/[id]``."""
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    """``/brokers/topics/[topic]``."""
    return f"{BROKER_TOPICS_PATH}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/[topic]/partitions/[p]/state``."""
    return f"{BROKER_TOPICS_PATH}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    """``/config/topics/[topic]``."""
    return f"{CONFIG_TOPICS_PATH}/{topic}"


# ---------------------------------------------------------------------- JSON
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _escape(s: str) -> str:
    """A string escaped as Kafka 0.8's ``Utils.JSONEscapeString`` does (``/`` included)."""
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
    """Encode like Kafka 0.8's ``Json.encode`` (compact, insertion order, ``/`` escaped)."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, str):
        return '"' + _escape(obj) + '"'
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, Mapping):
        return (
            "{" + ",".join(kafka_json(str(k)) + ":" + kafka_json(v) for k, v in obj.items()) + "}"
        )
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(kafka_json(v) for v in obj) + "]"
    raise TypeError(f"cannot encode {type(obj).__name__} as Kafka JSON")


def jackson_json(obj: Any) -> bytes:
    """Encode like Kafka 1.1+'s ``Json.encodeAsBytes`` (Jackson: compact, UTF-8, insertion
    order, ``/`` left alone)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------------- broker registration
@dataclass(frozen=True)
class BrokerRegistration:
    """A decoded ``/brokers/ids/[id]``: the PLAINTEXT address, every endpoint, the rack."""

    version: int
    host: str
    port: int
    endpoints: tuple[str, ...] = ()
    rack: str | None = None


def registration_version(inter_broker_protocol_version: str | None) -> int:
    """The version Kafka's ``BrokerInfo`` picks for an inter.broker.protocol.version such as
    "0.9.0", "2.6-IV0" or "3.9" (None: the newest): 5 from 2.7, 4 from 0.10.0, else 2."""
    if not inter_broker_protocol_version:
        return REGISTRATION_VERSION
    release, _, iv = inter_broker_protocol_version.partition("-")
    major, minor = (int(p) for p in release.split(".")[:2])
    if (major, minor) >= (2, 7):
        return 5
    return 4 if (major, minor) > (0, 10) or ((major, minor) == (0, 10) and iv != "IV0") else 2


def broker_registration(
    host: str,
    port: int,
    timestamp_ms: int,
    *,
    version: int = REGISTRATION_VERSION,
    listener: str = "PLAINTEXT",
    rack: str | None = None,
    jmx_port: int = -1,
    listeners: Sequence[tuple[str, str, str, int]] = (),
) -> bytes:
    """``/brokers/ids/[id]`` as Kafka writes it (version 2, 4 or 5; the rack from version 3),
    keys in the order Kafka 3.9 writes them: one PLAINTEXT listener at host:port, or every
    ``listeners`` entry (name, security protocol, host, port), the top-level host and port then
    the PLAINTEXT one's (null and -1 without one), as Kafka's ``BrokerInfo``."""
    if version < 2:
        raise ValueError("Kafka brokers since 0.9 write registration version 2 or later")
    entries = list(listeners) or [(listener, "PLAINTEXT", host, port)]
    top: tuple[str | None, int] = next(
        ((h, p) for _, sp, h, p in entries if sp == "PLAINTEXT"), (None, -1)
    )
    out: dict[str, Any] = {}
    if version >= 5:
        out["features"] = {}
    if version >= 4:
        out["listener_security_protocol_map"] = {name: sp for name, sp, _, _ in entries}
    out["endpoints"] = [f"{name}://{h}:{p}" for name, _, h, p in entries]
    if rack is not None and version >= 3:
        out["rack"] = rack
    out.update(
        {
            "jmx_port": jmx_port,
            "port": top[1],
            "host": top[0],
            "version": version,
            "timestamp": str(timestamp_ms),
        }
    )
    return jackson_json(out)


def parse_broker_registration(
    data: bytes | str, security_protocol: str = "PLAINTEXT"
) -> BrokerRegistration:
    """Decode any registration version (1: host/port; 2+: endpoints); host and port are those of
    the endpoint serving ``security_protocol`` (a client's ``security.protocol``)."""
    obj = json.loads(data)
    version = int(obj.get("version", 1))
    endpoints = tuple(obj.get("endpoints") or ())
    host, port = obj.get("host"), obj.get("port", -1)
    if security_protocol != "PLAINTEXT" or not host or port is None or int(port) < 0:
        host, port = _endpoint_of(obj, endpoints, security_protocol)
    return BrokerRegistration(version, host, int(port), endpoints, obj.get("rack"))


def _endpoint_of(
    obj: Mapping[str, Any], endpoints: Sequence[str], security_protocol: str
) -> tuple[str, int]:
    """(host, port) of the endpoint serving ``security_protocol`` (for PLAINTEXT also the only
    one) of a registration; before version 4 a listener's name is its protocol."""
    protocols = obj.get("listener_security_protocol_map") or {}
    for endpoint in endpoints:
        listener, _, address = endpoint.partition("://")
        served = protocols.get(listener, listener) or "PLAINTEXT"
        if served == security_protocol or (
            security_protocol == "PLAINTEXT" and len(endpoints) == 1
        ):
            host, _, port = address.rpartition(":")
            return host.strip("[]"), int(port)
    raise ValueError(f"broker registration without a {security_protocol} address: {obj!r}")


def parse_broker(data: bytes | str, security_protocol: str = "PLAINTEXT") -> tuple[str, int]:
    """``(host, port)`` a client of ``security_protocol`` connects to, from any registration."""
    registration = parse_broker_registration(data, security_protocol)
    return registration.host, registration.port


# ---------------------------------------------------------------------- topics
def topic_assignment(replicas: Mapping[int, Sequence[int]]) -> bytes:
    """``/brokers/topics/[topic]`` as Kafka 3.x's ``TopicZNode`` writes it (version 3, no
    reassignment in progress, no topic id); a 0.8 reader takes ``partitions`` alone."""
    return jackson_json(
        {
            "partitions": {str(p): list(replicas[p]) for p in sorted(replicas)},
            "adding_replicas": {},
            "removing_replicas": {},
            "version": 3,
        }
    )


def parse_topic_assignment(data: bytes | str) -> dict[int, list[int]]:
    """partition -> replica ids of a topic znode (any version)."""
    obj = json.loads(data)
    return {int(p): [int(r) for r in rs] for p, rs in (obj.get("partitions") or {}).items()}


def partition_state(
    leader: int, leader_epoch: int = 0, isr: Sequence[int] | None = None, controller_epoch: int = 1
) -> bytes:
    """A partition's leader-and-ISR state (every Kafka version writes this version 1)."""
    return jackson_json(
        {
            "controller_epoch": controller_epoch,
            "leader": leader,
            "version": 1,
            "leader_epoch": leader_epoch,
            "isr": list(isr) if isr is not None else [leader],
        }
    )


def parse_partition_leader(data: bytes | str) -> int | None:
    """The leader id of a partition state znode, or None when it has no leader."""
    leader = json.loads(data).get("leader", -1)
    return None if leader is None or leader < 0 else int(leader)


def topic_config(config: Mapping[str, str]) -> bytes:
    """``/config/topics/[topic]``: the topic's overrides."""
    return jackson_json({"version": 1, "config": {str(k): str(v) for k, v in config.items()}})


def controller(broker_id: int, timestamp_ms: int) -> bytes:
    """``/controller`` as a Kafka 3.x ZooKeeper-mode controller writes it."""
    return jackson_json(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": str(timestamp_ms),
            "kraftControllerEpoch": -1,
        }
    )


# ---------------------------------------------------------------------- consumers
class GroupDirs:
    """The znode directories of one consumer group (Kafka's ``ZKGroupDirs``)."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.group_dir = f"{CONSUMERS_PATH}/{group}"
        self.ids_dir = f"{self.group_dir}/ids"
        self.owners_dir = f"{self.group_dir}/owners"
        self.offsets_dir = f"{self.group_dir}/offsets"

    def consumer(self, consumer_id: str) -> str:
        """The consumer's registration znode."""
        return f"{self.ids_dir}/{consumer_id}"

    def owner(self, topic: str, partition: int) -> str:
        """The znode naming the thread that owns a partition."""
        return f"{self.owners_dir}/{topic}/{partition}"

    def offset(self, topic: str, partition: int) -> str:
        """The znode holding a partition's committed offset."""
        return f"{self.offsets_dir}/{topic}/{partition}"


def registration_json(subscription: Mapping[str, int], pattern: str, timestamp_ms: int) -> str:
    """``{"version":1,"subscription":{...},"pattern":"static","timestamp":"<ms>"}``."""
    return kafka_json(
        {
            "version": 1,
            "subscription": dict(subscription),
            "pattern": pattern,
            "timestamp": str(timestamp_ms),
        }
    )


def parse_registration(data: bytes | str) -> tuple[str, dict[str, int]]:
    """``(pattern, subscription)`` of a consumer registration (also the pre-0.8.1 plain map)."""
    obj = json.loads(data)
    if "subscription" not in obj:  # old format: {"topic": #streams}
        return "static", {k: int(v) for k, v in obj.items()}
    return obj.get("pattern", "static"), {k: int(v) for k, v in obj["subscription"].items()}
