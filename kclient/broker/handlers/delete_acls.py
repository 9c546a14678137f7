"""DeleteAcls (key 31): remove the ACL bindings each filter matches, naming them.

Needs Alter on the cluster (else every filter fails CLUSTER_AUTHORIZATION_FAILED); without an
authorizer, SECURITY_DISABLED, as Kafka answers.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import CLUSTER_NAME, AclBinding, AclOperation, ResourceType, filter_of
from kclient.protocol.apis import DELETE_ACLS
from kclient.protocol.framing import Request

from ..authorizer import Authorizer, allowed
from ..interface import Broker, body_of
from .registry import handles


def _matching(acl: AclBinding) -> dict[str, Any]:
    """One removed binding's entry."""
    return {
        "error_code": 0,
        "error_message": None,
        "resource_type": int(acl.resource_type),
        "resource_name": acl.name,
        "pattern_type": int(acl.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": int(acl.operation),
        "permission_type": int(acl.permission),
    }


def _failed(code: int, message: str) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "matching_acls": []}


@handles(DELETE_ACLS, "0-3")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Delete what every valid filter matches (one durable batch)."""
    body: Any = body_of(request)
    authorizer: Authorizer | None = getattr(broker, "authorizer", None)
    if authorizer is None:
        failed = _failed(E.SecurityDisabledError.errno, "No Authorizer is configured.")
        return {"throttle_time_ms": 0, "filter_results": [failed for _ in body.filters]}
    if not allowed(broker, request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        failed = _failed(E.ClusterAuthorizationFailedError.errno, "Authorization failed.")
        return {"throttle_time_ms": 0, "filter_results": [failed for _ in body.filters]}
    filters = [filter_of(f) for f in body.filters]
    problems = [f.invalid() for f in filters]
    matched = authorizer.store.remove([f for f, p in zip(filters, problems) if p is None])
    results = []
    for problem in problems:
        if problem is not None:
            results.append(_failed(E.InvalidRequestError.errno, problem))
        else:
            results.append(
                {
                    "error_code": 0,
                    "error_message": None,
                    "matching_acls": [_matching(a) for a in matched.pop(0)],
                }
            )
    return {"throttle_time_ms": 0, "filter_results": results}
