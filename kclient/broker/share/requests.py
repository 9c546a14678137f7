"""The parts ShareFetch and ShareAcknowledge have in common: topic ids to names, the
acknowledgement batches of a request, and the answer's partition entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType

from ..authorizer import allowed

__all__ = ["Resolved", "ack_batches", "leader", "refusal", "resolve"]

UNKNOWN_TOPIC_ID = E.UnknownTopicIdError.errno
TOPIC_AUTHORIZATION_FAILED = E.TopicAuthorizationFailedError.errno

TopicPartition = tuple[str, int]


def refusal(broker: Any, request: Any, body: Any) -> tuple[int, str | None]:
    """Whether a share request is refused as a whole: (error code, message), (0, None) if not.
    Both name a group and a member; without Read on the group, GROUP_AUTHORIZATION_FAILED."""
    if not body.group_id or not body.member_id:
        return E.InvalidRequestError.errno, "GroupId and MemberId are required."
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return E.GroupAuthorizationFailedError.errno, None
    return 0, None


class Resolved:
    """A request's topics by name, and the partitions refused (unknown id, no Read)."""

    def __init__(self) -> None:
        self.names: dict[bytes, str] = {}
        self.refused: dict[tuple[bytes, int], int] = {}


def resolve(
    topics: Iterable[Any], by_id: Callable[[bytes], str | None], may_read: Callable[[str], bool]
) -> Resolved:
    """Map each requested topic id to its name; partitions of unknown ids answer
    UNKNOWN_TOPIC_ID, of topics without Read TOPIC_AUTHORIZATION_FAILED."""
    out = Resolved()
    for topic in topics:
        tid = bytes(topic.topic_id)
        name = by_id(tid)
        code = (
            UNKNOWN_TOPIC_ID
            if name is None
            else (0 if may_read(name) else TOPIC_AUTHORIZATION_FAILED)
        )
        if code:
            for p in topic.partitions:
                out.refused[(tid, p.partition_index)] = code
        else:
            assert name is not None
            out.names[tid] = name
    return out


def ack_batches(
    topics: Iterable[Any], resolved: Resolved
) -> dict[TopicPartition, list[tuple[int, int, list[int]]]]:
    """(topic, partition) -> its acknowledgement batches as (first, last, types)."""
    out: dict[TopicPartition, list[tuple[int, int, list[int]]]] = {}
    for topic in topics:
        name = resolved.names.get(bytes(topic.topic_id))
        if name is None:
            continue
        for p in topic.partitions:
            batches = [
                (b.first_offset, b.last_offset, list(b.acknowledge_types))
                for b in (p.acknowledgement_batches or ())
            ]
            if batches:
                out.setdefault((name, p.partition_index), []).extend(batches)
    return out


def leader(broker: Any, topic: str, index: int) -> dict[str, int]:
    """The partition's current leader and epoch (-1 when unknown)."""
    node = broker.cluster.leader(topic, index)
    return {
        "leader_id": node if node is not None else -1,
        "leader_epoch": broker.cluster.leader_epoch(topic, index),
    }
