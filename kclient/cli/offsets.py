"""``kclient offsets TOPIC``: earliest, latest or by-time offsets, as kafka-get-offsets."""

from __future__ import annotations

import argparse

from .common import add_connection_options, admin_client, parse_time, subcommand

__all__ = ["register"]


def _spec(text: str) -> int:
    """--time as an OffsetSpec: earliest (-2), latest (-1), max-timestamp (-3) or ms/ISO."""
    named = {"earliest": -2, "latest": -1, "max-timestamp": -3}
    return named[text] if text in named else parse_time(text)


def _run(args: argparse.Namespace) -> int:
    from kclient.admin import TopicPartition

    spec = _spec(args.time)
    with admin_client(args) as admin:
        topics = args.topics or [t.name for t in admin.list_topics()]
        described = admin.describe_topics(topics)
        parts = [
            TopicPartition(t, d.partition)
            for t in topics
            for d in sorted(described[t].partitions, key=lambda d: d.partition)
            if not args.partitions or d.partition in args.partitions
        ]
        found = admin.list_offsets(dict.fromkeys(parts, spec))
    for tp in parts:
        r = found[tp]
        print(f"{tp.topic}:{tp.partition}:{r.offset if r.offset >= 0 else ''}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``offsets``."""
    p = subcommand(
        subparsers,
        "offsets",
        "offsets per partition (TOPIC:PARTITION:OFFSET), as kafka-get-offsets",
        "kclient offsets events --time earliest\n"
        "kclient offsets events --time 2026-11-25T12:00:00Z -p 0",
    )
    p.add_argument("topics", nargs="*", metavar="TOPIC", help="default: every topic")
    p.add_argument(
        "-t",
        "--time",
        default="latest",
        help="latest (default), earliest, max-timestamp, ms or ISO-8601 date-time",
    )
    p.add_argument("-p", "--partitions", type=int, action="append", metavar="P")
    add_connection_options(p)
    p.set_defaults(run=_run)
