"""``kclient topics create|delete|list|describe|alter``: kafka-topics for kclient."""

from __future__ import annotations

import argparse

from .common import UsageError, add_connection_options, admin_client, print_table, subcommand

__all__ = ["register"]


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    """KEY=VALUE items of a repeatable flag."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def _create(args: argparse.Namespace) -> int:
    from kclient.admin import NewTopic
    from kclient.errors import TopicAlreadyExistsError

    topic = NewTopic(
        args.topic,
        args.partitions,
        args.replication_factor,
        configs=_pairs(args.config, "--config"),
    )
    with admin_client(args) as admin:
        try:
            made = admin.create_topics([topic], validate_only=args.validate_only)[0]
        except TopicAlreadyExistsError:
            if args.if_not_exists:
                return 0
            raise
    verb = "would create" if args.validate_only else "created"
    print(
        f"{verb} topic {made.name} with {made.num_partitions} partition(s), "
        f"replication factor {made.replication_factor}"
    )
    return 0


def _delete(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        admin.delete_topics(args.topics)
    for name in args.topics:
        print(f"deleted topic {name}")
    return 0


def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        for t in admin.list_topics(include_internal=args.internal):
            print(t.name)
    return 0


def _describe(args: argparse.Namespace) -> int:
    from kclient.admin import ConfigResource, ConfigResourceType

    with admin_client(args) as admin:
        names = args.topics or [t.name for t in admin.list_topics()]
        described = admin.describe_topics(names)
        configs = (
            admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
            if names
            else {}
        )
    rows = []
    for name in names:
        d = described[name]
        overrides = {
            e.name: e.value
            for e in configs.get(ConfigResource(ConfigResourceType.TOPIC, name), [])
            if not e.is_default and e.source == "DYNAMIC_TOPIC_CONFIG"
        }
        rf = len(d.partitions[0].replicas) if d.partitions else 0
        print(
            f"Topic: {name}\tTopicId: {d.topic_id or '-'}\tPartitionCount: "
            f"{len(d.partitions)}\tReplicationFactor: {rf}\tConfigs: "
            + ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))
        )
        rows += [
            (name, p.partition, p.leader, ",".join(map(str, p.replicas)), ",".join(map(str, p.isr)))
            for p in d.partitions
        ]
    print_table(("TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"), rows)
    return 0


def _alter(args: argparse.Namespace) -> int:
    from kclient.admin import AlterConfigOp, AlterConfigOpType, ConfigResource, ConfigResourceType

    if args.partitions is None and not args.config and not args.delete_config:
        raise UsageError("nothing to alter: give --partitions, --config or --delete-config")
    ops = [AlterConfigOp(k, v) for k, v in _pairs(args.config, "--config").items()]
    ops += [AlterConfigOp(k, None, AlterConfigOpType.DELETE) for k in args.delete_config]
    resource = ConfigResource(ConfigResourceType.TOPIC, args.topic)
    with admin_client(args) as admin:
        # every change is validated by the broker first: a bad one changes nothing
        if args.partitions is not None:
            admin.create_partitions({args.topic: args.partitions}, validate_only=True)
        if ops:
            admin.incremental_alter_configs({resource: ops}, validate_only=True)
        if args.partitions is not None:
            admin.create_partitions({args.topic: args.partitions})
            print(f"topic {args.topic} now has {args.partitions} partitions")
        if ops:
            admin.incremental_alter_configs({resource: ops})
            for op in ops:
                print(
                    f"topic {args.topic}: {op.op.name.lower()} {op.name}"
                    + (f"={op.value}" if op.value is not None else "")
                )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``topics`` and its actions."""
    top = subcommand(
        subparsers,
        "topics",
        "create, delete, list, describe and alter topics",
        "kclient topics create events --partitions 3 --config retention.ms=86400000\n"
        "kclient topics describe events",
    )
    actions = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = subcommand(
        actions,
        "create",
        "create a topic",
        "kclient topics create events -p 3 -r 1 --config cleanup.policy=compact",
    )
    p.add_argument("topic")
    p.add_argument(
        "-p",
        "--partitions",
        type=int,
        default=-1,
        help="partition count (default: the broker's num.partitions)",
    )
    p.add_argument(
        "-r",
        "--replication-factor",
        type=int,
        default=-1,
        help="replicas per partition (default: the broker's)",
    )
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--validate-only", action="store_true", help="check, create nothing")
    p.add_argument("--if-not-exists", action="store_true", help="succeed if it exists")
    p.set_defaults(run=_create)
    p = subcommand(actions, "delete", "delete topics", "kclient topics delete events old-events")
    p.add_argument("topics", nargs="+", metavar="TOPIC")
    p.set_defaults(run=_delete)
    p = subcommand(actions, "list", "list topic names", "kclient topics list --internal")
    p.add_argument("--internal", action="store_true", help="include __consumer_offsets & co")
    p.set_defaults(run=_list)
    p = subcommand(
        actions,
        "describe",
        "partitions, leaders, replicas, ISR and configs",
        "kclient topics describe events",
    )
    p.add_argument("topics", nargs="*", metavar="TOPIC", help="default: every topic")
    p.set_defaults(run=_describe)
    p = subcommand(
        actions,
        "alter",
        "add partitions or change topic configs (all validated first: a bad one changes nothing)",
        "kclient topics alter events --partitions 6 --config retention.ms=3600000",
    )
    p.add_argument("topic")
    p.add_argument("-p", "--partitions", type=int, help="new total partition count")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--delete-config", action="append", default=[], metavar="KEY")
    p.set_defaults(run=_alter)
    for parser in actions.choices.values():
        add_connection_options(parser)
