"""``kclient acls list|add|remove``: kafka-acls for kclient (its flag names), over CreateAcls,
DescribeAcls and DeleteAcls, for brokers with an authorizer (Kafka's or the mini-broker's)."""

from __future__ import annotations

import argparse

from kclient.protocol.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

from .common import UsageError, add_connection_options, admin_client, print_table, subcommand

__all__ = ["register"]

COLUMNS = ("RESOURCE-TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION")
_OPERATIONS = {
    op.name.replace("_", "").lower(): op
    for op in AclOperation
    if op not in (AclOperation.UNKNOWN, AclOperation.ANY)
}


def _operation(text: str) -> AclOperation:
    """Kafka's spelling (Read, DescribeConfigs, IdempotentWrite, All), any case."""
    op = _OPERATIONS.get(text.replace("_", "").replace("-", "").lower())
    if op is None:
        raise UsageError(f"--operation {text!r}: one of {', '.join(_titles())}")
    return op


def _titles() -> list[str]:
    return ["".join(w.title() for w in op.name.split("_")) for op in _OPERATIONS.values()]


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    """The --topic / --group / --transactional-id / --cluster resources named."""
    out = [(ResourceType.TOPIC, t) for t in args.topic]
    out += [(ResourceType.GROUP, g) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return out


def _pattern(args: argparse.Namespace, default: PatternType) -> PatternType:
    return (
        PatternType[args.resource_pattern_type.upper()] if args.resource_pattern_type else default
    )


def _bindings(args: argparse.Namespace) -> list[AclBinding]:
    """Every (resource, principal, host, operation) the add/remove flags name."""
    resources = _resources(args)
    entries = [(p, AclPermissionType.ALLOW) for p in args.allow_principal] + [
        (p, AclPermissionType.DENY) for p in args.deny_principal
    ]
    if not resources or not entries or not args.operation:
        raise UsageError(
            "name a resource (--topic, --group, --transactional-id, --cluster), "
            "a principal (--allow-principal / --deny-principal) and --operation"
        )
    pattern = _pattern(args, PatternType.LITERAL)
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError("--resource-pattern-type for add/remove: literal or prefixed")
    return [
        AclBinding(rtype, name, pattern, principal, host, _operation(op), perm)
        for rtype, name in resources
        for principal, perm in entries
        for host in args.host or ["*"]
        for op in args.operation
    ]


def _list(args: argparse.Namespace) -> int:
    pattern = _pattern(args, PatternType.ANY)
    filters = [
        AclBindingFilter(rtype, name, pattern, args.principal) for rtype, name in _resources(args)
    ] or [AclBindingFilter(principal=args.principal)]
    with admin_client(args) as admin:
        found = {acl for flt in filters for acl in admin.describe_acls(flt)}
    print_table(
        COLUMNS,
        [
            (
                a.resource_type.name,
                a.name,
                a.pattern_type.name,
                a.principal,
                a.host,
                a.operation.name,
                a.permission.name,
            )
            for a in sorted(
                found, key=lambda a: (a.resource_type, a.name, a.principal, a.operation)
            )
        ],
    )
    return 0


def _add(args: argparse.Namespace) -> int:
    bindings = _bindings(args)
    with admin_client(args) as admin:
        admin.create_acls(bindings)
    print(f"added {len(bindings)} ACL(s)")
    return 0


def _remove(args: argparse.Namespace) -> int:
    bindings = _bindings(args)
    filters = [
        AclBindingFilter(
            b.resource_type, b.name, b.pattern_type, b.principal, b.host, b.operation, b.permission
        )
        for b in bindings
    ]
    with admin_client(args) as admin:
        removed = sum(len(each) for each in admin.delete_acls(filters))
    print(f"removed {removed} ACL(s)")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``acls`` and its actions."""
    top = subcommand(
        subparsers,
        "acls",
        "list, add and remove ACLs (as kafka-acls)",
        "kclient acls add --allow-principal User:alice --operation Write "
        "--topic orders\nkclient acls list --principal User:alice",
    )
    actions = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = subcommand(
        actions,
        "list",
        "the ACLs on the named resources (default: all)",
        "kclient acls list --topic orders\nkclient acls list --principal User:bob",
    )
    p.add_argument("--principal", help="only this principal's ACLs")
    p.set_defaults(run=_list)
    p = subcommand(
        actions,
        "add",
        "add ACLs: every resource x principal x host x operation",
        "kclient acls add --allow-principal User:bob --operation Read "
        "--operation Describe --topic sales- --resource-pattern-type prefixed",
    )
    p.set_defaults(run=_add)
    q = subcommand(
        actions,
        "remove",
        "remove exactly the ACLs the flags name",
        "kclient acls remove --allow-principal User:bob --operation Read --topic orders",
    )
    q.set_defaults(run=_remove)
    for parser in (p, q):
        parser.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
        parser.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
        parser.add_argument("--operation", action="append", default=[], help=", ".join(_titles()))
        parser.add_argument(
            "--host",
            action="append",
            default=[],
            help="client address the ACL applies to (default *)",
        )
    for parser in actions.choices.values():
        parser.add_argument("--topic", action="append", default=[])
        parser.add_argument("--group", action="append", default=[])
        parser.add_argument("--transactional-id", action="append", default=[])
        parser.add_argument("--cluster", action="store_true", help="the cluster resource")
        parser.add_argument(
            "--resource-pattern-type", choices=("literal", "prefixed", "match", "any")
        )
        add_connection_options(parser)
