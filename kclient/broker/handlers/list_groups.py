"""ListGroups (key 16) v0-v5: the groups this broker coordinates, with state (v4+) and type (v5+).

Classic groups (and groups that only have committed offsets) are of type ``classic``, KIP-848
groups of type ``consumer`` (protocol type ``consumer``, states Empty, Assigning, Reconciling,
Stable), share groups of type and protocol type ``share``; the filters match
case-insensitively, as Kafka's do.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from kclient.protocol.apis import LIST_GROUPS
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles

CLASSIC, CONSUMER, SHARE = "classic", "consumer", "share"


@handles(LIST_GROUPS, "0-5")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """List the coordinator's groups that pass the state and type filters (without Describe on
    the cluster, only those the principal may Describe)."""
    body = body_of(request)
    every = allowed(broker, request, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
    states = {s.lower() for s in getattr(body, "states_filter", None) or ()}
    types = {t.lower() for t in getattr(body, "types_filter", None) or ()}
    listed = []
    if not types or CLASSIC in types:
        listed += [
            (gid, ptype, state, CLASSIC) for gid, ptype, state in broker.coordinator.list_groups()
        ]
    if not types or CONSUMER in types:
        listed += [
            (gid, CONSUMER, state, CONSUMER) for gid, state in broker.coordinator.consumer.listing()
        ]
    if not types or SHARE in types:
        listed += [
            (gid, SHARE, state, SHARE)
            for gid, state in broker.share.list_groups()
            if is_local_coordinator(broker, gid)
        ]  # not a leader's share partitions
    groups = [
        {"group_id": gid, "protocol_type": ptype, "group_state": state, "group_type": kind}
        for gid, ptype, state, kind in sorted(listed)
        if (not states or state.lower() in states)
        and (every or allowed(broker, request, AclOperation.DESCRIBE, ResourceType.GROUP, gid))
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}
