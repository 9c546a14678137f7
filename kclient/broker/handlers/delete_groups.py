"""DeleteGroups (key 42) v0-v2: delete empty groups and their committed offsets (a share
group: its share-partition state).

As Kafka: a group another broker coordinates is NOT_COORDINATOR, an unknown one
GROUP_ID_NOT_FOUND, one with members NON_EMPTY_GROUP; the rest are deleted.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import DELETE_GROUPS
from kclient.protocol.error_codes import GroupAuthorizationFailedError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


def _delete(broker: Broker, request: Request, group_id: str) -> int:
    """The error code of deleting one group (0: deleted; without Delete on it,
    GROUP_AUTHORIZATION_FAILED)."""
    if not allowed(broker, request, AclOperation.DELETE, ResourceType.GROUP, group_id):
        return GroupAuthorizationFailedError.errno
    if not is_local_coordinator(broker, group_id):
        return NOT_COORDINATOR
    if broker.share.is_share_group(group_id):
        return broker.share.delete_group(group_id)
    return broker.coordinator.delete_group(group_id)


@handles(DELETE_GROUPS, "0-2")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Delete each named group, one result per name."""
    names = list(dict.fromkeys(body_of(request).groups_names))
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": g, "error_code": _delete(broker, request, g)} for g in names],
    }
