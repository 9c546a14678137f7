"""The mini-broker's authorizer: Kafka's ACL semantics (``StandardAuthorizer`` / ``AclAuthorizer``).

Enabled by ``authorizer.class.name`` (Kafka's class names or ``kclient``); ``super.users``
(``User:a;User:b``) may do anything; ``allow.everyone.if.no.acl.found`` grants a resource no
ACL pattern covers.  Otherwise a request is allowed when an ALLOW binding matches and no DENY
does (deny wins).  A binding matches when its pattern covers the resource (LITERAL name or
``*``, PREFIXED start), its principal is the requester's or ``User:*``, its host the client's
or ``*``, and its operation the asked one or ALL; an ALLOW of Read, Write, Delete or Alter also
grants Describe, and AlterConfigs grants DescribeConfigs.

ACLs live in a compacted :class:`~kclient.broker.state_log.StateLog` under the log dir (as
KRaft keeps them as records of its metadata log): each binding a keyed record, a deletion its
tombstone, replayed at start-up.  The brokers of a MiniCluster share one store (ClusterView).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kclient.protocol.acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    implied_by,
    operations_field,
)
from kclient.protocol.framing import Request

from .state_log import StateLog

__all__ = [
    "AUTHORIZER_CLASSES",
    "AclStore",
    "Authorizer",
    "authorizer_from_config",
    "authorizer_enabled",
    "principal_of",
    "ACL_DIR",
    "allowed",
    "allowed_any",
    "authorized_operations",
]

#: ``authorizer.class.name`` values that enable this authorizer.
AUTHORIZER_CLASSES = frozenset(
    {
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",  # KRaft
        "kafka.security.authorizer.AclAuthorizer",  # ZooKeeper-mode Kafka
        "kafka.security.auth.SimpleAclAuthorizer",  # before Kafka 2.4
        "kclient",
        "kclient.broker.authorizer.Authorizer",
    }
)
#: The state log's directory under the broker's log dir.
ACL_DIR = Path("__authorizer") / "__acls-0"
_ANONYMOUS = "User:ANONYMOUS"
_ALLOW, _DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def principal_of(request: Request) -> str:
    """The requester's principal (``User:ANONYMOUS`` without a security session)."""
    return getattr(request.session, "principal", None) or _ANONYMOUS


def _key(acl: AclBinding) -> bytes:
    """The record key of a binding (its every field, so equal bindings share one record)."""
    return json.dumps(
        [
            int(acl.resource_type),
            acl.name,
            int(acl.pattern_type),
            acl.principal,
            acl.host,
            int(acl.operation),
            int(acl.permission),
        ]
    ).encode()


def _binding(key: bytes) -> AclBinding:
    """The binding a record key names."""
    rtype, name, pattern, principal, host, op, perm = json.loads(key)
    return AclBinding(
        ResourceType(rtype),
        name,
        PatternType(pattern),
        principal,
        host,
        AclOperation(op),
        AclPermissionType(perm),
    )


