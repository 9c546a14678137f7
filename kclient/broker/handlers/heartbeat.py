"""Heartbeat (key 12) v0-v4: keep a member alive; errors tell it to rejoin."""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import HEARTBEAT
from kclient.protocol.errors import GroupAuthorizationFailedError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


@handles(HEARTBEAT, "0-4")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Refresh the member's session; REBALANCE_IN_PROGRESS asks it to rejoin."""
    body = body_of(request)
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return {"throttle_time_ms": 0, "error_code": GroupAuthorizationFailedError.errno}
    if not is_local_coordinator(broker, body.group_id):
        return {"throttle_time_ms": 0, "error_code": NOT_COORDINATOR}
    code = broker.coordinator.heartbeat(
        body.group_id, body.generation_id, body.member_id, getattr(body, "group_instance_id", None)
    )
    return {"throttle_time_ms": 0, "error_code": code}
