"""EndTxn (key 26) v0-v5: commit or abort a producer's transaction.

The coordinator writes PrepareCommit/PrepareAbort, the markers to every partition of the
transaction, then CompleteCommit/CompleteAbort.  v5 is transactions v2 (KIP-890): the epoch is
bumped with every end and the answer carries the producer id and epoch of the next transaction
(as Kafka, the request's version decides, whatever ``transaction.version`` is finalized).
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import END_TXN
from kclient.protocol.error_codes import (
    NotCoordinatorError,
    TransactionalIdAuthorizationFailedError,
)
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of, is_local_coordinator
from ..txn_coordinator import old_fenced
from .registry import handles


@handles(END_TXN, "0-5")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Commit or abort."""
    body: Any = body_of(request)
    version = request.header.api_version
    pid = epoch = -1
    if not allowed(
        broker, request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        code = TransactionalIdAuthorizationFailedError.errno
    elif not is_local_coordinator(broker, body.transactional_id) or broker.txn_coordinator is None:
        code = NotCoordinatorError.errno
    elif version >= 5:
        code, pid, epoch = broker.txn_coordinator.end_txn_v2(
            body.transactional_id, body.producer_id, body.producer_epoch, bool(body.committed)
        )
    else:
        code = broker.txn_coordinator.end_txn(
            body.transactional_id, body.producer_id, body.producer_epoch, bool(body.committed)
        )
    return {
        "throttle_time_ms": 0,
        "error_code": old_fenced(code, version, 2),
        "producer_id": pid,
        "producer_epoch": epoch,
    }
