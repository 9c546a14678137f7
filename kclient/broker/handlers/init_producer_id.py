"""InitProducerId (key 22) v0-v6: a fresh producer id for an idempotent producer.

As Kafka's transaction coordinator does for a null transactional id, every request gets a new
id with epoch 0. Transactions are not coordinated here (FindCoordinator answers
COORDINATOR_NOT_AVAILABLE for them), so a transactional id gets the same error.
"""
from __future__ import annotations

from typing import Any

from kclient.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from kclient.protocol.apis import INIT_PRODUCER_ID
from kclient.protocol.error_codes import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    TransactionalIdAuthorizationFailedError,
)
from kclient.protocol.framing import Request

from ..authorizer import allowed, allowed_any
from ..interface import Broker, body_of
from .registry import handles


def _may_write(broker: Broker, request: Request) -> bool:
    """An idempotent producer needs IdempotentWrite on the cluster or Write on some topic
    (KIP-679)."""
    return allowed(broker, request, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER,
                   CLUSTER_NAME) or allowed_any(broker, request, AclOperation.WRITE,
                                                ResourceType.TOPIC)


def _refused(code: int) -> dict:
    """An answer with an error and no producer id."""
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


@handles(INIT_PRODUCER_ID, "0-6")
def handle(broker: Broker, request: Request) -> dict:
    """Allocate a producer id (epoch 0), or refuse a transactional producer."""
    body: Any = body_of(request)
    txn = body.transactional_id
    if txn is not None:
        code = CoordinatorNotAvailableError.errno if allowed(
            broker, request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn) \
            else TransactionalIdAuthorizationFailedError.errno
        return _refused(code)
    if not _may_write(broker, request):
        return _refused(ClusterAuthorizationFailedError.errno)
    return {"throttle_time_ms": 0, "error_code": 0,
            "producer_id": broker.producer_ids.next_id(), "producer_epoch": 0}
