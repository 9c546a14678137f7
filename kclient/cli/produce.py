"""``kclient produce TOPIC``: lines (or JSON lines) from stdin or a file, one message each, with
a delivery summary on stderr at the end."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

from .common import (
    UsageError,
    add_connection_options,
    add_topic_argument,
    client_config,
    subcommand,
    topic_of,
)
from .encoding import BINARY_FORMATS, decode_field
from .registry import add_registry_options, encoders, registry_client

__all__ = ["register", "parse_line"]

Header = tuple[str, bytes | None]


def _headers(items: list[str], binary: str | None) -> list[Header]:
    """-H name=value items."""
    out: list[Header] = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"-H {item!r}: expected NAME=VALUE")
        out.append((name, decode_field(value.encode(), binary)))
    return out


def _json_field(obj: dict[str, Any], name: str, binary: str | None) -> bytes | None:
    """A JSON line's key or value: a string (encoded by --binary) or any JSON (kept as JSON)."""
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return decode_field(value.encode(), binary)
    return json.dumps(value, separators=(",", ":")).encode()


def parse_line(
    line: bytes, args: argparse.Namespace
) -> tuple[bytes | None, bytes | None, list[Header], int | None]:
    """Key, value, headers and partition of one input line."""
    if args.format == "json":
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise ValueError("a JSON line must be an object with key/value/headers")
        raw = obj.get("headers") or []
        pairs = raw.items() if isinstance(raw, dict) else raw
        headers = [
            (str(k), None if v is None else decode_field(str(v).encode(), args.binary))
            for k, v in pairs
        ]
        return (
            _json_field(obj, "key", args.binary),
            _json_field(obj, "value", args.binary),
            headers,
            obj.get("partition"),
        )
    key = None
    if args.key_separator is not None:
        sep = args.key_separator.encode()
        raw_key, found, line = line.partition(sep)
        if not found:
            raise ValueError(f"no key separator {args.key_separator!r} in the line")
        key = decode_field(raw_key, args.binary)
    return key, decode_field(line, args.binary), [], None


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    """Lines without their newline (a final line without one too); empty lines skipped."""
    for raw in stream:
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if line.endswith(b"\r"):
            line = line[:-1]
        if line:
            yield line


def _run(args: argparse.Namespace) -> int:
    from kclient import Producer, ProducerData

    defaults: dict[str, Any] = {
        "producer.type": "async",
        "compression.codec": args.codec,
        "request.required.acks": args.acks,
    }
    cfg = client_config(args, "producer", **defaults)
    fixed_headers = _headers(args.header, args.binary)
    stream = open(args.file, "rb") if args.file else sys.stdin.buffer  # noqa: SIM115
    sent = bad = 0
    partitions: dict[int, int] = {}
    start = time.perf_counter()

    def delivered(report: Any) -> None:
        if report.error is None:
            partitions[report.partition] = partitions.get(report.partition, 0) + len(report)

    args.topic = topic_of(args)
    encode = encoders(args, registry_client(args)) if args.key_format or args.value_format else {}
    producer = Producer(cfg, on_report=delivered)
    try:
        producer.context.cluster.any_connection()  # a dead cluster: one line, at once
    except BaseException:
        producer.close()
        raise
    try:
        for number, line in enumerate(_lines(stream), 1):
            try:
                key, value, headers, partition = parse_line(line, args)
                headers = fixed_headers + headers
                key, value = _encoded(encode, args.topic, key, value, headers)
            except ValueError as exc:
                print(f"line {number}: skipped: {exc}", file=sys.stderr)
                bad += 1
                continue
            producer.send(
                ProducerData(
                    args.topic,
                    value,
                    key=key,
                    partition=args.partition if partition is None else partition,
                    headers=headers or None,
                )
            )
            sent += 1
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
        failure = _close(producer)
    return _summary(args.topic, sent, bad, partitions, failure, time.perf_counter() - start)


def _encoded(
    encode: dict[str, Any],
    topic: str,
    key: bytes | None,
    value: bytes | None,
    headers: list[Header],
) -> tuple[bytes | None, bytes | None]:
    """Key and value through their registry formats (a bad value is a ValueError)."""
    from kclient.schema_registry import SerializationError

    try:
        if "key" in encode:
            key = encode["key"](key, topic, headers)
        if "value" in encode:
            value = encode["value"](value, topic, headers)
    except SerializationError as exc:
        raise ValueError(str(exc)) from None
    return key, value


def _close(producer: Any) -> BaseException | None:
    """Flush and close; the failure (if any) rather than raising it."""
    try:
        producer.close()
    except Exception as exc:  # noqa: BLE001 - returned to the caller, who reports it
        return exc
    return None


def _summary(
    topic: str,
    sent: int,
    bad: int,
    partitions: dict[int, int],
    failure: BaseException | None,
    seconds: float,
) -> int:
    """The delivery summary on stderr; 1 when anything was not delivered."""
    ok = sum(partitions.values())
    where = ", ".join(f"{p}: {n}" for p, n in sorted(partitions.items()))
    print(
        f"delivered {ok} of {sent} message(s) to {topic} in {seconds:.2f}s"
        + (f" (per partition: {where})" if where else "")
        + (f"; {bad} bad line(s) skipped" if bad else ""),
        file=sys.stderr,
    )
    if failure is not None:
        print(f"failed: {type(failure).__name__}: {failure}", file=sys.stderr)
    return 0 if failure is None and not bad and ok == sent else 1


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``produce``."""
    p = subcommand(
        subparsers,
        "produce",
        "send lines of stdin or a file, one message each",
        "printf 'k1:hello\\nk2:world\\n' | kclient produce events -K :\n"
        "kclient produce events --format json --file msgs.jsonl --codec zstd\n"
        '  (a JSON line: {"key": "k1", "value": "v", "headers": {"h": "x"}})\n'
        "base64 < blobs.txt | kclient produce blobs --binary base64\n"
        'echo \'{"name": "ann"}\' | kclient produce users --value-format avro '
        "--value-schema @user.avsc -r http://127.0.0.1:8081",
    )
    add_topic_argument(p)
    p.add_argument("--file", metavar="PATH", help="read lines from PATH instead of stdin")
    p.add_argument(
        "-K", "--key-separator", metavar="SEP", help="split each line into key SEP value"
    )
    p.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a header on every message (repeatable)",
    )
    p.add_argument("-p", "--partition", type=int, help="send every message to this partition")
    p.add_argument(
        "-z", "--codec", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd")
    )
    p.add_argument("--acks", default="1", choices=("0", "1", "-1", "all"))
    p.add_argument(
        "--format",
        default="line",
        choices=("line", "json"),
        help="line: the value (and -K key); json: key/value/headers/partition",
    )
    p.add_argument(
        "--binary",
        choices=BINARY_FORMATS,
        help="keys, values and header values are base64 or hex text",
    )
    add_registry_options(p, produce=True)
    add_connection_options(p)
    p.set_defaults(run=_run)
