"""``kclient groups list|describe|delete|reset-offsets``: kafka-consumer-groups for kclient,
for broker-stored offsets and the ZooKeeper-stored offsets of 0.8 groups (``--zookeeper``)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from kclient.admin.types import ConsumerGroupDescription, TopicPartition

from .common import (
    UsageError,
    add_connection_options,
    admin_client,
    parse_time,
    print_table,
    subcommand,
)

__all__ = ["register"]

LAG_COLUMNS = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)


def _storage(args: argparse.Namespace) -> str:
    return "zookeeper" if args.zookeeper else "kafka"


def _list(args: argparse.Namespace) -> int:
    with admin_client(args, args.zookeeper) as admin:
        groups = admin.list_groups(_storage(args))
    if args.state:
        print_table(
            ("GROUP", "STATE", "PROTOCOL-TYPE", "STORAGE"),
            [(g.group_id, g.state, g.protocol_type or "-", g.storage) for g in groups],
        )
    else:
        for g in groups:
            print(g.group_id)
    return 0


def _describe(args: argparse.Namespace) -> int:
    storage = _storage(args)
    with admin_client(args, args.zookeeper) as admin:
        for group in args.groups:
            if args.members and storage == "kafka":
                _members(group, admin.describe_consumer_groups([group])[group], args.verbose)
                continue
            if args.members:
                d = admin.describe_groups([group], storage)[group]
                print_table(
                    ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"),
                    [
                        (group, m.member_id, m.host, m.client_id, len(m.assignment))
                        for m in d.members
                    ],
                    title=f"{group}: {d.state}",
                )
                continue
            lag = admin.consumer_group_lag(group, storage)
            if lag.state in ("Empty", "Dead"):
                print(f"Consumer group '{group}' has no active members.")
            print_table(
                LAG_COLUMNS,
                [
                    (
                        group,
                        p.topic,
                        p.partition,
                        p.current_offset if p.current_offset >= 0 else "-",
                        p.log_end_offset,
                        p.lag,
                        p.consumer_id,
                        p.host,
                        p.client_id,
                    )
                    for p in lag.partitions
                ],
            )
    return 0


def assignment_text(partitions: Iterable[TopicPartition]) -> str:
    """kafka-consumer-groups' way: ``topic:0,1;other:2`` (topics and partitions sorted), or -."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    text = ";".join(
        sorted(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in by_topic.items())
    )
    return text or "-"


def _members(group: str, d: ConsumerGroupDescription, verbose: bool) -> None:
    """The members as ``kafka-consumer-groups --describe --members [--verbose]`` prints them:
    a KIP-848 group's with their member epoch and current and target assignments."""
    static = any(m.group_instance_id for m in d.members)
    columns = (
        ["GROUP", "CONSUMER-ID"]
        + (["GROUP-INSTANCE-ID"] if static else [])
        + ["HOST", "CLIENT-ID", "#PARTITIONS"]
    )
    if verbose:
        columns += (
            ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
            if d.group_type == "consumer"
            else ["ASSIGNMENT"]
        )
    rows = []
    for m in d.members:
        row: list[object] = (
            [group, m.member_id]
            + ([m.group_instance_id or "-"] if static else [])
            + [m.host, m.client_id, len(m.assignment)]
        )
        if verbose and d.group_type == "consumer":
            row += [
                m.member_epoch,
                assignment_text(m.assignment),
                d.assignment_epoch,
                assignment_text(m.target_assignment),
            ]
        elif verbose:
            row.append(assignment_text(m.assignment))
        rows.append(tuple(row))
    print_table(tuple(columns), rows, title=f"{group}: {d.state} ({d.group_type})")


def _delete(args: argparse.Namespace) -> int:
    with admin_client(args, args.zookeeper) as admin:
        admin.delete_groups(args.groups, _storage(args))
    for g in args.groups:
        print(f"deleted group {g}")
    return 0


