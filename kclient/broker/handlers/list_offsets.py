"""ListOffsets (key 2): offsets by time.

v0 returns up to ``max_num_offsets`` offsets before a time, descending (segment base offsets and
the log end), as the 0.8 offset API did; v1+ returns the first offset whose timestamp is at or
after the requested one (-1 latest, -2 earliest).  As Kafka's, a read_committed request
(v2+ ``isolation_level`` 1) is answered below the last stable offset: latest is the LSO, and an
offset found by timestamp at or past it is not found.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import LIST_OFFSETS
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of
from .registry import handles

LATEST, EARLIEST = -1, -2
TOPIC_AUTHORIZATION_FAILED = E.TopicAuthorizationFailedError.errno
INVALID_REQUEST = E.InvalidRequestError.errno


def _v0(log_: Any, req: Any) -> dict[str, Any]:
    """Old-style answer: a list of offsets."""
    offsets = log_.offsets_before(req.timestamp, req.max_num_offsets)
    return {"partition_index": req.partition_index, "error_code": 0, "old_style_offsets": offsets}


def _v1(log_: Any, req: Any, committed: bool = False) -> dict[str, Any]:
    """New-style answer: one (timestamp, offset) pair; -1/-1 when nothing is that new."""
    found = log_.offset_for_timestamp(req.timestamp)
    if committed:
        lso = log_.last_stable_offset
        if req.timestamp == LATEST:
            found = (lso, -1)
        elif req.timestamp != EARLIEST and found is not None and found[0] >= lso:
            found = None
    timestamp, offset = (-1, -1) if found is None else (found[1], found[0])
    if req.timestamp in (LATEST, EARLIEST):
        timestamp = -1
    return {
        "partition_index": req.partition_index,
        "error_code": 0,
        "timestamp": timestamp,
        "offset": offset,
        "leader_epoch": -1,
    }


def _partition(
    broker: Broker, topic: str, req: Any, version: int, permitted: bool, committed: bool = False
) -> dict[str, Any]:
    """One partition's answer (or its error; without Describe on the topic,
    TOPIC_AUTHORIZATION_FAILED)."""
    log_, code = (
        broker.partition_log(topic, req.partition_index)
        if permitted
        else (None, TOPIC_AUTHORIZATION_FAILED)
    )
    if log_ is None:
        return {
            "partition_index": req.partition_index,
            "error_code": code,
            "old_style_offsets": [],
            "timestamp": -1,
            "offset": -1,
        }
    entry = _v0(log_, req) if version == 0 else _v1(log_, req, committed)
    if version >= 4 and entry["offset"] != -1:  # no offset found: no epoch (-1), as Kafka
        entry["leader_epoch"] = broker.cluster.leader_epoch(topic, req.partition_index)
    return entry


def _duplicate(req: Any) -> dict[str, Any]:
    """A partition named more than once in one request (v1+): answered once, INVALID_REQUEST,
    as Kafka does."""
    return {
        "partition_index": req.partition_index,
        "error_code": INVALID_REQUEST,
        "old_style_offsets": [],
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": -1,
    }


@handles(LIST_OFFSETS, "0-5")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Look up offsets for every requested partition."""
    version = request.header.api_version
    body: Any = body_of(request)
    committed = version >= 2 and body.isolation_level == 1
    named = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
    answered: set[tuple[str, int]] = set()
    topics = []
    for t in body.topics:
        permitted = allowed(broker, request, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)
        partitions = []
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if version == 0 or named[tp] == 1:
                partitions.append(_partition(broker, t.name, p, version, permitted, committed))
            elif tp not in answered:  # v1+: one INVALID_REQUEST per named twice
                answered.add(tp)
                partitions.append(_duplicate(p))
        topics.append({"name": t.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
