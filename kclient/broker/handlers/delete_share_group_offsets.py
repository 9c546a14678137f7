"""DeleteShareGroupOffsets (key 92): forget a share group's state on whole topics.

Only while the group has no members (NON_EMPTY_GROUP); the next fetch of a forgotten
partition starts again where the group's ``share.auto.offset.reset`` says.  Every live
broker forgets the partitions it leads.
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
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": []}


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
    denied = {
        n for n in names if not allowed(broker, request, AclOperation.READ, ResourceType.TOPIC, n)
    }
    allowed_names = [n for n in names if n not in denied]
    code, codes = broker.share.delete_offsets(group_id, allowed_names)
    if code:
        return _top(code)
    for other in broker.cluster.live_brokers():  # a MiniCluster's other leaders
        share = getattr(other, "share", None)
        if other is not broker and share is not None and share.is_share_group(group_id):
            codes.update(
                {
                    t: 0
                    for t, c in share.delete_offsets(group_id, allowed_names)[1].items()
                    if c == 0
                }
            )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "responses": [
            {
                "topic_name": n,
                "topic_id": broker.cluster.topic_id(n),
                "error_message": None,
                "error_code": E.TopicAuthorizationFailedError.errno if n in denied else codes[n],
            }
            for n in names
        ],
    }
