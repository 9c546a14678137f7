"""OffsetFetch (key 9) v0-v9: read a group's committed positions.

Null topics (v2+) mean every partition the group has committed; partitions without a
commit answer offset -1 with no error, as Kafka does.  v8+ asks for several groups, each
answered on its own; v9 names the asking member, which a KIP-848 consumer group checks
(UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; a classic member of it ILLEGAL_GENERATION).
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


def _requested(topics: Any, committed: dict[TopicPartition, OffsetEntry]) -> dict[str, list[int]]:
    """Topic -> partitions to answer for, in request order (all committed when null)."""
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


@handles(OFFSET_FETCH, "0-9")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Look the group's offsets up (v8+: each group's); NOT_COORDINATOR is top-level from v2,
    per partition before; v8+ answers per group."""
    body = body_of(request)
    if request.header.api_version >= 8:
        return {
            "throttle_time_ms": 0,
            "groups": [
                _group(broker, request, g.group_id, g.topics, g.member_id, g.member_epoch)
                for g in body.groups
            ],
        }
    answer = _group(broker, request, body.group_id, body.topics)
    if answer["error_code"]:
        return _refused(request, answer["error_code"])
    return {"throttle_time_ms": 0, "error_code": 0, "topics": answer["topics"]}


def _group(
    broker: Broker,
    request: Request,
    group_id: str,
    asked: Any,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> dict[str, Any]:
    """One group's answer: its error code (authorization, coordinator, a KIP-848 member's
    id and epoch: Kafka's validateOffsetFetch) or its offsets."""
    code = 0
    if not allowed(broker, request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        code = GROUP_AUTHORIZATION_FAILED
    elif not is_local_coordinator(broker, group_id):
        code = NOT_COORDINATOR
    else:
        code = broker.coordinator.consumer.fetch_error(group_id, member_id, member_epoch)
    if code:
        return {"group_id": group_id, "topics": [], "error_code": code}
    wanted = None if asked is None else [(t.name, p) for t in asked for p in t.partition_indexes]
    committed = broker.coordinator.fetch_offsets(group_id, wanted)
    topics = _requested(asked, committed)
    described = {
        name: allowed(broker, request, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
        for name in topics
    }
    if asked is None:  # all committed: the topics it may not Describe left out
        topics = {name: parts for name, parts in topics.items() if described[name]}
    return {
        "group_id": group_id,
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
    topics = _requested(body_of(request).topics, {})
    return {
        "topics": [
            {"name": name, "partitions": [_partition(p, None, code) for p in parts]}
            for name, parts in topics.items()
        ]
    }
