"""LeaveGroup (key 13) v0-v4: members leave (one in v0-v2, a batch from v3), a rebalance follows."""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import LEAVE_GROUP
from kclient.protocol.errors import GroupAuthorizationFailedError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


@handles(LEAVE_GROUP, "0-4")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Remove the members; v3+ reports an error per member."""
    body, version = body_of(request), request.header.api_version
    if version >= 3:
        members = list(body.members or ())
        member_ids: list[str | tuple[str, str | None]] = [
            (m.member_id, m.group_instance_id) for m in members
        ]
    else:
        members, member_ids = [], [body.member_id]
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return {
            "throttle_time_ms": 0,
            "error_code": GroupAuthorizationFailedError.errno,
            "members": [],
        }
    if not is_local_coordinator(broker, body.group_id):
        return {"throttle_time_ms": 0, "error_code": NOT_COORDINATOR, "members": []}
    top, codes = broker.coordinator.leave_group(body.group_id, member_ids)
    if version < 3:
        return {"throttle_time_ms": 0, "error_code": top or (codes[0] if codes else 0)}
    return {
        "throttle_time_ms": 0,
        "error_code": top,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": getattr(m, "group_instance_id", None),
                "error_code": code,
            }
            for m, code in zip(members, codes)
        ],
    }
