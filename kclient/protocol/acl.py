"""ACL operations and resource types by their wire codes, and the authorized-operations bit field.

Metadata (v8+), DescribeCluster and DescribeGroups (v3+) answer which operations the requester may
perform as a 32-bit field, bit ``n`` set for operation code ``n`` (Kafka's
``Utils.to32BitField``); a request that did not ask gets ``NOT_REQUESTED``.  With no authorizer,
Kafka grants every operation supported for the resource type (``AclEntry.supportedOperations``).
"""
from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

__all__ = ["AclOperation", "ResourceType", "SUPPORTED_OPERATIONS", "NOT_REQUESTED",
           "operations_field", "operations_of", "all_supported"]

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


_O = AclOperation
#: Operations that apply to each resource type.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                                   _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    ResourceType.CLUSTER: frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS,
                                     _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE, _O.ALTER,
                                     _O.DESCRIBE}),
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
