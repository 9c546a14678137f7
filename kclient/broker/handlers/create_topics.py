"""CreateTopics (key 19): create topics with a partition count or a manual assignment.

Errors are per topic: INVALID_TOPIC_EXCEPTION (17), TOPIC_ALREADY_EXISTS (36),
INVALID_PARTITIONS (37), INVALID_REPLICATION_FACTOR (38), INVALID_REPLICA_ASSIGNMENT (39),
INVALID_CONFIG (40), INVALID_REQUEST (42) for a topic named twice in one request,
KAFKA_STORAGE_ERROR (56) when a partition's files cannot be created (nothing of that topic kept).

Limits per request, as Kafka 4's controller: more than 10,000 partitions over all topics fails
every topic with POLICY_VIOLATION (44) "Excessively large number of partitions per request.";
more than 10,000 metadata records (a topic record, one per partition, one per config) fails every
topic with POLICY_VIOLATION "Unable to perform excessively large batch operation.".
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kclient.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from kclient.protocol.apis import CREATE_TOPICS
from kclient.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    PolicyViolationError,
    TopicAuthorizationFailedError,
)
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..cluster import EXCESSIVE_PARTITIONS, MAX_PARTITIONS_PER_REQUEST
from ..interface import Broker, body_of
from .registry import handles


def _create(broker: Broker, topic: Any, validate_only: bool) -> dict[str, Any]:
    """Create one topic; returns its response entry."""
    partitions = topic.num_partitions
    if partitions == -1 and not topic.assignments:
        partitions = broker.config.get_int("num.partitions", 1)
    assignment = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    config = {c.name: c.value for c in topic.configs if c.value is not None}
    try:
        leaders = broker.cluster.create_topic(
            topic.name,
            partitions,
            config,
            replication_factor=topic.replication_factor,
            assignment=assignment or None,
            validate_only=validate_only,
        )
    except BrokerResponseError as exc:
        return _failed(topic.name, exc)
    return {
        "name": topic.name,
        "error_code": 0,
        "error_message": None,
        "num_partitions": len(leaders),
        "replication_factor": 1,
        "configs": [],
    }


TOPIC_AUTHORIZATION_FAILED = TopicAuthorizationFailedError.errno
#: Kafka's controller limit on the records one request may write (MAX_RECORDS_PER_USER_OP).
MAX_RECORDS_PER_REQUEST = 10000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."


def _failed(name: str, exc: BrokerResponseError) -> dict[str, Any]:
    """A topic's error entry; the message is the error's own text, as Kafka's."""
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    return {"name": name, "error_code": exc.errno, "error_message": message}


def _partition_count(broker: Broker, topic: Any) -> int:
    """Partitions a topic entry asks for (Kafka's count: the assignment's size, the default
    for -1, nothing for an invalid count)."""
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == -1:
        return broker.config.get_int("num.partitions", 1)
    return max(0, int(topic.num_partitions))


def _request_limit(broker: Broker, topics: list[Any]) -> str | None:
    """Kafka's per-request limits: the message every topic fails with, or None."""
    partitions = sum(_partition_count(broker, t) for t in topics)
    if partitions > MAX_PARTITIONS_PER_REQUEST:
        return EXCESSIVE_PARTITIONS
    records = partitions + sum(1 + len(t.configs) for t in topics)
    if records > MAX_RECORDS_PER_REQUEST:
        return EXCESSIVE_BATCH
    return None


@handles(CREATE_TOPICS, "0-5")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Create every topic of the request (or only validate, v1+)."""
    body = body_of(request)
    counts = Counter(t.name for t in body.topics)
    validate_only = bool(getattr(body, "validate_only", False))
    limit = _request_limit(broker, body.topics)
    if limit is not None:
        refused = PolicyViolationError(limit)
        return {"throttle_time_ms": 0, "topics": [_failed(t.name, refused) for t in body.topics]}
    results = []
    anywhere = allowed(broker, request, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
    for topic in body.topics:
        if counts[topic.name] > 1:
            results.append(
                {
                    "name": topic.name,
                    "error_code": InvalidRequestError.errno,
                    "error_message": "topic named more than once in the request",
                }
            )
        elif not anywhere and not allowed(
            broker, request, AclOperation.CREATE, ResourceType.TOPIC, topic.name
        ):
            results.append(
                {
                    "name": topic.name,
                    "error_code": TOPIC_AUTHORIZATION_FAILED,
                    "error_message": "Authorization failed.",
                }
            )
        else:
            results.append(_create(broker, topic, validate_only))
    return {"throttle_time_ms": 0, "topics": results}
