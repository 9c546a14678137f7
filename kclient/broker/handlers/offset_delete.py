"""OffsetDelete (key 47) v0: drop a group's committed offsets of topics it does not read.

As Kafka: an unknown group is GROUP_ID_NOT_FOUND; a group of another protocol type that still has
members is NON_EMPTY_GROUP; per partition, an unknown one is UNKNOWN_TOPIC_OR_PARTITION and a
topic a member subscribes to is GROUP_SUBSCRIBED_TO_TOPIC; the rest are deleted.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import OFFSET_DELETE
from kclient.protocol.error_codes import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import EMPTY, NOT_COORDINATOR
from ..interface import Broker, is_local_coordinator
from .registry import handles


def _answer(code: int, topics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"error_code": code, "throttle_time_ms": 0, "topics": topics or []}


def _partition_code(broker: Broker, subscribed: set[str] | None, topic: str, partition: int) -> int:
    """Why one partition's offset may not be deleted, or 0."""
    if partition not in (broker.cluster.partitions(topic) or ()):
        return UnknownTopicOrPartitionError.errno
    if subscribed is None or topic in subscribed:
        return GroupSubscribedToTopicError.errno
    return 0


@handles(OFFSET_DELETE, "0")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Delete what may be deleted; report every partition."""
    body: Any = request.body
    group = body.group_id
    if not allowed(broker, request, AclOperation.DELETE, ResourceType.GROUP, group):
        return _answer(GroupAuthorizationFailedError.errno)
    if not is_local_coordinator(broker, group):
        return _answer(NOT_COORDINATOR)
    summary = broker.coordinator.group_summary(group)
    if summary is None:
        return _answer(GroupIdNotFoundError.errno)
    if summary["protocol_type"] not in ("consumer", "") and summary["group_state"] != EMPTY:
        return _answer(NonEmptyGroupError.errno)
    subscribed = broker.coordinator.subscriptions(group)
    readable = {
        t.name: allowed(broker, request, AclOperation.READ, ResourceType.TOPIC, t.name)
        for t in body.topics
    }
    codes = {
        (t.name, p.partition_index): _partition_code(broker, subscribed, t.name, p.partition_index)
        if readable[t.name]
        else TopicAuthorizationFailedError.errno
        for t in body.topics
        for p in t.partitions
    }
    doomed = [tp for tp, code in codes.items() if not code]
    if doomed:
        broker.coordinator.offsets.delete(group, doomed)
    return _answer(0, _ordered(body, codes))


def _ordered(body: Any, codes: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    """Kafka's order: partitions refused as unknown first (in request order), then the rest,
    each topic once."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for unknown_first in (True, False):
        for t in body.topics:
            for p in t.partitions:
                code = codes[(t.name, p.partition_index)]
                refused = code in (
                    UnknownTopicOrPartitionError.errno,
                    TopicAuthorizationFailedError.errno,
                )
                if refused == unknown_first:
                    topics.setdefault(t.name, []).append(
                        {"partition_index": p.partition_index, "error_code": code}
                    )
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]
