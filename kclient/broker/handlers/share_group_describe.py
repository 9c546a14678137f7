"""ShareGroupDescribe (key 77): share groups' state, epochs, members and their assignments."""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import SHARE_GROUP_DESCRIBE
from kclient.protocol.framing import Request

from ..authorizer import allowed, authorized_operations
from ..group import DEAD, NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles

NOT_REQUESTED = -2147483648


def _error(group_id: str, code: int, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": DEAD,
        "group_epoch": -1,
        "assignment_epoch": -1,
        "assignor_name": "",
        "members": [],
        "authorized_operations": NOT_REQUESTED,
    }


def _describe(broker: Broker, request: Request, group_id: str, operations: bool) -> dict[str, Any]:
    """One group's entry."""
    if not allowed(broker, request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return _error(group_id, E.GroupAuthorizationFailedError.errno)
    if not is_local_coordinator(broker, group_id):
        return _error(group_id, NOT_COORDINATOR)
    with broker.share.lock:
        group = broker.share.describe(group_id)
        if group is None:
            return _error(group_id, E.GroupIdNotFoundError.errno, f"Group {group_id} not found.")
        members = [
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "member_epoch": m.epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.topics),
                "assignment": {
                    "topic_partitions": [
                        {"topic_id": broker.cluster.topic_id(t), "topic_name": t, "partitions": p}
                        for t, p in m.assignment.items()
                    ]
                },
            }
            for m in group.members.values()
        ]
        entry = {
            "error_code": 0,
            "error_message": None,
            "group_id": group_id,
            "group_state": group.state,
            "group_epoch": group.epoch,
            "assignment_epoch": group.epoch,
            "assignor_name": "simple",
            "members": members,
            "authorized_operations": NOT_REQUESTED,
        }
    if operations:
        entry["authorized_operations"] = authorized_operations(
            broker, request, ResourceType.GROUP, group_id
        )
    return entry


@handles(SHARE_GROUP_DESCRIBE, "1-1")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Describe every requested group."""
    body = body_of(request)
    return {
        "throttle_time_ms": 0,
        "groups": [
            _describe(broker, request, g, bool(body.include_authorized_operations))
            for g in body.group_ids
        ],
    }
