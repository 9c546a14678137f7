"""ShareGroupHeartbeat (key 76): join, stay in or leave a share group; the coordinator assigns.

As Kafka: without Read on the group GROUP_AUTHORIZATION_FAILED; a group another broker
coordinates NOT_COORDINATOR; a classic or KIP-848 consumer group of the same id
GROUP_ID_NOT_FOUND. The
assignment (topic ids and partitions) is sent when it changed since the member was last told.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import SHARE_GROUP_HEARTBEAT
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import DEAD, NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles

GROUP_ID_NOT_FOUND = E.GroupIdNotFoundError.errno
INVALID_REQUEST = E.InvalidRequestError.errno


def _error(code: int, message: str | None = None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "member_id": None,
        "member_epoch": -1,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    }


@handles(SHARE_GROUP_HEARTBEAT, "1-1")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """One member's heartbeat, answered with its epoch and (when new) its assignment."""
    body = body_of(request)
    group_id = body.group_id
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, group_id):
        return _error(E.GroupAuthorizationFailedError.errno)
    if not group_id:
        return _error(INVALID_REQUEST, "GroupId can't be empty.")
    if not is_local_coordinator(broker, group_id):
        return _error(NOT_COORDINATOR)
    if broker.coordinator.group_state(group_id) != DEAD or broker.coordinator.consumer.has(
        group_id
    ):
        return _error(GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    answer = broker.share.heartbeat(
        group_id,
        body.member_id,
        body.member_epoch,
        body.rack_id,
        body.subscribed_topic_names,
        request.header.client_id or "",
        "/" + request.client_host if request.client_host else "",
    )
    assignment = answer.pop("assignment")
    if assignment is not None:
        assignment = {
            "topic_partitions": [
                {"topic_id": broker.cluster.topic_id(topic), "partitions": parts}
                for topic, parts in assignment.items()
            ]
        }
    return dict(answer, throttle_time_ms=0, error_message=None, assignment=assignment)
