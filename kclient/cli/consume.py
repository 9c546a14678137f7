"""``kclient consume TOPIC``: read partitions from an offset (or as a group member) and print
each message raw, as JSON with its metadata, or through a kcat-style ``-f`` format string."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Generator
from typing import Any

from .common import (
    CommandError,
    UsageError,
    add_connection_options,
    add_topic_argument,
    admin_client,
    client_config,
    client_settings,
    subcommand,
    topic_of,
)
from .encoding import BINARY_FORMATS
from .outputs import Formatter
from .registry import add_registry_options, decoders, registry_client

__all__ = ["register", "read_partitions"]

#: how long ``-e`` waits for more data before a group member's stream counts as at its end
GROUP_END_MS = 2000


def _start_offset(spec: str, earliest: int, latest: int, by_time: int | None) -> int:
    """Where a partition starts for ``-o``: earliest, latest, N, -N (from the end), @ms."""
    if spec == "earliest" or spec == "beginning":
        return earliest
    if spec == "latest" or spec == "end":
        return latest
    if spec.startswith("@"):
        return by_time if by_time is not None and by_time >= 0 else latest
    n = int(spec)
    return max(earliest, latest + n) if n < 0 else n


def _check_offset(spec: str) -> str:
    """argparse type of -o."""
    if spec in ("earliest", "beginning", "latest", "end"):
        return spec
    try:
        int(spec[1:] if spec.startswith("@") else spec)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{spec!r}: expected earliest, latest, N, -N or @timestamp_ms"
        ) from None
    return spec


def _security(cfg: Any) -> dict[str, Any]:
    """The security keys given, for the SimpleConsumers."""
    return {
        k: cfg[k] for k in cfg if cfg.is_set(k) and k.startswith(("security.", "ssl.", "sasl."))
    }


def _positions(args: argparse.Namespace, admin: Any) -> dict[int, int]:
    """Partition -> the offset reading starts at."""
    from kclient.admin import OffsetSpec, TopicPartition

    parts = args.partition or admin.cluster.partitions_for(args.topic)
    tps = [TopicPartition(args.topic, p) for p in parts]
    lo = admin.list_offsets(dict.fromkeys(tps, OffsetSpec.EARLIEST))
    hi = admin.list_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    at = (
        admin.list_offsets({tp: int(args.offset[1:]) for tp in tps})
        if args.offset.startswith("@")
        else {}
    )
    return {
        tp.partition: _start_offset(
            args.offset, lo[tp].offset, hi[tp].offset, at[tp].offset if tp in at else None
        )
        for tp in tps
    }


def read_partitions(
    args: argparse.Namespace, exit_at_end: bool
) -> Generator[tuple[int, Any], None, None]:
    """(partition, MessageAndOffset) from the ``-o`` positions of ``args.partition`` (all by
    default), fetching from each leader; ends at the high watermarks with ``exit_at_end``."""
    from kclient.simple import FetchRequest, SimpleConsumer

    cfg = client_config(args)
    with admin_client(args) as admin:
        pos = _positions(args, admin)
        leaders = {p: admin.cluster.leader_for(args.topic, p) for p in pos}
    consumers: dict[int, Any] = {}
    done: set[int] = set()
    try:
        while done < set(pos):
            for node in sorted({b.node_id for b in leaders.values()}):
                parts = [p for p in sorted(pos) if leaders[p].node_id == node and p not in done]
                if not parts:
                    continue
                if node not in consumers:
                    b = leaders[parts[0]]
                    consumers[node] = SimpleConsumer(
                        b.host,
                        b.port,
                        client_id="kclient-cli",
                        max_wait_ms=500,
                        buffer_size=None,
                        security=_security(cfg),
                    )
                resp = consumers[node].multifetch(
                    [FetchRequest(args.topic, p, pos[p], 1 << 20) for p in parts]
                )
                for p in parts:
                    ms = resp.message_set(args.topic, p)
                    if ms.error is not None:
                        raise ms.error
                    for mo in ms:
                        if mo.offset >= pos[p]:
                            pos[p] = mo.offset + 1
                            yield p, mo
                    pos[p] = max(pos[p], ms.next_offset)
                    if exit_at_end and pos[p] >= ms.high_watermark:
                        done.add(p)
    finally:
        for c in consumers.values():
            c.close()


def _settle_args(args: argparse.Namespace) -> None:
    """-t TOPIC or TOPIC; --from-beginning as -o earliest (kafka-console-consumer's flag)."""
    args.topic = topic_of(args)
    if args.from_beginning and args.offset not in (None, "earliest", "beginning"):
        raise UsageError(f"--from-beginning and -o {args.offset} disagree; give one")
    args.offset = args.offset or ("earliest" if args.from_beginning else "latest")


def _check_topic(args: argparse.Namespace) -> None:
    """A missing topic is an error naming it: consume never creates one (a typo would)."""
    with admin_client(args) as admin:
        admin.cluster.refresh([args.topic], allow_auto_create=False)
        info = admin.cluster.topics.get(args.topic)
    if info is None or info.error_code:
        raise CommandError(
            f"topic {args.topic!r} does not exist (consume never creates topics; "
            f"`kclient topics create {args.topic}` does)"
        )


def _decoding(args: argparse.Namespace, out: Formatter) -> Formatter:
    """``out`` with keys / values of a registry format printed as JSON."""
    if not (args.key_format or args.value_format):
        return out
    return _Decoding(args, decoders(args, registry_client(args)))


class _Decoding(Formatter):
    """A Formatter that decodes registry-encoded keys and values first; a message that does
    not decode is named on stderr and skipped (the exit code is then 1)."""

    def __init__(self, args: argparse.Namespace, decode: dict[str, Any]) -> None:
        super().__init__(args)
        self.decode, self.failed = decode, 0

    def write(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: list[tuple[str, bytes | None]],
    ) -> None:
        from kclient.schema_registry import SerializationError

        headers = list(headers)
        try:
            if "key" in self.decode:
                key = self.decode["key"](key, topic, headers)
            if "value" in self.decode:
                value = self.decode["value"](value, topic, headers)
        except SerializationError as exc:
            print(f"{topic}/{partition}/{offset}: skipped: {exc}", file=sys.stderr)
            self.failed += 1
            return
        super().write(topic, partition, offset, key, value, timestamp, headers)


def _run(args: argparse.Namespace) -> int:
    _settle_args(args)
    out = _decoding(args, Formatter(args))  # usage errors first, then the network
    _check_topic(args)
    code = _run_formatted(args, out)
    return 1 if getattr(out, "failed", 0) else code


def _run_formatted(args: argparse.Namespace, out: Formatter) -> int:
    """Read and print through ``out``."""
    if args.share_group:
        return _run_share_group(args, out)
    if args.group:
        return _run_group(args, out)
    count = 0
    messages = read_partitions(args, args.exit_at_end)
    try:
        for p, mo in messages:
            m = mo.message
            out.write(args.topic, p, mo.offset, m.key, m.value, m.timestamp, m.headers)
            count += 1
            if args.count and count >= args.count:
                break
    finally:
        messages.close()
        out.flush()
    return 0


def _run_group(args: argparse.Namespace, out: Formatter) -> int:
    """As a member of ``-G`` group, committing what was printed."""
    from kclient import consumer
    from kclient.errors import ConsumerTimeoutError

    if args.partition:
        raise UsageError("-p and -G do not go together: the group assigns partitions")
    if args.offset not in ("earliest", "beginning", "latest", "end"):
        raise UsageError(
            "with -G, -o is earliest or latest (where a group without committed "
            "offsets starts); move a group with `kclient groups reset-offsets`"
        )
    reset = {"earliest": "smallest", "beginning": "smallest"}.get(args.offset, "largest")
    cfg = client_config(
        args,
        "consumer",
        **{
            "group.id": args.group,
            "auto.offset.reset": reset,
            "auto.commit.enable": False,
            "consumer.timeout.ms": GROUP_END_MS if args.exit_at_end else -1,
        },
    )
    conn = consumer.create(cfg)
    count = 0
    try:
        stream = conn.create_message_streams({args.topic: 1})[args.topic][0]
        try:
            for m in stream:
                out.write(m.topic, m.partition, m.offset, m.key, m.message, m.timestamp, m.headers)
                count += 1
                if args.count and count >= args.count:
                    break
        except ConsumerTimeoutError:
            pass
        conn.commit_offsets()
    finally:
        out.flush()
        conn.shutdown()
    return 0


def _run_share_group(args: argparse.Namespace, out: Formatter) -> int:
    """As a member of share group ``--share-group`` (kafka-console-share-consumer): records
    printed are accepted; with -e, exit after GROUP_END_MS without records."""
    import time

    from kclient.consumer.share_consumer import ShareConsumer
    from kclient.errors import InvalidConfigError

    if args.partition or args.group:
        raise UsageError("--share-group takes neither -p nor -G: the share group assigns")
    if args.offset != "latest" or args.from_beginning:
        raise UsageError(
            "with --share-group, where to start is the group's "
            "share.auto.offset.reset config (or kclient share-groups reset-offsets)"
        )
    given = client_settings(args, **{"group.id": args.share_group})
    given["share.acknowledgement.mode"] = "explicit"  # past -c, records go back (released)
    count = 0
    try:
        consumer = ShareConsumer(given, args.topic)
    except InvalidConfigError as exc:
        raise UsageError(str(exc)) from None
    with consumer as c:
        try:
            quiet_since = time.monotonic()
            while not args.count or count < args.count:
                records = c.poll(0.2)
                if records:
                    quiet_since = time.monotonic()
                elif args.exit_at_end and time.monotonic() - quiet_since > GROUP_END_MS / 1000:
                    break
                for r in records[: args.count - count if args.count else None]:
                    out.write(
                        r.topic, r.partition, r.offset, r.key, r.value, r.timestamp, r.headers
                    )
                    c.acknowledge(r)
                    count += 1
                c.commit_sync()
        finally:
            out.flush()
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``consume``."""
    p = subcommand(
        subparsers,
        "consume",
        "print messages of a topic",
        "kclient consume events -o earliest -e\n"
        "kclient consume events -p 0 -o -10 -c 10 --format json\n"
        "kclient consume events -G my-group -e -f '%p/%o %k=%s\\n'\n"
        "kclient consume blobs -o earliest -e --binary base64 | base64 -d\n"
        "kclient consume users -o earliest -e --value-format avro "
        "-r http://127.0.0.1:8081",
    )
    add_topic_argument(p)
    p.add_argument(
        "-p",
        "--partition",
        type=int,
        action="append",
        metavar="P",
        help="read only this partition (repeatable; default: all)",
    )
    p.add_argument(
        "-o",
        "--offset",
        type=_check_offset,
        help="earliest, latest (default), N, -N (N before the end), @timestamp_ms",
    )
    p.add_argument(
        "--from-beginning", action="store_true", help="-o earliest (kafka-console-consumer's flag)"
    )
    p.add_argument("-G", "--group", help="consume as a member of this group (commits at exit)")
    p.add_argument(
        "--share-group",
        metavar="G",
        help="consume as a member of share group G (records printed are accepted)",
    )
    p.add_argument("-c", "--count", type=int, help="exit after this many messages")
    p.add_argument(
        "-e",
        "--exit-at-end",
        action="store_true",
        help=f"exit at the end of every partition (with -G: after {GROUP_END_MS} ms without data)",
    )
    p.add_argument(
        "--format",
        default="raw",
        choices=("raw", "json"),
        help="raw: the value (-K: key SEP value); json: one object with metadata, "
        'its "encoding" saying how key, value and header values are '
        "written (utf-8, or base64 when one is not UTF-8 text)",
    )
    p.add_argument(
        "-f",
        "--fmt",
        metavar="FORMAT",
        help="kcat-style: %%t topic %%p partition %%o offset %%k key %%s value "
        "%%h headers %%T timestamp %%S value size, \\n \\t",
    )
    p.add_argument("-K", "--key-separator", metavar="SEP", help="raw: print key SEP value")
    p.add_argument(
        "--binary",
        choices=BINARY_FORMATS,
        help="print keys, values and header values as base64 or hex",
    )
    add_registry_options(p, produce=False)
    add_connection_options(p)
    p.set_defaults(run=_run)
