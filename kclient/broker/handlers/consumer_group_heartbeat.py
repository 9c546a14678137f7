"""ConsumerGroupHeartbeat (key 68) v0-v1: a KIP-848 member joins, heartbeats, acknowledges its
assignment and leaves, all in this one API; the coordinator answers at once."""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import CONSUMER_GROUP_HEARTBEAT
from kclient.protocol.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..consumer_coordinator import HeartbeatRequest
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


def _error(code: int, message: str | None = None) -> dict[str, Any]:
    """A response carrying only an error."""
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    }


@handles(CONSUMER_GROUP_HEARTBEAT, "0-1")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Read on the group is required, and Describe on every subscribed topic named (as Kafka)."""
    body, version = body_of(request), request.header.api_version
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return _error(GroupAuthorizationFailedError.errno)
    topics = body.subscribed_topic_names
    if topics and not all(
        allowed(broker, request, AclOperation.DESCRIBE, ResourceType.TOPIC, t) for t in topics
    ):
        return _error(TopicAuthorizationFailedError.errno)
    if not is_local_coordinator(broker, body.group_id):
        return _error(NOT_COORDINATOR)
    owned = body.topic_partitions
    req = HeartbeatRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=body.rebalance_timeout_ms,
        topic_names=None if topics is None else list(topics),
        topic_regex=getattr(body, "subscribed_topic_regex", None),
        assignor=body.server_assignor,
        owned=None if owned is None else [(bytes(t.topic_id), list(t.partitions)) for t in owned],
        client_id=request.header.client_id or "",
        client_host="/" + request.client_host if request.client_host else "",
        version=version,
    )
    return dict(broker.coordinator.consumer.heartbeat(req), throttle_time_ms=0)
