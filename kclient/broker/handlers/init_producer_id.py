"""InitProducerId (key 22) v0-v6: a producer id and epoch for an idempotent or transactional
producer.

A null transactional id gets a fresh id with epoch 0, as Kafka's coordinator gives it.  A
transactional id is answered by its transaction coordinator (NOT_COORDINATOR elsewhere): a new
id, or the id's epoch bumped, fencing the previous producer; PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before v4 (KIP-588).
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from kclient.protocol.apis import INIT_PRODUCER_ID
from kclient.protocol.error_codes import (
    ClusterAuthorizationFailedError,
    NotCoordinatorError,
    TransactionalIdAuthorizationFailedError,
)
from kclient.protocol.framing import Request

from ..authorizer import allowed, allowed_any
from ..interface import Broker, body_of, is_local_coordinator
from ..txn_coordinator import old_fenced
from .registry import handles


def _may_write(broker: Broker, request: Request) -> bool:
    """An idempotent producer needs IdempotentWrite on the cluster or Write on some topic
    (KIP-679)."""
    return allowed(
        broker, request, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME
    ) or allowed_any(broker, request, AclOperation.WRITE, ResourceType.TOPIC)


def _answer(code: int, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


@handles(INIT_PRODUCER_ID, "0-6")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Allocate a producer id (epoch 0), or (re)initialize a transactional producer."""
    body: Any = body_of(request)
    tid = body.transactional_id
    if tid is None:
        if not _may_write(broker, request):
            return _answer(ClusterAuthorizationFailedError.errno)
        return _answer(0, broker.producer_ids.next_id(), 0)
    if not allowed(broker, request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return _answer(TransactionalIdAuthorizationFailedError.errno)
    if not is_local_coordinator(broker, tid) or broker.txn_coordinator is None:
        return _answer(NotCoordinatorError.errno)
    code, pid, epoch = broker.txn_coordinator.init_producer_id(
        tid, body.transaction_timeout_ms, body.producer_id, body.producer_epoch
    )
    return _answer(old_fenced(code, request.header.api_version, 4), pid, epoch)
