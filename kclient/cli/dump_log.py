"""``kclient dump-log SEGMENT...``: Kafka's DumpLogSegments for kclient's and Kafka's segment
files: batches (``--deep``: records), CRC checks, offset and time index sanity, and the first
corrupt position.  It reads with kclient's own record and log readers."""

from __future__ import annotations

import argparse
import os
import struct
from pathlib import Path
from typing import Any

from .common import FAILED, OK, subcommand

__all__ = ["register", "dump_segment", "check_index", "check_time_index"]

_TIME_ENTRY = struct.Struct(">qi")


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def _delete_horizon(buf: bytes, b: Any) -> str:
    """deleteHorizonMs as Kafka prints it: the base timestamp when attribute bit 6 is set."""
    if b.magic < 2 or not buf[b.position + 22] & 0x40:
        return "OptionalLong.empty" if b.magic >= 2 else ""
    return f"OptionalLong[{b.first_timestamp}]"


def _batch_line(b: Any, valid: bool, buf: bytes) -> str:
    """One batch as DumpLogSegments prints it."""
    from kclient.protocol.compression import CODEC_NAMES
    from kclient.protocol.records import TIMESTAMP_TYPE_NAMES

    ts_name = TIMESTAMP_TYPE_NAMES.get(b.timestamp_type, "NoTimestampType")
    if b.magic < 2:  # a v0/v1 message or compressed wrapper
        return (
            f"offset: {b.last_offset} position: {b.position} {ts_name}: {b.max_timestamp} "
            f"size: {b.size} magic: {b.magic} compresscodec: "
            f"{CODEC_NAMES.get(b.codec, b.codec)} crc: {b.crc & 0xFFFFFFFF} "
            f"isvalid: {_bool(valid)}"
        )
    return (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
        f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} "
        f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
        f"partitionLeaderEpoch: {b.partition_leader_epoch} "
        f"isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)} "
        f"deleteHorizonMs: {_delete_horizon(buf, b)} "
        f"position: {b.position} {TIMESTAMP_TYPE_NAMES.get(b.timestamp_type, 'NoTimestampType')}"
        f": {b.max_timestamp} size: {b.size} magic: {b.magic} "
        f"compresscodec: {CODEC_NAMES.get(b.codec, b.codec)} crc: {b.crc & 0xFFFFFFFF} "
        f"isvalid: {_bool(valid)}"
    )


def _inner_crcs(buf: bytes, b: Any, valid: bool) -> list[tuple[int, bool]]:
    """(stored CRC, valid) of each message of a v0/v1 entry: the entry's own when plain, the
    inner messages' when it is a compressed wrapper."""
    from kclient.broker.log.entries import crc_ok
    from kclient.protocol.compression import decompress
    from kclient.protocol.records import LOG_OVERHEAD, scan_entries
    from kclient.protocol.records.legacy import parse_message

    if not b.codec:
        return [(b.crc & 0xFFFFFFFF, valid)]
    value = parse_message(buf, b.position, b.size - LOG_OVERHEAD, False)[5]
    data = decompress(b.codec, value, b.magic)
    return [
        (
            parse_message(data, s.position, s.size - LOG_OVERHEAD, False)[6],
            crc_ok(data, s.position, s.size, s.magic),
        )
        for s in scan_entries(data).entries
    ]


def _record_line(r: Any, b: Any, data: bool, crc: tuple[int, bool] | None = None) -> str:
    """One record of --deep (``crc``: a v0/v1 message's stored CRC and validity)."""
    from kclient.protocol.records import TIMESTAMP_TYPE_NAMES

    line = (
        f"| offset: {r.offset} "
        f"{TIMESTAMP_TYPE_NAMES.get(r.timestamp_type, 'NoTimestampType')}: "
        f"{r.timestamp} keySize: {len(r.key) if r.key is not None else -1} "
        f"valueSize: {len(r.value) if r.value is not None else -1}"
    )
    if crc is not None:
        line += f" isValid: {_bool(crc[1])} crc: {crc[0]}"
    else:
        seq = (b.base_sequence + r.offset - b.base_offset) if b.base_sequence >= 0 else -1
        line += f" sequence: {seq} headerKeys: [{','.join(k for k, _ in r.headers)}]"
    if data and r.key is not None:
        line += f" key: {r.key.decode('utf-8', 'backslashreplace')}"
    if data and r.value is not None:
        line += f" payload: {r.value.decode('utf-8', 'backslashreplace')}"
    return line


def dump_segment(
    path: Path, deep: bool = False, data: bool = False
) -> tuple[list[str], dict[int, int], str | None]:
    """The report lines of one .log file, position -> last offset of every valid batch, and
    the first problem ("first corrupt position P: why"), or None."""
    from kclient.broker.log.entries import crc_ok
    from kclient.protocol.records import scan_entries
    from kclient.protocol.records.reader import read_entry

    buf = _map(path)
    scan = scan_entries(buf)
    lines = [f"Dumping {path}", f"Log starting offset: {_base_offset(path)}"]
    starts: dict[int, int] = {}
    expected = -1
    for span in scan.entries:
        valid = crc_ok(buf, span.position, span.size, span.magic)
        try:
            batch = read_entry(buf, span, validate_crc=False)
        except Exception as exc:  # noqa: BLE001 - a damaged body: decoding it fails
            return lines, starts, f"first corrupt position {span.position}: {exc}"
        lines.append(_batch_line(batch, valid, buf))
        if not valid:
            return lines, starts, f"first corrupt position {span.position}: CRC mismatch"
        if batch.last_offset < expected:
            return (
                lines,
                starts,
                (
                    f"first corrupt position {span.position}: offset "
                    f"{batch.last_offset} below {expected}, out of sequence"
                ),
            )
        expected = batch.last_offset + 1
        starts[span.position] = batch.last_offset
        if deep and batch.magic < 2:
            lines += [
                _record_line(r, batch, data, crc)
                for r, crc in zip(batch.records, _inner_crcs(buf, batch, valid))
            ]
        elif deep:
            lines += [_record_line(r, batch, data) for r in batch.records]
    if scan.error is not None:
        return lines, starts, f"first corrupt position {scan.valid_bytes}: {scan.error}"
    if scan.truncated:
        return (
            lines,
            starts,
            (
                f"first corrupt position {scan.valid_bytes}: partial entry "
                f"({len(buf) - scan.valid_bytes} trailing bytes)"
            ),
        )
    return lines, starts, None


