"""ConsumerGroupDescribe (key 69) v0-v1: a KIP-848 group's state, epochs, assignor and members,
each with its current and target assignment (topic ids and names)."""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import CONSUMER_GROUP_DESCRIBE
from kclient.protocol.error_codes import GroupAuthorizationFailedError, GroupIdNotFoundError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .describe_groups import with_operations
from .registry import handles


def _failed(group_id: str, code: int, message: str | None) -> dict[str, Any]:
    """A group's entry that carries only an error (the other fields at their defaults)."""
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
    }


def _describe(broker: Broker, request: Request, group_id: str) -> dict[str, Any]:
    """One group's entry: GROUP_AUTHORIZATION_FAILED without Describe on it, GROUP_ID_NOT_FOUND
    when it is not a consumer group here (Kafka's messages)."""
    if not allowed(broker, request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return _failed(group_id, GroupAuthorizationFailedError.errno, None)
    if not is_local_coordinator(broker, group_id):
        return _failed(group_id, NOT_COORDINATOR, None)
    found = broker.coordinator.consumer.describe(group_id, broker.cluster.topic_by_id)
    if found is not None:
        return found
    known = broker.coordinator.group_summary(group_id) is not None
    message = (
        f"Group {group_id} is not a consumer group." if known else f"Group {group_id} not found."
    )
    return _failed(group_id, GroupIdNotFoundError.errno, message)


@handles(CONSUMER_GROUP_DESCRIBE, "0-1")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Describe every requested group."""
    body = body_of(request)
    groups = [_describe(broker, request, g) for g in body.group_ids]
    if body.include_authorized_operations:
        with_operations(broker, request, groups)
    return {"throttle_time_ms": 0, "groups": groups}
