"""DescribeShareGroupOffsets (key 90): each share partition's start offset (SPSO) and lag.

Null topics mean every share partition the group has; a partition without state answers
start offset -1.  Each partition's state is asked of its leader's share coordinator.  Lag
(v1) is the records from SPSO to the end of the log not yet acknowledged or archived.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import DESCRIBE_SHARE_GROUP_OFFSETS
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


def _start_offsets(
    broker: Broker, group_id: str, wanted: list[tuple[str, int]] | None
) -> dict[tuple[str, int], tuple[int, int]]:
    """(SPSO, lag) per partition from the share coordinator of each partition's leader (in a
    MiniCluster the partitions of one group live on several brokers)."""
    found: dict[tuple[str, int], tuple[int, int]] = {}
    for other in broker.cluster.live_brokers():
        share = getattr(other, "share", None)
        if share is None:
            continue
        mine = (
            None
            if wanted is None
            else [tp for tp in wanted if broker.cluster.leader(*tp) == other.node_id]
        )
        for tp, value in share.start_offsets(group_id, mine).items():
            if value != (-1, -1) or tp not in found:
                found[tp] = value
    if wanted is None:
        return found
    return {tp: found.get(tp, (-1, -1)) for tp in wanted}


def _group(broker: Broker, request: Request, group: Any) -> dict[str, Any]:
    """One group's answer."""
    group_id = group.group_id
    refused = (
        E.GroupAuthorizationFailedError.errno
        if not allowed(broker, request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)
        else (
            NOT_COORDINATOR
            if not is_local_coordinator(broker, group_id)
            else (E.GroupIdNotFoundError.errno if not broker.share.is_share_group(group_id) else 0)
        )
    )
    if refused:
        return {"group_id": group_id, "topics": [], "error_code": refused, "error_message": None}
    wanted = (
        None
        if group.topics is None
        else [(t.topic_name, p) for t in group.topics for p in t.partitions]
    )
    offsets = _start_offsets(broker, group_id, wanted)
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), (start, lag) in (
        sorted(offsets.items()) if wanted is None else offsets.items()
    ):
        code = (
            0
            if allowed(broker, request, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
            else E.TopicAuthorizationFailedError.errno
        )
        topics.setdefault(topic, []).append(
            {
                "partition_index": index,
                "start_offset": start if not code else -1,
                "leader_epoch": broker.cluster.leader_epoch(topic, index),
                "lag": lag,
                "error_code": code,
                "error_message": None,
            }
        )
    return {
        "group_id": group_id,
        "error_code": 0,
        "error_message": None,
        "topics": [
            {"topic_name": t, "topic_id": broker.cluster.topic_id(t), "partitions": parts}
            for t, parts in topics.items()
        ],
    }


@handles(DESCRIBE_SHARE_GROUP_OFFSETS, "0-1")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Describe every requested group's share-partition offsets."""
    return {
        "throttle_time_ms": 0,
        "groups": [_group(broker, request, g) for g in body_of(request).groups],
    }
