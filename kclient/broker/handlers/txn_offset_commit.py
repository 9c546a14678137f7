"""TxnOffsetCommit (key 28) v0-v5: stage a group's offsets in a producer's transaction.

The group's coordinator answers (NOT_COORDINATOR elsewhere).  The producer must be the
transactional id's current one (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before v3) with an
Ongoing transaction holding the group's offsets partition (AddOffsetsToTxn; else
TRANSACTION_ABORTABLE from v4, INVALID_TXN_STATE before); v5 (transactions v2, KIP-890) adds
that partition to the transaction itself.  The offsets are written to the offsets log as the producer's
transactional records and become visible when EndTxn commits (dropped on abort).
"""

from __future__ import annotations

import time
from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import TXN_OFFSET_COMMIT
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of, is_local_coordinator
from ..offsets import OffsetEntry, TopicPartition
from ..txn_coordinator import old_abortable, old_fenced
from ..txn_markers import offsets_partition
from .registry import handles


def _producer_error(broker: Broker, body: Any, version: int) -> int:
    """Whether the producer may stage offsets now, asked of its transaction coordinator (v5:
    which adds the offsets partition to the transaction)."""
    node = broker.coordinator_for(body.transactional_id)[0]
    owner: Any = broker.cluster.live.get(node)
    coordinator = getattr(owner, "txn_coordinator", None)
    if coordinator is None:
        return E.CoordinatorNotAvailableError.errno
    tp = offsets_partition(
        body.group_id, broker.config.get_int("offsets.topic.num.partitions") or 50
    )
    if version >= 5:
        return int(
            coordinator.add_partitions(
                body.transactional_id, body.producer_id, body.producer_epoch, [tp]
            )
        )
    code = coordinator.verify(body.transactional_id, body.producer_id, body.producer_epoch, tp)
    return old_abortable(int(code), version, 4)


def _entries(
    broker: Broker, body: Any
) -> tuple[dict[TopicPartition, OffsetEntry], dict[TopicPartition, int]]:
    """Storable entries and per-partition errors (unknown partition, metadata too large)."""
    now = int(time.time() * 1000)
    entries: dict[TopicPartition, OffsetEntry] = {}
    errors: dict[TopicPartition, int] = {}
    limit = broker.coordinator.metadata_max_bytes
    for t in body.topics:
        known = broker.cluster.partitions(t.name) or {}
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if p.partition_index not in known:
                errors[tp] = E.UnknownTopicOrPartitionError.errno
            elif len(metadata.encode()) > limit:
                errors[tp] = E.OffsetMetadataTooLargeError.errno
            else:
                entries[tp] = OffsetEntry(
                    p.committed_offset, metadata, p.committed_leader_epoch, now
                )
    return entries, errors


def _refusal(broker: Broker, request: Request, body: Any) -> int:
    """Write on the transactional id and Read on the group, or Kafka's error (0: allowed)."""
    if not allowed(
        broker, request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        return E.TransactionalIdAuthorizationFailedError.errno
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return E.GroupAuthorizationFailedError.errno
    return 0


@handles(TXN_OFFSET_COMMIT, "0-5")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Stage the offsets; every partition gets its own error code."""
    body: Any = body_of(request)
    version = request.header.api_version
    refused = _refusal(broker, request, body)
    if refused:
        return _answer(
            body, {(t.name, p.partition_index): refused for t in body.topics for p in t.partitions}
        )
    entries, errors = _entries(broker, body)
    for tp in [
        tp
        for tp in entries
        if not allowed(broker, request, AclOperation.READ, ResourceType.TOPIC, tp[0])
    ]:
        del entries[tp]
        errors[tp] = E.TopicAuthorizationFailedError.errno
    if not is_local_coordinator(broker, body.group_id):
        code = E.NotCoordinatorError.errno
    else:
        code = old_fenced(_producer_error(broker, body, version), version, 3)
    if not code and entries:
        code = broker.coordinator.txn_commit_offsets(
            body.group_id,
            body.generation_id,
            body.member_id or "",
            body.producer_id,
            body.producer_epoch,
            entries,
        )
    errors.update(dict.fromkeys(entries, code))
    return _answer(body, errors)


def _answer(body: Any, errors: dict[TopicPartition, int]) -> dict[str, Any]:
    """Every partition's error code, in request order."""
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": errors[(t.name, p.partition_index)],
                    }
                    for p in t.partitions
                ],
            }
            for t in body.topics
        ],
    }
