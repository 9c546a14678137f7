"""InitProducerId (key 22) v0-v6: a fresh producer id for an idempotent producer.

As Kafka's transaction coordinator does for a null transactional id, every request gets a new
id with epoch 0. Transactions are not coordinated here (FindCoordinator answers
COORDINATOR_NOT_AVAILABLE for them), so a transactional id gets the same error.
"""
from __future__ import annotations

from typing import Any

from kclient.protocol.apis import INIT_PRODUCER_ID
from kclient.protocol.error_codes import CoordinatorNotAvailableError
from kclient.protocol.framing import Request

from ..interface import Broker, body_of
from .registry import handles


@handles(INIT_PRODUCER_ID, "0-6")
def handle(broker: Broker, request: Request) -> dict:
    """Allocate a producer id (epoch 0), or refuse a transactional producer."""
    body: Any = body_of(request)
    if body.transactional_id is not None:
        return {"throttle_time_ms": 0, "error_code": CoordinatorNotAvailableError.errno,
                "producer_id": -1, "producer_epoch": -1}
    return {"throttle_time_ms": 0, "error_code": 0,
            "producer_id": broker.producer_ids.next_id(), "producer_epoch": 0}
