"""FindCoordinator (key 10) v0-v4: tell a client which broker coordinates its group
(key type 0) or its transactional id (key type 1); both hash over the live brokers.  v4
(KIP-699) asks for several keys at once and answers each in its own entry."""

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
    """An answer carrying an error and no coordinator."""
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


@handles(FIND_COORDINATOR, "0-4")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Answer with the coordinator of a group or a transactional id (v4: of each key)."""
    body = body_of(request)
    key_type = getattr(body, "key_type", GROUP_KEY)
    if request.header.api_version >= 4:
        return {
            "throttle_time_ms": 0,
            "coordinators": [
                {"key": key, **_find(broker, request, key_type, key)}
                for key in body.coordinator_keys
            ],
        }
    return {"throttle_time_ms": 0, **_find(broker, request, key_type, body.key)}


def _find(broker: Broker, request: Request, key_type: int, key: str) -> dict[str, Any]:
    """The coordinator of one key, or the error that hides it."""
    if key_type == GROUP_KEY and not allowed(
        broker, request, AclOperation.DESCRIBE, ResourceType.GROUP, key
    ):
        return _error(E.GroupAuthorizationFailedError.errno, "Authorization failed.")
    if key_type == TRANSACTION_KEY and not allowed(
        broker, request, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return _error(E.TransactionalIdAuthorizationFailedError.errno, "Authorization failed.")
    if key_type not in (GROUP_KEY, TRANSACTION_KEY):
        return _error(E.InvalidRequestError.errno, f"unknown key type {key_type}")
    node_id, host, port = broker.coordinator_for(key, request.listener)
    # Kafka answers a found coordinator with the message of Errors.NONE, "NONE" (v1+)
    return {
        "error_code": 0,
        "error_message": "NONE",
        "node_id": node_id,
        "host": host,
        "port": port,
    }
