"""DescribeAcls (key 29): the ACL bindings matching a filter, grouped by resource pattern.

Needs Describe on the cluster (else CLUSTER_AUTHORIZATION_FAILED); a broker without an
authorizer answers SECURITY_DISABLED, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import CLUSTER_NAME, AclBinding, AclOperation, ResourceType, filter_of
from kclient.protocol.apis import DESCRIBE_ACLS
from kclient.protocol.framing import Request

from ..authorizer import Authorizer, allowed
from ..interface import Broker, body_of
from .registry import handles


def _answer(
    code: int = 0, message: str | None = None, resources: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "resources": resources or [],
    }


def _grouped(acls: list[AclBinding]) -> list[dict[str, Any]]:
    """One entry per resource pattern, its ACEs inside."""
    out: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in sorted(
        acls,
        key=lambda a: (
            a.resource_type,
            a.name,
            a.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission,
        ),
    ):
        key = (int(acl.resource_type), acl.name, int(acl.pattern_type))
        out.setdefault(key, []).append(
            {
                "principal": acl.principal,
                "host": acl.host,
                "operation": int(acl.operation),
                "permission_type": int(acl.permission),
            }
        )
    return [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": aces}
        for (t, n, p), aces in out.items()
    ]


@handles(DESCRIBE_ACLS, "0-3")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Describe the ACLs the filter selects."""
    authorizer: Authorizer | None = getattr(broker, "authorizer", None)
    if authorizer is None:
        return _answer(E.SecurityDisabledError.errno, "No Authorizer is configured.")
    if not allowed(broker, request, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return _answer(E.ClusterAuthorizationFailedError.errno, "Authorization failed.")
    body: Any = body_of(request)
    flt = filter_of(body)
    problem = flt.invalid()
    if problem is not None:
        return _answer(E.InvalidRequestError.errno, problem)
    return _answer(resources=_grouped(authorizer.store.find(flt)))
