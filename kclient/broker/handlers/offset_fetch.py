"""OffsetFetch (key 9) v0-v7: read a group's committed positions.

Null topics (v2+) mean every partition the group has committed; partitions without a
commit answer offset -1 with no error, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import OFFSET_FETCH
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from ..offsets import OffsetEntry, TopicPartition
from .registry import handles


def _requested(
    request: Request, committed: dict[TopicPartition, OffsetEntry]
) -> dict[str, list[int]]:
    """Topic -> partitions to answer for, in request order (all committed when null)."""
    topics = body_of(request).topics
    if topics is None:
        out: dict[str, list[int]] = {}
        for topic, partition in sorted(committed):
            out.setdefault(topic, []).append(partition)
        return out
    out = {}
    for t in topics:
        out.setdefault(t.name, []).extend(t.partition_indexes)
    return out


def _partition(index: int, entry: OffsetEntry | None, error: int = 0) -> dict[str, Any]:
    """One partition's answer: the committed offset or -1."""
    if entry is None:
        return {
            "partition_index": index,
            "committed_offset": -1,
            "committed_leader_epoch": -1,
            "metadata": "",
            "error_code": error,
        }
    return {
        "partition_index": index,
        "committed_offset": entry.offset,
        "committed_leader_epoch": entry.leader_epoch,
        "metadata": entry.metadata or "",
        "error_code": error,
    }


TOPIC_AUTHORIZATION_FAILED = E.TopicAuthorizationFailedError.errno
GROUP_AUTHORIZATION_FAILED = E.GroupAuthorizationFailedError.errno


@handles(OFFSET_FETCH, "0-7")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Look the group's offsets up; NOT_COORDINATOR is top-level from v2, per partition before."""
    body = body_of(request)
    if not allowed(broker, request, AclOperation.DESCRIBE, ResourceType.GROUP, body.group_id):
        return _refused(request, GROUP_AUTHORIZATION_FAILED)
    if not is_local_coordinator(broker, body.group_id):
        return _refused(request, NOT_COORDINATOR)
    wanted = (
        None
        if body.topics is None
        else [(t.name, p) for t in body.topics for p in t.partition_indexes]
    )
    committed = broker.coordinator.fetch_offsets(body.group_id, wanted)
    topics = _requested(request, committed)
    described = {
        name: allowed(broker, request, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
        for name in topics
    }
    if body.topics is None:  # all committed: the topics it may not Describe left out
        topics = {name: parts for name, parts in topics.items() if described[name]}
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "topics": [
            {
                "name": name,
                "partitions": [
                    _partition(p, committed.get((name, p)))
                    if described[name]
                    else _partition(p, None, TOPIC_AUTHORIZATION_FAILED)
                    for p in parts
                ],
            }
            for name, parts in topics.items()
        ],
    }


def _refused(request: Request, code: int) -> dict[str, Any]:
    """The whole request refused: top-level from v2, per partition before."""
    if request.header.api_version >= 2:
        return {"throttle_time_ms": 0, "topics": [], "error_code": code}
    topics = _requested(request, {})
    return {
        "topics": [
            {"name": name, "partitions": [_partition(p, None, code) for p in parts]}
            for name, parts in topics.items()
        ]
    }