def _map(path: Path) -> Any:
    """The file's bytes, memory-mapped read-only (a 1 GB segment is not read into memory)."""
    import mmap

    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _base_offset(path: Path) -> int:
    """The segment's base offset from its file name (0 when the name is not a number)."""
    return int(path.stem) if path.stem.isdigit() else 0


def _entries(raw: bytes, entry: struct.Struct) -> list[tuple[int, ...]]:
    """Index entries without the zero entries Kafka preallocates after the last one."""
    rows = list(entry.iter_unpack(raw[: len(raw) - len(raw) % entry.size]))
    while rows and not any(rows[-1]):
        rows.pop()
    return rows


def check_index(
    path: Path, starts: dict[int, int], base: int, verbose: bool
) -> tuple[list[str], str | None]:
    """Check an offset index against the batches of its segment (Kafka's sanity check, and
    every entry must name the start of a batch holding that last offset)."""
    from kclient.broker.log.index import ENTRY

    raw = path.read_bytes()
    if len(raw) % ENTRY.size:
        return [], f"{path}: {len(raw)} bytes, not a multiple of {ENTRY.size}"
    lines = [f"Dumping {path}"]
    last = (-1, -1)
    for i, (rel, pos) in enumerate(_entries(raw, ENTRY)):
        if verbose:
            lines.append(f"offset: {base + rel} position: {pos}")
        if rel <= last[0] or pos <= last[1]:
            return lines, f"{path}: entry {i} ({base + rel}, {pos}) does not increase"
        if starts.get(pos) != base + rel:
            return lines, (
                f"{path}: entry {i}: index offset {base + rel} at position {pos}, "
                f"log offset {starts.get(pos, 'none (no batch starts there)')}"
            )
        last = (rel, pos)
    lines.append(f"{path}: {len(_entries(raw, ENTRY))} entries ok")
    return lines, None


def check_time_index(
    path: Path, last_offset: int, base: int, verbose: bool
) -> tuple[list[str], str | None]:
    """Check a time index: timestamps and offsets never decrease and stay in the segment."""
    raw = path.read_bytes()
    if len(raw) % _TIME_ENTRY.size:
        return [], f"{path}: {len(raw)} bytes, not a multiple of {_TIME_ENTRY.size}"
    rows = _entries(raw, _TIME_ENTRY)
    lines = [f"Dumping {path}"]
    prev = (-1, -1)
    for i, (ts, rel) in enumerate(rows):
        if verbose:
            lines.append(f"timestamp: {ts} offset: {base + rel}")
        if ts < prev[0] or rel < prev[1] or base + rel > max(last_offset, base):
            return lines, f"{path}: entry {i} (timestamp {ts}, offset {base + rel}) out of order"
        prev = (ts, rel)
    lines.append(f"{path}: {len(rows)} entries ok")
    return lines, None


def _dump(path: Path, args: argparse.Namespace) -> str | None:
    """Print the report of one file; its first problem, or None."""
    log = path.with_suffix(".log")
    lines, starts, problem = dump_segment(log, args.deep, args.print_data)
    if path.suffix == ".log":
        print("\n".join(lines))
    if problem is not None:
        return f"{log}: {problem}"
    base = _base_offset(log)
    checks = []
    if path.suffix in (".log", ".index") and log.with_suffix(".index").exists() and args.index:
        checks.append(check_index(log.with_suffix(".index"), starts, base, path.suffix == ".index"))
    if (
        path.suffix in (".log", ".timeindex")
        and log.with_suffix(".timeindex").exists()
        and args.index
    ):
        checks.append(
            check_time_index(
                log.with_suffix(".timeindex"),
                max(starts.values(), default=-1),
                base,
                path.suffix == ".timeindex",
            )
        )
    for out, issue in checks:
        print("\n".join(out if path.suffix != ".log" else out[-1:]))
        if issue:
            return issue
    return None


def _run(args: argparse.Namespace) -> int:
    failed = False
    for name in args.files:
        path = Path(name)
        if path.suffix not in (".log", ".index", ".timeindex"):
            print(f"{path}: not a .log, .index or .timeindex file (skipped)")
            failed = True
            continue
        problem = _dump(path, args)
        if problem:
            print(problem)
            failed = True
    return FAILED if failed else OK


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``dump-log``."""
    p = subcommand(
        subparsers,
        "dump-log",
        "print and check segment files (.log, .index, .timeindex), as Kafka's DumpLogSegments",
        "kclient dump-log /tmp/kdata/events-0/00000000000000000000.log --deep\n"
        "kclient dump-log /var/kafka/events-0/*.index",
    )
    p.add_argument("files", nargs="+", metavar="SEGMENT")
    p.add_argument("--deep", action="store_true", help="every record of every batch")
    p.add_argument("--print-data", action="store_true", help="with --deep: keys and values")
    p.add_argument(
        "--no-index",
        dest="index",
        action="store_false",
        help="do not check the .index and .timeindex beside a .log",
    )
    p.set_defaults(run=_run)
