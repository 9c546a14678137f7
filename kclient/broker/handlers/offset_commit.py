"""OffsetCommit (key 8) v0-v9: store a group's consumed positions durably.

v0 (the ZooKeeper era, no generation) is a simple commit; v1+ checks the member and
generation, where generation -1 with no member id is a simple commit into an Empty group.
v1 may carry per-partition commit timestamps and v2-v4 a retention time, both honoured.
A KIP-848 consumer group's member commits with v9+ and its member epoch (STALE_MEMBER_EPOCH
when it is not the member's current one).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kclient.protocol import errors as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import OFFSET_COMMIT
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..group import NOT_COORDINATOR
from ..interface import Broker, body_of, is_local_coordinator
from ..offsets import OffsetEntry, TopicPartition
from .registry import handles

UNKNOWN_TOPIC_OR_PARTITION = E.UnknownTopicOrPartitionError.errno
OFFSET_METADATA_TOO_LARGE = E.OffsetMetadataTooLargeError.errno
TOPIC_AUTHORIZATION_FAILED = E.TopicAuthorizationFailedError.errno
GROUP_AUTHORIZATION_FAILED = E.GroupAuthorizationFailedError.errno


def _partition_checker(broker: Broker) -> Callable[[str, int], bool]:
    """Whether a partition exists, cluster-wide (the coordinator stores offsets for partitions
    other brokers lead)."""
    cluster = broker.cluster
    return lambda topic, partition: partition in (cluster.partitions(topic) or ())


def _entries(
    broker: Broker, request: Request
) -> tuple[dict[TopicPartition, OffsetEntry], dict[TopicPartition, int]]:
    """Split the request into storable entries and per-partition errors."""
    body, version = body_of(request), request.header.api_version
    now_ms = int(time.time() * 1000)
    retention = body.retention_time_ms if 2 <= version <= 4 else -1
    expire_ms = now_ms + retention if retention >= 0 else -1
    exists = _partition_checker(broker)
    max_meta = broker.coordinator.metadata_max_bytes
    entries: dict[TopicPartition, OffsetEntry] = {}
    errors: dict[TopicPartition, int] = {}
    for topic in body.topics:
        readable = allowed(broker, request, AclOperation.READ, ResourceType.TOPIC, topic.name)
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if not readable:
                errors[tp] = TOPIC_AUTHORIZATION_FAILED
            elif not exists(topic.name, p.partition_index):
                errors[tp] = UNKNOWN_TOPIC_OR_PARTITION
            elif len(metadata.encode()) > max_meta:
                errors[tp] = OFFSET_METADATA_TOO_LARGE
            else:
                stamp = p.commit_timestamp if version == 1 and p.commit_timestamp >= 0 else now_ms
                entries[tp] = OffsetEntry(
                    p.committed_offset, metadata, p.committed_leader_epoch, stamp, expire_ms
                )
    return entries, errors


def _response(
    request: Request, errors: dict[TopicPartition, int], unknown: set[TopicPartition]
) -> dict[str, Any]:
    """Per-partition error codes, ordered as Kafka's: the partitions refused as unknown first
    (in request order), then those the coordinator answered, merged into their topics."""
    body: Any = body_of(request)
    topics: dict[str, list[dict[str, Any]]] = {}
    for first in (True, False):
        for t in body.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                if (tp in unknown) == first:
                    topics.setdefault(t.name, []).append(
                        {"partition_index": p.partition_index, "error_code": errors.get(tp, 0)}
                    )
    return {
        "throttle_time_ms": 0,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
    }


@handles(OFFSET_COMMIT, "0-9")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Validate and store the offsets; every partition gets its own error code (all of them
    GROUP_AUTHORIZATION_FAILED without Read on the group)."""
    body, version = body_of(request), request.header.api_version
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        every = {
            (t.name, p.partition_index): GROUP_AUTHORIZATION_FAILED
            for t in body.topics
            for p in t.partitions
        }
        return _response(request, every, set())
    entries, errors = _entries(broker, request)
    unknown = {
        tp
        for tp, code in errors.items()
        if code in (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED)
    }
    if not is_local_coordinator(broker, body.group_id):
        errors.update(
            {
                (t.name, p.partition_index): NOT_COORDINATOR
                for t in body.topics
                for p in t.partitions
                if (t.name, p.partition_index) not in unknown
            }
        )
        return _response(request, errors, unknown)
    if entries:
        code = broker.coordinator.commit_offsets(
            body.group_id,
            body.generation_id_or_member_epoch,
            body.member_id or "",
            entries,
            check_membership=version >= 1,
            group_instance_id=body.group_instance_id if version >= 7 else None,
            api_version=version,
        )
        errors.update(code if isinstance(code, dict) else dict.fromkeys(entries, code))
    return _response(request, errors, unknown)
