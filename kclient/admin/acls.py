"""The ACL side of AdminClient: CreateAcls, DescribeAcls and DeleteAcls (Kafka's Admin
``createAcls`` / ``describeAcls`` / ``deleteAcls``), with bindings and filters as
:mod:`kclient.protocol.acl` defines them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kclient.protocol.acl import AclBinding, AclBindingFilter, binding_of, make_binding
from kclient.protocol.apis import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS

from .base import AdminBase, check

__all__ = ["AclAdmin"]


def _filter_body(flt: AclBindingFilter) -> dict[str, Any]:
    """A DescribeAcls request / DeleteAcls filter entry."""
    return {
        "resource_type_filter": int(flt.resource_type),
        "resource_name_filter": flt.name,
        "pattern_type_filter": int(flt.pattern_type),
        "principal_filter": flt.principal,
        "host_filter": flt.host,
        "operation": int(flt.operation),
        "permission_type": int(flt.permission),
    }


def _described(resource: Any, ace: Any) -> AclBinding:
    """One binding of a DescribeAcls answer."""
    return make_binding(
        resource.resource_type,
        resource.resource_name,
        resource.pattern_type,
        ace.principal,
        ace.host,
        ace.operation,
        ace.permission_type,
    )


class AclAdmin(AdminBase):
    """ACL management; the broker needs an authorizer (else SecurityDisabledError) and the
    principal Alter (create, delete) or Describe (describe) on the cluster."""

    def create_acls(self, acls: Iterable[AclBinding]) -> None:
        """Add bindings; raises the first refused one's error (InvalidRequestError,
        ClusterAuthorizationFailedError, SecurityDisabledError)."""
        wanted = list(acls)
        if not wanted:
            return
        creations = [
            {
                "resource_type": int(a.resource_type),
                "resource_name": a.name,
                "resource_pattern_type": int(a.pattern_type),
                "principal": a.principal,
                "host": a.host,
                "operation": int(a.operation),
                "permission_type": int(a.permission),
            }
            for a in wanted
        ]
        resp = self._controller().request(CREATE_ACLS, {"creations": creations})
        for acl, result in zip(wanted, resp.results):
            check(result.error_code, f"creating ACL {acl}", result.error_message)

    def describe_acls(self, flt: AclBindingFilter | None = None) -> list[AclBinding]:
        """The bindings ``flt`` matches (every binding by default)."""
        resp = self._any().request(DESCRIBE_ACLS, _filter_body(flt or AclBindingFilter()))
        check(resp.error_code, "describing ACLs", resp.error_message)
        return [_described(r, ace) for r in resp.resources for ace in r.acls]

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches; per filter, the bindings removed."""
        wanted = list(filters)
        if not wanted:
            return []
        resp = self._controller().request(
            DELETE_ACLS, {"filters": [_filter_body(f) for f in wanted]}
        )
        out = []
        for flt, result in zip(wanted, resp.filter_results):
            check(result.error_code, f"deleting ACLs matching {flt}", result.error_message)
            out.append([binding_of(m) for m in result.matching_acls])
        return out
