"""Prepare a Produce request's records for the log: assign offsets and LogAppendTime.

Private helper of the log (``kclient.protocol.records`` has the per-entry setters but no
whole-buffer assignment yet).  Offsets are assigned in place wherever the format allows: a v2
batch only gets a new ``baseOffset`` (not under its CRC), a v0/v1 message or v1 compressed
wrapper (inner offsets relative 0..n-1) only a new outer offset.  A v0 compressed wrapper keeps
absolute offsets inside its compressed value, so it is decompressed and re-encoded, as Kafka's
broker does; so is a v1 wrapper whose inner offsets are not 0..n-1.
"""
from __future__ import annotations

import struct
from typing import List, NamedTuple, Optional, Tuple

from kclient.protocol import compression
from kclient.protocol.errors import CorruptRecordError, MessageSizeTooLargeError
from kclient.protocol.records import legacy, v2
from kclient.protocol.records.common import LOG_OVERHEAD, NO_TIMESTAMP
from kclient.protocol.records.reader import EntrySpan, scan_entries

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class Prepared(NamedTuple):
    """The bytes to append and what they hold."""

    data: bytes
    first_offset: int
    last_offset: int
    max_timestamp: int
    record_count: int
    entries: List[Tuple[int, int, int]]  # (position in data, size, largest offset) per entry


def _spans(records: bytes, magic: int, max_message_bytes: int) -> List[EntrySpan]:
    """The complete entries of ``records``; reject partial, corrupt, oversized or wrong-format input."""
    scan = scan_entries(records)
    if scan.error is not None:
        raise scan.error
    if scan.truncated or not scan.entries:
        raise CorruptRecordError("records buffer is empty or ends with a partial entry")
    for span in scan.entries:
        if span.magic != magic:
            raise ValueError(f"entry at offset field {span.offset} has magic {span.magic}, "
                             f"but this log stores format {magic}")
        if span.size > max_message_bytes:
            raise MessageSizeTooLargeError(
                f"entry of {span.size} bytes exceeds max.message.bytes={max_message_bytes}")
    return scan.entries


def _v2_entry(buf: bytearray, span: EntrySpan, offset: int, lat: Optional[int]) -> Tuple[int, int]:
    """Rewrite a batch's baseOffset (and LogAppendTime); return (record span, max timestamp)."""
    pos, size = span.position, span.size
    v2.set_base_offset(buf, pos, offset)
    if lat is not None:
        v2.set_log_append_time(buf, pos, size - LOG_OVERHEAD, lat)
    count = _INT32.unpack_from(buf, pos + 23)[0] + 1
    if count < 1:
        raise CorruptRecordError(f"batch has lastOffsetDelta {count - 1}", offset=offset)
    return count, _INT64.unpack_from(buf, pos + 35)[0]


def _reencode_wrapper(msg: tuple, inner: List[tuple], first: int) -> bytes:
    """Re-encode a compressed v0/v1 wrapper with inner offsets starting at ``first``."""
    _, magic, attrs, ts, key, _, _ = msg
    n = len(inner)
    offsets = range(first, first + n) if magic == 0 else range(n)
    body = b"".join(legacy.encode_message(m[1], m[2], m[3], m[4], m[5], o)
                    for m, o in zip(inner, offsets))
    value = compression.compress(attrs & 0x07, body, magic)
    return legacy.encode_message(magic, attrs, ts, key, value, first + n - 1)


def _wrapper_entry(buf: bytearray, span: EntrySpan, offset: int,
                   max_decompressed: int) -> Tuple[int, Optional[bytes]]:
    """Assign offsets to a compressed wrapper: (inner count, re-encoded bytes or None)."""
    pos, size = span.position, span.size
    msg = legacy.parse_message(bytes(buf[pos:pos + size]), 0, size - LOG_OVERHEAD, False)
    inner = legacy.decompress_wrapper(msg, max_decompressed)
    n = len(inner)
    expected = range(offset, offset + n) if msg[1] == 0 else range(n)
    if [m[0] for m in inner] != list(expected):
        return n, _reencode_wrapper(msg, inner, offset)
    legacy.set_offset(buf, pos, offset + n - 1)
    return n, None


def _legacy_entry(buf: bytearray, span: EntrySpan, offset: int, lat: Optional[int],
                  max_decompressed: int) -> Tuple[int, int, Optional[bytes]]:
    """Assign offsets to a v0/v1 entry: (record count, max timestamp, replacement bytes)."""
    pos = span.position
    if buf[pos + 17] & 0x07:
        count, new = _wrapper_entry(buf, span, offset, max_decompressed)
    else:
        legacy.set_offset(buf, pos, offset)
        count, new = 1, None
    if span.magic == 0:
        return count, NO_TIMESTAMP, new
    if lat is not None:
        if new is not None:
            new = bytearray(new)
            legacy.set_log_append_time(new, 0, len(new) - LOG_OVERHEAD, lat)
            new = bytes(new)
        else:
            legacy.set_log_append_time(buf, pos, span.size - LOG_OVERHEAD, lat)
    source = new if new is not None else buf[pos:pos + 26]
    return count, _INT64.unpack_from(source, 18)[0], new


def prepare(records: bytes, magic: int, next_offset: int, *, log_append_time: Optional[int],
            max_message_bytes: int,
            max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED) -> Prepared:
    """Assign offsets from ``next_offset`` (and LogAppendTime) to a records buffer of ``magic``."""
    spans = _spans(records, magic, max_message_bytes)
    buf = bytearray(records)
    lat = log_append_time if magic > 0 else None
    parts: List[object] = []
    entries: List[Tuple[int, int, int]] = []
    offset, out_pos, max_ts = next_offset, 0, NO_TIMESTAMP
    for span in spans:
        new = None
        if magic == 2:
            count, ts = _v2_entry(buf, span, offset, lat)
        else:
            count, ts, new = _legacy_entry(buf, span, offset, lat, max_decompressed)
        size = span.size if new is None else len(new)
        parts.append(new if new is not None else (span.position, span.size))
        offset += count
        entries.append((out_pos, size, offset - 1))
        out_pos += size
        max_ts = max(max_ts, ts)
    data = _join(buf, parts)
    return Prepared(data, next_offset, offset - 1, max_ts, offset - next_offset, entries)


def _join(buf: bytearray, parts: List[object]) -> bytes:
    """Concatenate in-place entries (``(position, size)``) and re-encoded ones (bytes)."""
    if all(isinstance(p, tuple) for p in parts):
        return bytes(buf)
    view = memoryview(buf)
    return b"".join(p if isinstance(p, bytes) else view[p[0]:p[0] + p[1]] for p in parts)


__all__ = ["Prepared", "prepare"]
