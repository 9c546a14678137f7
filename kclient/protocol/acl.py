"""ACL operations and resource types by their wire codes, and the authorized-operations bit field.

Metadata (v8+), DescribeCluster and DescribeGroups (v3+) answer which operations the requester may
perform as a 32-bit field, bit ``n`` set for operation code ``n`` (Kafka's
``Utils.to32BitField``); a request that did not ask gets ``NOT_REQUESTED``.  With no authorizer,
Kafka grants every operation supported for the resource type (``AclEntry.supportedOperations``).

An ACL binding is a resource pattern (type, name, LITERAL or PREFIXED) plus an access control
entry (principal, host, operation, ALLOW or DENY); filters select bindings for DescribeAcls and
DeleteAcls with Kafka's ``AclBindingFilter`` rules.  Which bindings grant what is the broker's
authorizer (``kclient.broker.authorizer``); the rules both sides share live here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeVar

__all__ = [
    "AclOperation",
    "ResourceType",
    "PatternType",
    "AclPermissionType",
    "AclBinding",
    "AclBindingFilter",
    "SUPPORTED_OPERATIONS",
    "NOT_REQUESTED",
    "WILDCARD",
    "CLUSTER_NAME",
    "operations_field",
    "operations_of",
    "all_supported",
    "implied_by",
    "invalid_binding",
    "binding_of",
    "filter_of",
    "make_binding",
]

#: The bit field's value when the request did not ask for authorized operations.
NOT_REQUESTED = -2147483648


class AclOperation(IntEnum):
    """Kafka's ``AclOperation`` codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class ResourceType(IntEnum):
    """Kafka's ``ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    """Kafka's ``PatternType``: how a binding's resource name matches (KIP-290)."""

    UNKNOWN = 0
    ANY = 1  # filters only: any pattern type
    MATCH = 2  # filters only: every pattern that applies to the named resource
    LITERAL = 3
    PREFIXED = 4


class AclPermissionType(IntEnum):
    """Kafka's ``AclPermissionType``."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: The resource name and the principal/host value that match everything.
WILDCARD = "*"
#: The only name of the CLUSTER resource.
CLUSTER_NAME = "kafka-cluster"

_O = AclOperation
#: Operations that apply to each resource type.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            _O.READ,
            _O.WRITE,
            _O.CREATE,
            _O.DESCRIBE,
            _O.DELETE,
            _O.ALTER,
            _O.DESCRIBE_CONFIGS,
            _O.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {
            _O.CREATE,
            _O.CLUSTER_ACTION,
            _O.DESCRIBE_CONFIGS,
            _O.ALTER_CONFIGS,
            _O.IDEMPOTENT_WRITE,
            _O.ALTER,
            _O.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
    ResourceType.USER: frozenset({_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS}),
}


def operations_field(operations: Iterable[AclOperation]) -> int:
    """The 32-bit field with one bit per operation code."""
    field = 0
    for operation in operations:
        field |= 1 << int(operation)
    return field - (1 << 32) if field >= 1 << 31 else field


def operations_of(field: int) -> set[AclOperation]:
    """The operations a bit field names (none for NOT_REQUESTED)."""
    if field == NOT_REQUESTED:
        return set()
    return {op for op in AclOperation if field & (1 << int(op))}


def all_supported(resource_type: ResourceType) -> int:
    """The field granting every operation of a resource type (what Kafka answers when no
    authorizer is configured)."""
    return operations_field(SUPPORTED_OPERATIONS[resource_type])


_IMPLIES_DESCRIBE = frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})


def implied_by(operation: AclOperation) -> frozenset[AclOperation]:
    """The ALLOW operations that grant ``operation``: itself, ALL, and Kafka's implications
    (Read, Write, Delete and Alter imply Describe; AlterConfigs implies DescribeConfigs)."""
    if operation == _O.DESCRIBE:
        return _IMPLIES_DESCRIBE | {_O.ALL}
    if operation == _O.DESCRIBE_CONFIGS:
        return _IMPLIES_DESCRIBE_CONFIGS | {_O.ALL}
    return frozenset({operation, _O.ALL})


