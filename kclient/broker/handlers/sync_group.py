"""SyncGroup (key 14) v0-v5: the leader hands out assignments; each member receives its own."""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import SYNC_GROUP
from kclient.protocol.errors import GroupAuthorizationFailedError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..coordinator import then
from ..group import INCONSISTENT_GROUP_PROTOCOL, NOT_COORDINATOR, sync_result
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


def _with_throttle(body: dict[str, Any]) -> dict[str, Any]:
    """Add the throttle time every version from v1 carries."""
    return dict(body, throttle_time_ms=0)


@handles(SYNC_GROUP, "0-5")
def handle(broker: Broker, request: Request) -> Any:
    """Sync with the coordinator; a Future while the leader's assignment is awaited."""
    body: Any = body_of(request)
    version = request.header.api_version
    if version >= 5 and (body.protocol_type is None or body.protocol_name is None):
        # mandatory from v5: Kafka refuses before looking at the group
        return _with_throttle(sync_result(INCONSISTENT_GROUP_PROTOCOL))
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return _with_throttle(sync_result(GroupAuthorizationFailedError.errno))
    if not is_local_coordinator(broker, body.group_id):
        return _with_throttle(sync_result(NOT_COORDINATOR))
    assignments = {a.member_id: bytes(a.assignment) for a in body.assignments or ()}
    future = broker.coordinator.sync_group(
        body.group_id,
        body.generation_id,
        body.member_id,
        assignments,
        protocol_type=body.protocol_type if version >= 5 else None,
        protocol_name=body.protocol_name if version >= 5 else None,
        group_instance_id=body.group_instance_id if version >= 3 else None,
    )
    return then(future, _with_throttle)
