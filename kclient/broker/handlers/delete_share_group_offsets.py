"""DeleteShareGroupOffsets (key 92): forget a share group's state on whole topics.

Only while the group has no members (NON_EMPTY_GROUP); the next fetch of a forgotten
partition starts again where the group's ``share.auto.offset.reset`` says.
"""
from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import DELETE_SHARE_GROUP_OFFSETS
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


def _top(code: int, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "responses": []}


@handles(DELETE_SHARE_GROUP_OFFSETS, "0-0")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Delete the group's share partitions of each named topic."""
    body = body_of(request)
    group_id = body.group_id
    if not allowed(broker, request, AclOperation.DELETE, ResourceType.GROUP, group_id):
        return _top(E.GroupAuthorizationFailedError.errno)
    if not is_local_coordinator(broker, group_id):
        return _top(NOT_COORDINATOR)
    names = [t.topic_name for t in body.topics]
    denied = {n for n in names if not allowed(
        broker, request, AclOperation.READ, ResourceType.TOPIC, n)}
    code, codes = broker.share.delete_offsets(group_id, [n for n in names if n not in denied])
    if code:
        return _top(code)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": [
        {"topic_name": n, "topic_id": broker.cluster.topic_id(n), "error_message": None,
         "error_code": E.TopicAuthorizationFailedError.errno if n in denied else codes[n]}
        for n in names]}
