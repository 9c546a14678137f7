"""CreateAcls (key 30): add ACL bindings, durably, one result per creation.

Needs Alter on the cluster (else every creation fails CLUSTER_AUTHORIZATION_FAILED); a binding
Kafka would refuse (ANY or UNKNOWN fields, a cluster not named ``kafka-cluster``, a principal
without its ``Type:``) fails INVALID_REQUEST; without an authorizer, SECURITY_DISABLED.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import (
    CLUSTER_NAME,
    AclOperation,
    ResourceType,
    binding_of,
    invalid_binding,
)
from kclient.protocol.apis import CREATE_ACLS
from kclient.protocol.framing import Request

from ..authorizer import Authorizer, allowed
from ..interface import Broker, body_of
from .registry import handles


def _result(code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {"error_code": code, "error_message": message}


@handles(CREATE_ACLS, "0-3")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Validate each creation and store the valid ones in one batch."""
    body: Any = body_of(request)
    authorizer: Authorizer | None = getattr(broker, "authorizer", None)
    refusal: dict[str, Any] | None = None
    if authorizer is None:
        refusal = _result(E.SecurityDisabledError.errno, "No Authorizer is configured.")
    elif not allowed(broker, request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        refusal = _result(E.ClusterAuthorizationFailedError.errno, "Authorization failed.")
    if refusal is not None or authorizer is None:
        return {"throttle_time_ms": 0, "results": [refusal for _ in body.creations]}
    results, valid = [], []
    for creation in body.creations:
        acl = binding_of(creation)
        problem = invalid_binding(acl)
        results.append(_result(E.InvalidRequestError.errno, problem) if problem else _result())
        if problem is None:
            valid.append(acl)
    authorizer.store.add(valid)
    return {"throttle_time_ms": 0, "results": results}
