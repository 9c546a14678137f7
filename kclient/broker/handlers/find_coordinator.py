"""FindCoordinator (key 10) v0-v3: tell a client which broker coordinates its group
(key type 0) or its transactional id (key type 1); both hash over the live brokers."""
from __future__ import annotations

from typing import Any

from kclient.protocol import errors as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import FIND_COORDINATOR
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of
from .registry import handles

GROUP_KEY, TRANSACTION_KEY = 0, 1


def _error(code: int, message: str) -> dict[str, Any]:
    """A response carrying an error and no coordinator."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "node_id": -1, "host": "", "port": -1}


@handles(FIND_COORDINATOR, "0-3")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Answer with the coordinator of a group or a transactional id."""
    body = body_of(request)
    key_type = getattr(body, "key_type", GROUP_KEY)
    if key_type == GROUP_KEY and not allowed(broker, request, AclOperation.DESCRIBE,
                                             ResourceType.GROUP, body.key):
        return _error(E.GroupAuthorizationFailedError.errno, "Authorization failed.")
    if key_type == TRANSACTION_KEY and not allowed(broker, request, AclOperation.DESCRIBE,
                                                   ResourceType.TRANSACTIONAL_ID, body.key):
        return _error(E.TransactionalIdAuthorizationFailedError.errno, "Authorization failed.")
    if key_type not in (GROUP_KEY, TRANSACTION_KEY):
        return _error(E.InvalidRequestError.errno, f"unknown key type {key_type}")
    node_id, host, port = broker.coordinator_for(body.key, request.listener)
    # Kafka answers a found coordinator with the message of Errors.NONE, "NONE" (v1+)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "NONE",
            "node_id": node_id, "host": host, "port": port}