@dataclass(frozen=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (Kafka's ``AclBinding``)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def applies_to(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this binding's pattern covers resource ``name`` of ``resource_type``."""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@dataclass(frozen=True)
class AclBindingFilter:
    """Selects bindings (DescribeAcls, DeleteAcls); None and ANY fields match anything."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        """Kafka's ``AclBindingFilter.matches``."""
        return (
            self.resource_type in (ResourceType.ANY, acl.resource_type)
            and self._pattern_matches(acl)
            and self.principal in (None, acl.principal)
            and self.host in (None, acl.host)
            and self.operation in (AclOperation.ANY, acl.operation)
            and self.permission in (AclPermissionType.ANY, acl.permission)
        )

    def _pattern_matches(self, acl: AclBinding) -> bool:
        """The resource-pattern half (``ResourcePatternFilter.matches``)."""
        if self.pattern_type == PatternType.MATCH:
            return self.name is None or acl.applies_to(acl.resource_type, self.name)
        if self.pattern_type not in (PatternType.ANY, acl.pattern_type):
            return False
        return self.name is None or self.name == acl.name

    def invalid(self) -> str | None:
        """Why this filter is unusable (an UNKNOWN field), else None."""
        for value in (self.resource_type, self.pattern_type, self.operation, self.permission):
            if value.value == 0:
                return f"filter has an unknown {type(value).__name__}"
        return None


def invalid_binding(acl: AclBinding) -> str | None:
    """Why a binding cannot be created (Kafka's checks), else None."""
    if acl.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
        return "Invalid resource type " + acl.resource_type.name
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return "Invalid pattern type " + acl.pattern_type.name
    if acl.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        return "Invalid operation " + acl.operation.name
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return "Invalid permission type " + acl.permission.name
    if not acl.name:
        return "Resource name should not be empty"
    if acl.resource_type == ResourceType.CLUSTER and acl.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    kind, sep, who = acl.principal.partition(":")
    if not sep or not kind or not who:
        return (
            f"Could not parse principal from `{acl.principal}` (no colon is present "
            "separating the principal type from the principal name)"
        )
    if not acl.host:
        return "Host should not be empty"
    return None


_E = TypeVar("_E", bound=IntEnum)


def _member(kind: type[_E], code: int) -> _E:
    """The enum member of a wire code; a code Kafka may add later reads as UNKNOWN (0)."""
    try:
        return kind(code)
    except ValueError:
        return kind(0)


def make_binding(
    resource_type: int,
    name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> AclBinding:
    """A binding from wire codes (codes this version does not know read as UNKNOWN)."""
    return AclBinding(
        _member(ResourceType, resource_type),
        name,
        _member(PatternType, pattern_type),
        principal,
        host,
        _member(AclOperation, operation),
        _member(AclPermissionType, permission),
    )


def binding_of(entry: Any) -> AclBinding:
    """The binding a CreateAcls creation (or a DeleteAcls matching entry) carries."""
    field = "resource_pattern_type" if hasattr(entry, "resource_pattern_type") else "pattern_type"
    pattern: int = getattr(entry, field, PatternType.LITERAL)
    return make_binding(
        entry.resource_type,
        entry.resource_name,
        pattern,
        entry.principal,
        entry.host,
        entry.operation,
        entry.permission_type,
    )


def filter_of(entry: Any) -> AclBindingFilter:
    """The filter a DescribeAcls request (or a DeleteAcls filter) carries."""
    return AclBindingFilter(
        _member(ResourceType, entry.resource_type_filter),
        entry.resource_name_filter,
        _member(PatternType, entry.pattern_type_filter),
        entry.principal_filter,
        entry.host_filter,
        _member(AclOperation, entry.operation),
        _member(AclPermissionType, entry.permission_type),
    )
