"""CreateTopics (key 19): create topics with a partition count or a manual assignment.

Errors are per topic: INVALID_TOPIC_EXCEPTION (17), TOPIC_ALREADY_EXISTS (36),
INVALID_PARTITIONS (37), INVALID_REPLICATION_FACTOR (38), INVALID_REPLICA_ASSIGNMENT (39),
INVALID_CONFIG (40), INVALID_REQUEST (42) for a topic named twice in one request.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from kclient.protocol.apis import CREATE_TOPICS
from kclient.protocol.errors import BrokerResponseError, InvalidRequestError
from kclient.protocol.framing import Request

from ..interface import Broker, body_of
from .registry import handles


def _create(broker: Broker, topic: Any, validate_only: bool) -> dict:
    """Create one topic; returns its response entry."""
    partitions = topic.num_partitions
    if partitions == -1 and not topic.assignments:
        partitions = broker.config.get_int("num.partitions", 1)
    assignment = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    config = {c.name: c.value for c in topic.configs if c.value is not None}
    try:
        leaders = broker.cluster.create_topic(
            topic.name, partitions, config, replication_factor=topic.replication_factor,
            assignment=assignment or None, validate_only=validate_only)
    except BrokerResponseError as exc:
        return {"name": topic.name, "error_code": exc.errno, "error_message": exc.context}
    return {"name": topic.name, "error_code": 0, "error_message": None,
            "num_partitions": len(leaders), "replication_factor": 1, "configs": []}


@handles(CREATE_TOPICS, "0-5")
def handle(broker: Broker, request: Request) -> dict:
    """Create every topic of the request (or only validate, v1+)."""
    body = body_of(request)
    counts = Counter(t.name for t in body.topics)
    validate_only = bool(getattr(body, "validate_only", False))
    results = []
    for topic in body.topics:
        if counts[topic.name] > 1:
            results.append({"name": topic.name, "error_code": InvalidRequestError.errno,
                            "error_message": "topic named more than once in the request"})
            continue
        results.append(_create(broker, topic, validate_only))
    return {"throttle_time_ms": 0, "topics": results}
