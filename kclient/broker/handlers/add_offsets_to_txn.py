"""AddOffsetsToTxn (key 25) v0-v4: a group's offsets join a producer's transaction.

The coordinator adds the group's ``__consumer_offsets`` partition to the transaction, so
EndTxn ends the offsets the producer then stages with TxnOffsetCommit.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import ADD_OFFSETS_TO_TXN
from kclient.protocol.error_codes import (
    GroupAuthorizationFailedError,
    NotCoordinatorError,
    TransactionalIdAuthorizationFailedError,
)
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of, is_local_coordinator
from ..txn_coordinator import old_fenced
from ..txn_markers import offsets_partition
from .registry import handles


@handles(ADD_OFFSETS_TO_TXN, "0-4")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Add the group's offsets partition to the transaction."""
    body: Any = body_of(request)
    if not allowed(
        broker, request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        return {"throttle_time_ms": 0, "error_code": TransactionalIdAuthorizationFailedError.errno}
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return {"throttle_time_ms": 0, "error_code": GroupAuthorizationFailedError.errno}
    if not is_local_coordinator(broker, body.transactional_id) or broker.txn_coordinator is None:
        return {"throttle_time_ms": 0, "error_code": NotCoordinatorError.errno}
    tp = offsets_partition(
        body.group_id, broker.config.get_int("offsets.topic.num.partitions") or 50
    )
    code = broker.txn_coordinator.add_partitions(
        body.transactional_id, body.producer_id, body.producer_epoch, [tp]
    )
    return {"throttle_time_ms": 0, "error_code": old_fenced(code, request.header.api_version, 2)}
