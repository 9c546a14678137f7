"""AddPartitionsToTxn (key 24) v0-v5: add partitions to a producer's transaction.

v0-v3 carry one transaction (clients); v4+ batch several and may be ``verify_only`` (KIP-890:
a leader asks whether the partitions are already in the transaction).  As Kafka: a partition of
an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED; every
partition carries the coordinator's answer otherwise; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
before v2.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import ADD_PARTITIONS_TO_TXN
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of, is_local_coordinator
from ..txn_coordinator import old_abortable, old_fenced
from ..txn_markers import OFFSETS_TOPIC
from .registry import handles

TopicPartition = tuple[str, int]


def _exists(broker: Broker, tp: TopicPartition) -> bool:
    """Whether the partition exists in the cluster (the offsets topic always does)."""
    return tp[0] == OFFSETS_TOPIC or tp[1] in (broker.cluster.partitions(tp[0]) or ())


def _results(topics: Any, codes: dict[TopicPartition, int]) -> list[dict[str, Any]]:
    """Per-topic, per-partition results: as Kafka's, the partitions refused as unknown first,
    then the others, each in request order."""
    out: dict[str, list[dict[str, Any]]] = {}
    unknown = E.UnknownTopicOrPartitionError.errno
    for first in (True, False):
        for t in topics:
            for p in t.partitions:
                if (codes[(t.name, p)] == unknown) == first:
                    out.setdefault(t.name, []).append(
                        {"partition_index": p, "partition_error_code": codes[(t.name, p)]}
                    )
    return [{"name": name, "results_by_partition": parts} for name, parts in out.items()]


def _refusals(
    broker: Broker, request: Request, tid: str, topics: Any
) -> dict[TopicPartition, int] | None:
    """Kafka's authorization answer (Write on the transactional id, then on each topic; the
    partitions of allowed topics OPERATION_NOT_ATTEMPTED), or None when all is allowed."""
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    if not allowed(broker, request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return dict.fromkeys(wanted, E.TransactionalIdAuthorizationFailedError.errno)
    denied = {
        t.name
        for t in topics
        if not allowed(broker, request, AclOperation.WRITE, ResourceType.TOPIC, t.name)
    }
    if not denied:
        return None
    return {
        tp: E.TopicAuthorizationFailedError.errno
        if tp[0] in denied
        else E.OperationNotAttemptedError.errno
        for tp in wanted
    }


def _one(
    broker: Broker,
    request: Request,
    tid: str,
    pid: int,
    epoch: int,
    topics: Any,
    version: int,
    verify_only: bool = False,
) -> list[dict[str, Any]]:
    """Add (or verify) one transaction's partitions; the per-topic results."""
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    refusals = _refusals(broker, request, tid, topics)
    if refusals is not None:
        return _results(topics, refusals)
    if not is_local_coordinator(broker, tid) or broker.txn_coordinator is None:
        return _results(topics, dict.fromkeys(wanted, E.NotCoordinatorError.errno))
    unknown = {tp for tp in wanted if not _exists(broker, tp)}
    if unknown:
        return _results(
            topics,
            {
                tp: E.UnknownTopicOrPartitionError.errno
                if tp in unknown
                else E.OperationNotAttemptedError.errno
                for tp in wanted
            },
        )
    coordinator = broker.txn_coordinator
    if verify_only:  # TRANSACTION_ABORTABLE is v5's (KIP-890): INVALID_TXN_STATE before
        return _results(
            topics,
            {
                tp: old_abortable(coordinator.verify(tid, pid, epoch, tp), version, 5)
                for tp in wanted
            },
        )
    code = old_fenced(coordinator.add_partitions(tid, pid, epoch, wanted), version, 2)
    return _results(topics, dict.fromkeys(wanted, code))


@handles(ADD_PARTITIONS_TO_TXN, "0-5")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Answer each partition of each transaction."""
    body: Any = body_of(request)
    version = request.header.api_version
    if version <= 3:
        return {
            "throttle_time_ms": 0,
            "results_by_topic_v3_and_below": _one(
                broker,
                request,
                body.v3_and_below_transactional_id,
                body.v3_and_below_producer_id,
                body.v3_and_below_producer_epoch,
                body.v3_and_below_topics,
                version,
            ),
        }
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "results_by_transaction": [
            {
                "transactional_id": t.transactional_id,
                "topic_results": _one(
                    broker,
                    request,
                    t.transactional_id,
                    t.producer_id,
                    t.producer_epoch,
                    t.topics,
                    version,
                    t.verify_only,
                ),
            }
            for t in body.transactions
        ],
    }
