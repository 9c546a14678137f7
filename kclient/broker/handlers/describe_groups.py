"""DescribeGroups (key 15) v0-v6: each group's state, protocol and members.

Members' metadata and assignments are given only while the group is Stable (as Kafka). An
unknown group is described as Dead; from v6 it also carries GROUP_ID_NOT_FOUND.  A KIP-848
consumer group is not a classic group: Dead, and from v6 GROUP_ID_NOT_FOUND saying so (Kafka's
answer; ConsumerGroupDescribe describes it).  Authorized
operations (v3+, when asked) are the group's every operation, as Kafka with no authorizer.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import DESCRIBE_GROUPS
from kclient.protocol.error_codes import GroupAuthorizationFailedError, GroupIdNotFoundError
from kclient.protocol.framing import Request

from ..authorizer import allowed, authorized_operations
from ..group import DEAD, NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles

GROUP_ID_NOT_FOUND = GroupIdNotFoundError.errno


def _unknown(group_id: str, code: int, message: str | None) -> dict[str, Any]:
    """A Dead group without members (unknown here, or coordinated elsewhere)."""
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": DEAD,
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
    }


def _describe(broker: Broker, request: Request, group_id: str, version: int) -> dict[str, Any]:
    """One group's entry (GROUP_AUTHORIZATION_FAILED without Describe on it)."""
    if not allowed(broker, request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return _unknown(group_id, GroupAuthorizationFailedError.errno, None)
    if not is_local_coordinator(broker, group_id):
        return _unknown(group_id, NOT_COORDINATOR, None)
    if broker.coordinator.consumer.has(group_id):
        if version >= 6:
            return _unknown(
                group_id, GROUP_ID_NOT_FOUND, f"Group {group_id} is not a classic group."
            )
        return _unknown(group_id, 0, None)
    summary = broker.coordinator.group_summary(group_id)
    if summary is None:
        if version >= 6:
            return _unknown(group_id, GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return _unknown(group_id, 0, None)
    return dict(summary, error_code=0, error_message=None)


@handles(DESCRIBE_GROUPS, "0-6")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Describe every requested group."""
    version, body = request.header.api_version, body_of(request)
    groups = [_describe(broker, request, g, version) for g in body.groups]
    if body.include_authorized_operations:
        with_operations(broker, request, groups)
    return {"throttle_time_ms": 0, "groups": groups}


def with_operations(broker: Broker, request: Request, groups: list[dict[str, Any]]) -> None:
    """Fill in each described group's authorized operations (those without an error)."""
    for group in groups:
        if group["error_code"] == 0:
            group["authorized_operations"] = authorized_operations(
                broker, request, ResourceType.GROUP, group["group_id"]
            )
