"""AlterShareGroupOffsets (key 91): set share partitions' start offsets (an offset reset).

Only while the group has no members (NON_EMPTY_GROUP otherwise, as Kafka); every in-flight
record state of the partition is dropped and delivery starts over at the offset given, which
must lie within the log (OFFSET_OUT_OF_RANGE otherwise).  Each partition is reset by its
leader's share coordinator (a MiniCluster's partitions live on several brokers).
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import ALTER_SHARE_GROUP_OFFSETS
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


def _led_by(
    broker: Broker, leader: Any, offsets: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    """The offsets of the partitions ``leader`` leads (this broker: also those nobody leads,
    which it answers with the partition's error)."""

    def leads(tp: tuple[str, int]) -> bool:
        node = broker.cluster.leader(*tp)
        return node == leader.node_id or (leader is broker and (node is None or node < 0))

    return {tp: offset for tp, offset in offsets.items() if leads(tp)}


def _top(code: int, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": []}


@handles(ALTER_SHARE_GROUP_OFFSETS, "0-0")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Reset the named share partitions."""
    body = body_of(request)
    group_id = body.group_id
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, group_id):
        return _top(E.GroupAuthorizationFailedError.errno)
    if not is_local_coordinator(broker, group_id):
        return _top(NOT_COORDINATOR)
    if broker.coordinator.group_state(group_id) != "Dead":
        return _top(E.GroupIdNotFoundError.errno, f"Group {group_id} is not a share group.")
    denied = {
        t.topic_name
        for t in body.topics
        if not allowed(broker, request, AclOperation.READ, ResourceType.TOPIC, t.topic_name)
    }
    offsets = {
        (t.topic_name, p.partition_index): p.start_offset
        for t in body.topics
        if t.topic_name not in denied
        for p in t.partitions
    }
    code, codes = broker.share.alter_offsets(group_id, _led_by(broker, broker, offsets))
    if code:
        return _top(code, f"Group {group_id} is not empty.")
    for other in broker.cluster.live_brokers():  # a MiniCluster's other leaders
        share = getattr(other, "share", None)
        mine = _led_by(broker, other, offsets)
        if other is not broker and share is not None and mine:
            codes.update(share.alter_offsets(group_id, mine)[1])
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "responses": [
            {
                "topic_name": t.topic_name,
                "topic_id": broker.cluster.topic_id(t.topic_name),
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_message": None,
                        "error_code": E.TopicAuthorizationFailedError.errno
                        if t.topic_name in denied
                        else codes.get((t.topic_name, p.partition_index), 0),
                    }
                    for p in t.partitions
                ],
            }
            for t in body.topics
        ],
    }
