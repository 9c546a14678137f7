"""Metadata (key 3) v0-v12: the live brokers, the controller and every requested topic's leaders.

Any broker describes the whole cluster.  v0 asks for all topics with an empty list, v1+ with a
null list; unknown requested topics are auto-created when the broker allows it (and, v4+, the
request does).  With an authorizer, a request for all topics leaves out those the principal may
not Describe and a named one answers TOPIC_AUTHORIZATION_FAILED (as does auto-creating without
Create on the cluster or the topic).  Authorized operations (v8+) are filled in when asked for,
for the requester (every operation with no authorizer, as Kafka); topic ids (v10+) are the
topics' own (``topic_ids.py``), and a v12 lookup by an unknown id answers UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import CLUSTER_NAME, NOT_REQUESTED, AclOperation, ResourceType
from kclient.protocol.apis import METADATA
from kclient.protocol.framing import Request

from ..authorizer import allowed, authorized_operations
from ..cluster import validate_topic_name
from ..interface import Broker, body_of
from .registry import handles

UNKNOWN_TOPIC_OR_PARTITION = E.UnknownTopicOrPartitionError.errno
LEADER_NOT_AVAILABLE = E.LeaderNotAvailableError.errno
INVALID_TOPIC = E.InvalidTopicError.errno
UNKNOWN_TOPIC_ID = E.UnknownTopicIdError.errno
TOPIC_AUTHORIZATION_FAILED = E.TopicAuthorizationFailedError.errno
ZERO_UUID = bytes(16)


def _requested(broker: Broker, request: Request) -> list[Any]:
    """The topics asked for: names, or (v12) the ids of nameless entries; all for v0's empty
    list or v1+'s null (only those the principal may Describe)."""
    topics = body_of(request).topics
    if topics is None or (request.header.api_version == 0 and not topics):
        return [
            name
            for name in broker.cluster.topic_names()
            if allowed(broker, request, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
        ]
    return [t.name if t.name is not None else bytes(t.topic_id) for t in topics]


def _partition(broker: Broker, topic: str, index: int, assigned: int) -> dict[str, Any]:
    """One partition's entry: leader, replicas, ISR (no replication: just the leader)."""
    leader = broker.cluster.leader(topic, index)
    epoch = broker.cluster.leader_epoch(topic, index)
    if leader is None or leader < 0:
        replicas = [assigned] if assigned >= 0 else []
        return {
            "error_code": LEADER_NOT_AVAILABLE,
            "partition_index": index,
            "leader_id": -1,
            "leader_epoch": epoch,
            "replica_nodes": replicas,
            "isr_nodes": [],
            "offline_replicas": replicas,
        }
    return {
        "error_code": 0,
        "partition_index": index,
        "leader_id": leader,
        "leader_epoch": epoch,
        "replica_nodes": [leader],
        "isr_nodes": [leader],
        "offline_replicas": [],
    }


def _entry(
    code: int,
    name: str | None,
    parts: list[dict[str, Any]] | None = None,
    topic_id: bytes = ZERO_UUID,
) -> dict[str, Any]:
    """One topic's entry."""
    return {
        "error_code": code,
        "name": name,
        "topic_id": topic_id,
        "is_internal": False,
        "partitions": parts or [],
    }


def _topic(
    broker: Broker, request: Request, name: str | bytes, auto_create: bool
) -> dict[str, Any]:
    """One topic's entry, auto-creating it if allowed."""
    if isinstance(name, bytes):  # v12 lookup by id
        known = broker.cluster.topic_by_id(name) if name != ZERO_UUID else None
        if known is None:
            return _entry(UNKNOWN_TOPIC_ID, None, topic_id=name)
        name = known
    if not allowed(broker, request, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        return _entry(TOPIC_AUTHORIZATION_FAILED, name)
    try:
        validate_topic_name(name)
    except E.InvalidTopicError:
        return _entry(INVALID_TOPIC, name)
    leaders = broker.cluster.partitions(name)
    if leaders is None and auto_create and not _may_create(broker, request, name):
        return _entry(TOPIC_AUTHORIZATION_FAILED, name)
    if leaders is None and auto_create and broker.ensure_topic(name):
        leaders = broker.cluster.partitions(name)
    if leaders is None:
        return _entry(UNKNOWN_TOPIC_OR_PARTITION, name)
    return _entry(
        0,
        name,
        [_partition(broker, name, p, leaders[p]) for p in sorted(leaders)],
        broker.cluster.topic_id(name),
    )


def _may_create(broker: Broker, request: Request, name: str) -> bool:
    """Create on the cluster, or on the topic."""
    return allowed(
        broker, request, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME
    ) or allowed(broker, request, AclOperation.CREATE, ResourceType.TOPIC, name)


@handles(METADATA, "0-12")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Describe the brokers and the requested topics."""
    body = body_of(request)
    auto = body.allow_auto_topic_creation and broker.config.get_bool("auto.create.topics.enable")
    brokers = [
        {"node_id": b.node_id, "host": host, "port": port, "rack": b.rack}
        for b in broker.cluster.live_brokers()
        for host, port in [b.endpoint(request.listener)]
    ]
    topics = [_topic(broker, request, name, auto) for name in _requested(broker, request)]
    if body.include_topic_authorized_operations:
        for topic in topics:  # every entry, failed ones too, as Kafka does
            topic["topic_authorized_operations"] = authorized_operations(
                broker, request, ResourceType.TOPIC, topic["name"] or ""
            )
    cluster_ops = (
        authorized_operations(broker, request, ResourceType.CLUSTER, CLUSTER_NAME)
        if body.include_cluster_authorized_operations
        else NOT_REQUESTED
    )
    return {
        "throttle_time_ms": 0,
        "brokers": brokers,
        "cluster_id": broker.config.get("cluster.id"),
        "controller_id": broker.cluster.controller_id(),
        "topics": topics,
        "cluster_authorized_operations": cluster_ops,
    }