def _strategy(args: argparse.Namespace) -> tuple[str, int | None]:
    """The reset strategy and its value from the --to-* / --shift-by flags."""
    if args.to_earliest:
        return "earliest", None
    if args.to_latest:
        return "latest", None
    if args.to_current:
        return "current", None
    if args.to_offset is not None:
        return "offset", args.to_offset
    if args.shift_by is not None:
        return "shift", args.shift_by
    if args.to_datetime is not None:
        return "timestamp", parse_time(args.to_datetime)
    raise UsageError(
        "name where to: --to-earliest, --to-latest, --to-current, --to-offset N, "
        "--shift-by N or --to-datetime TIME"
    )


def _topics(items: list[str]) -> list[object] | None:
    """TOPIC or TOPIC:P[,P...] items as topic names and (topic, partition) pairs."""
    if not items:
        return None
    out: list[object] = []
    for item in items:
        topic, sep, parts = item.partition(":")
        if not sep:
            out.append(topic)
            continue
        try:
            out += [(topic, int(p)) for p in parts.split(",")]
        except ValueError:
            raise UsageError(f"--topic {item!r}: expected TOPIC or TOPIC:P,P") from None
    return out


def _reset(args: argparse.Namespace) -> int:
    if args.execute == args.dry_run and args.execute:
        raise UsageError("give --dry-run or --execute, not both")
    strategy, value = _strategy(args)
    with admin_client(args, args.zookeeper) as admin:
        plan = admin.reset_consumer_group_offsets(
            args.group,
            _topics(args.topic),
            strategy=strategy,
            value=value,
            dry_run=not args.execute,
            storage=_storage(args),
        )
    if not args.execute:
        print("dry run (nothing committed; add --execute to commit):")
    print_table(
        ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"),
        [
            (
                args.group,
                r.topic,
                r.partition,
                r.current_offset if r.current_offset >= 0 else "-",
                r.new_offset,
            )
            for r in plan
        ],
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``groups`` and its actions."""
    top = subcommand(
        subparsers,
        "groups",
        "list, describe, delete consumer groups, reset offsets",
        "kclient groups describe my-group\n"
        "kclient groups reset-offsets my-group --topic events --to-earliest --execute",
    )
    actions = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = subcommand(actions, "list", "list groups", "kclient groups list --state")
    p.add_argument("--state", action="store_true", help="a table with state and protocol type")
    p.set_defaults(run=_list)
    p = subcommand(
        actions,
        "describe",
        "per-partition offsets, log end and lag of groups",
        "kclient groups describe my-group\n"
        "kclient groups describe old-group --zookeeper 127.0.0.1:2181",
    )
    p.add_argument("groups", nargs="+", metavar="GROUP")
    p.add_argument("--members", action="store_true", help="members instead of offsets")
    p.add_argument(
        "--verbose",
        action="store_true",
        help="with --members: each member's assignment (a KIP-848 group's: member "
        "epoch, current and target assignment)",
    )
    p.set_defaults(run=_describe)
    p = subcommand(actions, "delete", "delete inactive groups", "kclient groups delete my-group")
    p.add_argument("groups", nargs="+", metavar="GROUP")
    p.set_defaults(run=_delete)
    p = subcommand(
        actions,
        "reset-offsets",
        "move an inactive group's committed offsets",
        "kclient groups reset-offsets g1 --topic events --to-datetime "
        "2026-01-01T00:00:00 --dry-run\n"
        "kclient groups reset-offsets g1 --topic events:0,1 --shift-by -10 --execute",
    )
    p.add_argument("group")
    p.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,P]",
        help="what to reset (default: every partition with an offset)",
    )
    how = p.add_mutually_exclusive_group()
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-current", action="store_true")
    how.add_argument("--to-offset", type=int, metavar="N")
    how.add_argument("--shift-by", type=int, metavar="N")
    how.add_argument("--to-datetime", metavar="TIME", help="ISO-8601 (UTC if no zone) or ms")
    p.add_argument("--dry-run", action="store_true", help="show the plan only (the default)")
    p.add_argument("--execute", action="store_true", help="commit the new offsets")
    p.set_defaults(run=_reset)
    for parser in actions.choices.values():
        add_connection_options(parser)
        parser.add_argument(
            "--zookeeper",
            metavar="HOST:PORT",
            help="use the ZooKeeper-stored offsets of 0.8 groups",
        )