class AclStore:
    """Every ACL binding of a cluster, indexed by resource pattern and kept in a state log."""

    def __init__(self, directory: Path, config: Mapping[str, str] | None = None) -> None:
        props = {
            "log.cleaner.enable": "false",
            **{k: v for k, v in (config or {}).items() if k.startswith("log.cleaner.")},
        }
        self.log = StateLog(directory, props, segment_bytes=1 << 20, name="kclient-acl-cleaner")
        self._lock = threading.Lock()
        self._acls: dict[tuple[ResourceType, PatternType, str], set[AclBinding]] = {}
        self.log.open(self._replay)

    def _replay(self, key: bytes | None, value: bytes | None) -> None:
        """Apply one record of the log at start-up."""
        if key is None:
            return
        acl = _binding(key)
        if value is None:
            self._drop(acl)
        else:
            self._acls.setdefault(self._slot(acl), set()).add(acl)

    @staticmethod
    def _slot(acl: AclBinding) -> tuple[ResourceType, PatternType, str]:
        return acl.resource_type, acl.pattern_type, acl.name

    def _drop(self, acl: AclBinding) -> None:
        slot = self._acls.get(self._slot(acl))
        if slot is not None:
            slot.discard(acl)
            if not slot:
                del self._acls[self._slot(acl)]

    def add(self, acls: Sequence[AclBinding]) -> None:
        """Store bindings (one durable batch; an existing binding is kept once)."""
        if not acls:
            return
        with self._lock:
            self.log.append([_key(a) for a in acls], [b"1"] * len(acls))
            for acl in acls:
                self._acls.setdefault(self._slot(acl), set()).add(acl)

    def remove(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Delete the bindings each filter matches; per filter, what it matched."""
        with self._lock:
            everything = [a for slot in self._acls.values() for a in slot]
            matched = [[a for a in everything if f.matches(a)] for f in filters]
            gone = list({a for each in matched for a in each})
            if gone:
                self.log.append([_key(a) for a in gone], [None] * len(gone))
                for acl in gone:
                    self._drop(acl)
            return matched

    def find(self, flt: AclBindingFilter) -> list[AclBinding]:
        """The bindings a filter matches."""
        with self._lock:
            return [a for slot in self._acls.values() for a in slot if flt.matches(a)]

    def covering(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """Every binding whose pattern covers the resource (literal, ``*`` and prefixes)."""
        with self._lock:
            acls = self._acls
            out = list(acls.get((resource_type, PatternType.LITERAL, name), ()))
            if name != WILDCARD:
                out += acls.get((resource_type, PatternType.LITERAL, WILDCARD), ())
            prefixed = PatternType.PREFIXED
            for end in range(1, len(name) + 1):  # each prefix once: no scan of every ACL
                slot = acls.get((resource_type, prefixed, name[:end]))
                if slot:
                    out += slot
            return out

    def of_type(self, resource_type: ResourceType) -> list[AclBinding]:
        """Every binding on resources of one type."""
        with self._lock:
            return [
                a
                for (rtype, _, _), slot in self._acls.items()
                if rtype == resource_type
                for a in slot
            ]

    def close(self) -> None:
        """Close the state log."""
        self.log.close()


class Authorizer:
    """Decides whether a principal from a host may perform an operation on a resource."""

    def __init__(
        self, store: AclStore, super_users: Iterable[str] = (), allow_if_no_acl: bool = False
    ) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Kafka's decision for one action."""
        if principal in self.super_users:
            return True
        acls = self.store.covering(resource_type, name)
        if not acls:
            return self.allow_if_no_acl
        granting = implied_by(operation)
        allowed = False
        for acl in acls:
            if acl.principal not in (principal, "User:*") or acl.host not in (host, WILDCARD):
                continue
            if acl.permission == _DENY and acl.operation in (operation, AclOperation.ALL):
                return False
            if acl.permission == _ALLOW and acl.operation in granting:
                allowed = True
        return allowed

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether some resource of the type allows the operation (Kafka's
        ``authorizeByResourceType``, e.g. idempotent producing with Write on any topic)."""
        if principal in self.super_users:
            return True
        acls = [
            a
            for a in self.store.of_type(resource_type)
            if a.principal in (principal, "User:*")
            and a.host in (host, WILDCARD)
            and a.operation in (operation, AclOperation.ALL)
        ]
        if any(
            a.permission == _DENY and a.pattern_type == PatternType.LITERAL and a.name == WILDCARD
            for a in acls
        ):
            return False
        if any(a.permission == _ALLOW for a in acls):
            return True
        return self.allow_if_no_acl and not self.store.of_type(resource_type)

    def operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The authorized-operations bit field of one resource (Metadata, DescribeGroups)."""
        return operations_field(
            op
            for op in SUPPORTED_OPERATIONS[resource_type]
            if self.authorize(principal, host, op, resource_type, name)
        )

    def close(self) -> None:
        """Close the ACL store."""
        self.store.close()


def authorizer_enabled(config: Mapping[str, Any]) -> bool:
    """Whether ``authorizer.class.name`` asks for an authorizer (ValueError for a class this
    broker does not have)."""
    name = (config.get("authorizer.class.name") or "").strip()
    if name and name not in AUTHORIZER_CLASSES:
        raise ValueError(
            f"authorizer.class.name {name!r} is not supported: use one of "
            f"{', '.join(sorted(AUTHORIZER_CLASSES))}"
        )
    return bool(name)


def authorizer_from_config(config: Mapping[str, Any], store: AclStore) -> Authorizer:
    """The authorizer of ``super.users`` and ``allow.everyone.if.no.acl.found`` over ``store``."""
    supers = [u.strip() for u in (config.get("super.users") or "").split(";") if u.strip()]
    allow = str(config.get("allow.everyone.if.no.acl.found", "false")).lower() == "true"
    return Authorizer(store, supers, allow)


def allowed(
    broker: Any, request: Request, operation: AclOperation, resource_type: ResourceType, name: str
) -> bool:
    """Whether the request's principal may perform ``operation`` on the resource (always, when
    the broker has no authorizer)."""
    authorizer: Authorizer | None = getattr(broker, "authorizer", None)
    if authorizer is None:
        return True
    return authorizer.authorize(
        principal_of(request), request.client_host, operation, resource_type, name
    )


def allowed_any(
    broker: Any, request: Request, operation: AclOperation, resource_type: ResourceType
) -> bool:
    """Whether some resource of the type permits ``operation`` (always, with no authorizer)."""
    authorizer: Authorizer | None = getattr(broker, "authorizer", None)
    if authorizer is None:
        return True
    return authorizer.authorize_any(
        principal_of(request), request.client_host, operation, resource_type
    )


def authorized_operations(
    broker: Any, request: Request, resource_type: ResourceType, name: str
) -> int:
    """The authorized-operations field of a resource for the requester (every supported
    operation with no authorizer, as Kafka)."""
    authorizer: Authorizer | None = getattr(broker, "authorizer", None)
    if authorizer is None:
        return operations_field(SUPPORTED_OPERATIONS[resource_type])
    return authorizer.operations(principal_of(request), request.client_host, resource_type, name)
