"""``kclient share-groups list|describe|reset-offsets|delete-offsets``: kafka-share-groups for
kclient (KIP-932 share groups)."""

from __future__ import annotations

import argparse

from .common import UsageError, add_connection_options, admin_client, print_table, subcommand

__all__ = ["register"]

OFFSET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")


def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        groups = admin.list_share_groups()
    if args.state:
        print_table(("GROUP", "STATE"), [(g.group_id, g.state) for g in groups])
    else:
        for g in groups:
            print(g.group_id)
    return 0


def _describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        for group in args.groups:
            if args.members:
                d = admin.describe_share_groups([group])[group]
                print_table(
                    ("GROUP", "MEMBER-ID", "HOST", "CLIENT-ID", "EPOCH", "ASSIGNMENT"),
                    [
                        (
                            group,
                            m.member_id,
                            m.host,
                            m.client_id,
                            m.member_epoch,
                            ",".join(str(tp) for tp in m.assignment) or "-",
                        )
                        for m in d.members
                    ],
                    title=f"{group}: {d.state}",
                )
                continue
            offsets = admin.list_share_group_offsets(group)
            print_table(
                OFFSET_COLUMNS,
                [
                    (
                        group,
                        tp.topic,
                        tp.partition,
                        o.start_offset if o.start_offset >= 0 else "-",
                        o.lag if o.lag >= 0 else "-",
                    )
                    for tp, o in offsets.items()
                ],
            )
    return 0


def _reset(args: argparse.Namespace) -> int:
    if args.to_offset is not None:
        to, offset = "offset", args.to_offset
    elif args.to_latest:
        to, offset = "latest", None
    elif args.to_earliest:
        to, offset = "earliest", None
    else:
        raise UsageError("name where to: --to-earliest, --to-latest or --to-offset N")
    if not args.execute:
        print("dry run: add --execute to reset (the group must have no members)")
    with admin_client(args) as admin:
        if args.execute:
            done = admin.reset_share_group_offsets(args.group, args.topic, to, offset)
        else:
            done = {}
        print_table(
            ("GROUP", "TOPIC", "PARTITION", "NEW-START-OFFSET"),
            [(args.group, tp.topic, tp.partition, o) for tp, o in done.items()],
        )
    return 0


def _delete_offsets(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        admin.delete_share_group_offsets(args.group, args.topic)
    for t in args.topic:
        print(f"deleted the state of share group {args.group} for topic {t}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``share-groups``."""
    p = subcommand(
        subparsers,
        "share-groups",
        "list, describe and move share groups (KIP-932)",
        "kclient share-groups list --state\n"
        "kclient share-groups describe jobs --members\n"
        "kclient share-groups reset-offsets jobs -t events --to-earliest --execute",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    lst = subcommand(actions, "list", "every share group", "kclient share-groups list --state")
    lst.add_argument("--state", action="store_true", help="with its state")
    lst.set_defaults(run=_list)
    desc = subcommand(
        actions,
        "describe",
        "start offsets and lag, or members",
        "kclient share-groups describe jobs\nkclient share-groups describe jobs --members",
    )
    desc.add_argument("groups", nargs="+", metavar="GROUP")
    desc.add_argument("--members", action="store_true", help="members and their assignment")
    desc.set_defaults(run=_describe)
    reset = subcommand(
        actions,
        "reset-offsets",
        "move an empty share group's start offsets",
        "kclient share-groups reset-offsets jobs -t events --to-earliest --execute",
    )
    reset.add_argument("group")
    reset.add_argument("-t", "--topic", action="append", required=True, help="repeatable")
    reset.add_argument("--to-earliest", action="store_true")
    reset.add_argument("--to-latest", action="store_true")
    reset.add_argument("--to-offset", type=int, metavar="N")
    reset.add_argument("--execute", action="store_true", help="do it (default: dry run)")
    reset.set_defaults(run=_reset)
    delete = subcommand(
        actions,
        "delete-offsets",
        "forget an empty share group's topics",
        "kclient share-groups delete-offsets jobs -t events",
    )
    delete.add_argument("group")
    delete.add_argument("-t", "--topic", action="append", required=True, help="repeatable")
    delete.set_defaults(run=_delete_offsets)
    for sub in (lst, desc, reset, delete):
        add_connection_options(sub)
