"""DeleteRecords (key 21) v0-v2: move partitions' log start offset (low watermark) forward.

Offset -1 means the high watermark; an offset beyond it (or negative) is OFFSET_OUT_OF_RANGE;
a partition this broker does not lead gets the leadership error.  Whole segments below the new
start are deleted; the start offset survives a restart.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import DELETE_RECORDS
from kclient.protocol.apis.delete_records import HIGH_WATERMARK
from kclient.protocol.errors import OffsetOutOfRangeError, TopicAuthorizationFailedError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of
from .registry import handles


def _delete(broker: Broker, topic: str, part: Any, permitted: bool) -> dict[str, Any]:
    """One partition's result (without Delete on the topic, TOPIC_AUTHORIZATION_FAILED)."""
    entry = {"partition_index": part.partition_index, "low_watermark": -1, "error_code": 0}
    log_, code = (
        broker.partition_log(topic, part.partition_index)
        if permitted
        else (None, TopicAuthorizationFailedError.errno)
    )
    if log_ is None:
        return dict(entry, error_code=code)
    offset = log_.log_end_offset if part.offset == HIGH_WATERMARK else part.offset
    try:
        entry["low_watermark"] = log_.delete_records_before(offset)
    except OffsetOutOfRangeError:
        entry["error_code"] = OffsetOutOfRangeError.errno
    return entry


@handles(DELETE_RECORDS, "0-2")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Delete records before the given offset of every requested partition."""
    topics = []
    for t in body_of(request).topics:
        permitted = allowed(broker, request, AclOperation.DELETE, ResourceType.TOPIC, t.name)
        topics.append(
            {
                "name": t.name,
                "partitions": [_delete(broker, t.name, p, permitted) for p in t.partitions],
            }
        )
    return {"throttle_time_ms": 0, "topics": topics}
