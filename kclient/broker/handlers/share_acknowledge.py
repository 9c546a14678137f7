"""ShareAcknowledge (key 79) v1-v2: acknowledge records of a share session without fetching.

Accept, release, reject, gap (and, v2, renew) per offset range; the session epoch must be the
next one (epoch 0 cannot open a session here: INVALID_SHARE_SESSION_EPOCH), -1 closes the
session after applying the acknowledgements and releases what the member still holds.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import SHARE_ACKNOWLEDGE
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of
from ..share.requests import ack_batches, leader, refusal, resolve
from ..share.sessions import CLOSE, OPEN
from .registry import handles


def _top(code: int, message: str | None = None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "acquisition_lock_timeout_ms": 0,
        "responses": [],
        "node_endpoints": [],
    }


@handles(SHARE_ACKNOWLEDGE, "1-2")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Apply the acknowledgements; one error code per partition."""
    body = body_of(request)
    group_id, member_id, epoch = body.group_id, body.member_id, body.share_session_epoch
    code, message = refusal(broker, request, body)
    if code:
        return _top(code, message)
    if epoch == OPEN:
        return _top(
            E.InvalidShareSessionEpochError.errno, "ShareAcknowledge cannot open a share session."
        )
    resolved = resolve(
        body.topics,
        broker.cluster.topic_by_id,
        lambda name: allowed(broker, request, AclOperation.READ, ResourceType.TOPIC, name),
    )
    code, _ = broker.share.open_session(group_id, member_id, epoch, [], [])
    if code:
        return _top(code)
    codes = broker.share.acknowledge(group_id, member_id, ack_batches(body.topics, resolved))
    if epoch == CLOSE:
        broker.share.close_session(group_id, member_id)
    responses = []
    for topic in body.topics:
        tid = bytes(topic.topic_id)
        name = resolved.names.get(tid)
        parts = []
        for p in topic.partitions:
            index = p.partition_index
            error = (
                resolved.refused.get((tid, index)) if name is None else codes.get((name, index), 0)
            )
            parts.append(
                {
                    "partition_index": index,
                    "error_code": error or 0,
                    "error_message": None,
                    "current_leader": leader(broker, name, index)
                    if name
                    else {"leader_id": -1, "leader_epoch": -1},
                }
            )
        responses.append({"topic_id": tid, "partitions": parts})
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": broker.share.group_settings(group_id).lock_ms,
        "responses": responses,
        "node_endpoints": [],
    }
