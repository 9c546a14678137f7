"""CreatePartitions (key 37) v0-v3: add partitions to existing topics.

Errors are per topic, with Kafka's messages: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (a
count not above the current one), INVALID_REPLICA_ASSIGNMENT (assignments not matching the new
partitions or naming unknown brokers), INVALID_REQUEST (a topic named twice).  A request adding
more than 10,000 partitions over all its topics fails every topic with POLICY_VIOLATION, as
Kafka 4's controller does (checked against Kafka 4.4.0).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import CREATE_PARTITIONS
from kclient.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    PolicyViolationError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..cluster import EXCESSIVE_ADDITIONAL, MAX_PARTITIONS_PER_REQUEST
from ..interface import Broker, body_of
from .registry import handles


def _create(broker: Broker, topic: Any, validate_only: bool) -> dict[str, Any]:
    """Add one topic's partitions; its result entry."""
    assignment = (
        None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
    )
    try:
        broker.cluster.create_partitions(topic.name, topic.count, assignment, validate_only)
    except BrokerResponseError as exc:  # Kafka names no reason for an unknown topic
        message = None if exc.errno == UnknownTopicOrPartitionError.errno else exc.context
        return {"name": topic.name, "error_code": exc.errno, "error_message": message}
    return {"name": topic.name, "error_code": 0, "error_message": None}


def _additional(broker: Broker, topics: list[Any]) -> int:
    """Partitions the request would add to the existing topics it names (Kafka's count)."""
    total = 0
    for topic in topics:
        current = broker.cluster.partitions(topic.name)
        if current is not None:
            total += max(0, topic.count - len(current))
    return total


@handles(CREATE_PARTITIONS, "0-3")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Grow every topic of the request (or only validate)."""
    body = body_of(request)
    counts = Counter(t.name for t in body.topics)
    if _additional(broker, body.topics) > MAX_PARTITIONS_PER_REQUEST:
        return {
            "throttle_time_ms": 0,
            "results": [
                {
                    "name": t.name,
                    "error_code": PolicyViolationError.errno,
                    "error_message": EXCESSIVE_ADDITIONAL,
                }
                for t in body.topics
            ],
        }
    results = []
    for topic in body.topics:
        if counts[topic.name] > 1:
            results.append(
                {
                    "name": topic.name,
                    "error_code": InvalidRequestError.errno,
                    "error_message": f"Duplicate topic {topic.name} in request.",
                }
            )
        elif not allowed(broker, request, AclOperation.ALTER, ResourceType.TOPIC, topic.name):
            results.append(
                {
                    "name": topic.name,
                    "error_code": TopicAuthorizationFailedError.errno,
                    "error_message": "Authorization failed.",
                }
            )
        else:
            results.append(_create(broker, topic, bool(body.validate_only)))
    return {"throttle_time_ms": 0, "results": results}
