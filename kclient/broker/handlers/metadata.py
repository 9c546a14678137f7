"""Metadata (key 3): the live brokers, the controller and every requested topic's leaders.

Any broker describes the whole cluster.  v0 asks for all topics with an empty list, v1+ with a
null list; unknown requested topics are auto-created when the broker allows it (and, v4+, the
request does).
"""
from __future__ import annotations

from kclient.protocol.apis import METADATA
from kclient.protocol.errors import InvalidTopicError
from kclient.protocol.framing import Request

from ..cluster import validate_topic_name
from ..interface import Broker
from .registry import handles

UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
INVALID_TOPIC = InvalidTopicError.errno


def _requested(broker: Broker, request: Request) -> list[str]:
    """Names of the topics asked for (all topics for v0's empty list or v1+'s null)."""
    topics = request.body.topics
    if topics is None or (request.header.api_version == 0 and not topics):
        return broker.cluster.topic_names()
    return [t.name for t in topics]


def _partition(broker: Broker, topic: str, index: int, assigned: int) -> dict:
    """One partition's entry: leader, replicas, ISR (no replication: just the leader)."""
    leader = broker.cluster.leader(topic, index)
    epoch = broker.cluster.leader_epoch(topic, index)
    if leader is None or leader < 0:
        replicas = [assigned] if assigned >= 0 else []
        return {"error_code": LEADER_NOT_AVAILABLE, "partition_index": index, "leader_id": -1,
                "leader_epoch": epoch, "replica_nodes": replicas, "isr_nodes": [],
                "offline_replicas": replicas}
    return {"error_code": 0, "partition_index": index, "leader_id": leader,
            "leader_epoch": epoch, "replica_nodes": [leader], "isr_nodes": [leader],
            "offline_replicas": []}


def _topic(broker: Broker, name: str, auto_create: bool) -> dict:
    """One topic's entry, auto-creating it if allowed."""
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return {"error_code": INVALID_TOPIC, "name": name, "is_internal": False, "partitions": []}
    leaders = broker.cluster.partitions(name)
    if leaders is None and auto_create and broker.ensure_topic(name):
        leaders = broker.cluster.partitions(name)
    if leaders is None:
        return {"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": name, "is_internal": False,
                "partitions": []}
    parts = [_partition(broker, name, p, leaders[p]) for p in sorted(leaders)]
    return {"error_code": 0, "name": name, "is_internal": False, "partitions": parts}


@handles(METADATA, "0-9")
def handle(broker: Broker, request: Request) -> dict:
    """Describe the brokers and the requested topics."""
    auto = getattr(request.body, "allow_auto_topic_creation", True) \
        and broker.config.get_bool("auto.create.topics.enable")
    brokers = [{"node_id": b.node_id, "host": b.advertised_host, "port": b.advertised_port,
                "rack": b.rack} for b in broker.cluster.live_brokers()]
    topics = [_topic(broker, name, auto) for name in _requested(broker, request)]
    return {"throttle_time_ms": 0, "brokers": brokers,
            "cluster_id": broker.config.get("cluster.id"),
            "controller_id": broker.cluster.controller_id(), "topics": topics}
