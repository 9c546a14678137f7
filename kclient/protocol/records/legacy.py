"""Message formats v0 and v1: message sets (Kafka 0.8 - 0.10), encode and decode.

Each entry::

    offset int64, size int32,
    crc uint32 (CRC-32 IEEE of magic..end), magic int8, attributes int8,
    [timestamp int64 (v1 only)], keyLength int32, key, valueLength int32, value

A compressed *wrapper* message (codec in attributes bits 0-2, null key) holds a compressed inner
message set as its value.  Inner offsets are absolute in v0; in v1 they are relative and the
wrapper carries the absolute offset of the last inner message, so an inner message's absolute
offset is ``wrapper_offset - last_inner_offset + inner_offset``.  A v1 wrapper with the
LogAppendTime bit (attributes bit 3) gives every inner message the wrapper's timestamp.
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from kclient.protocol import compression
from kclient.protocol.errors import CorruptRecordError, ProtocolDecodeError
from kclient.protocol.records.common import (
    CODEC_MASK,
    CREATE_TIME,
    LEGACY_INFO,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
    TIMESTAMP_TYPE_MASK,
    Batch,
    Record,
    RecordFactory,
    corrupt,
    make_records,
)

#: A parsed message: (offset, magic, attributes, timestamp, key, value, crc).
Message = tuple[Any, ...]
#: A decoded message as a record row: (offset, timestamp, timestamp type, key, value, info).
Row = tuple[Any, ...]

V0_HEAD = struct.Struct(">qiIbBi")  # offset, size, crc, magic, attributes, key length
V1_HEAD = struct.Struct(">qiIbBqi")  # ... timestamp, key length
V0_BODY = struct.Struct(">bbi")  # magic, attributes, key length (CRC'd part)
V1_BODY = struct.Struct(">bbqi")  # magic, attributes, timestamp, key length
LOG_HEAD = struct.Struct(">qiI")  # offset, size, crc
INT32 = struct.Struct(">i")
OFFSET_FIELD = struct.Struct(">q")
STORED_CRC = struct.Struct(">I")
#: Where the stored CRC sits in a message.
CRC_OFFSET = 12
_SMALL = 4096  # CRC small messages over a slice, big ones over a memoryview


# ----------------------------------------------------------------------------- encode
def encode_message(
    magic: int,
    attributes: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    offset: int = 0,
) -> bytes:
    """Encode one v0/v1 message with its log overhead (offset, size) and CRC-32."""
    kl = -1 if key is None else len(key)
    if magic == 0:
        head = V0_BODY.pack(0, attributes, kl)
    else:
        head = V1_BODY.pack(1, attributes, timestamp, kl)
    vl = -1 if value is None else len(value)
    body = b"".join((head, key or b"", INT32.pack(vl), value or b""))
    return LOG_HEAD.pack(offset, len(body) + 4, zlib.crc32(body)) + body


def _encode_plain(
    magic: int,
    values: Iterable[bytes | None],
    keys: Iterable[bytes | None],
    timestamps: Iterable[int],
    offsets: Iterable[int],
    attributes: int,
) -> bytes:
    """Encode uncompressed messages, one per value, at the given offsets."""
    enc = encode_message
    parts = [
        enc(magic, attributes, ts, k, v, off)
        for v, k, ts, off in zip(values, keys, timestamps, offsets)
    ]
    return b"".join(parts)


def build_message_set(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None = None,
    timestamps: Sequence[int | None] | None = None,
    *,
    magic: int = 1,
    codec: int = compression.NONE,
    base_offset: int = 0,
    offsets: Sequence[int] | None = None,
    timestamp: int | None = None,
    timestamp_type: int = CREATE_TIME,
    compression_level: int | None = None,
) -> bytes:
    """Encode a v0/v1 message set; with a codec, one compressed wrapper message.

    Offsets default to ``base_offset + i``.  Wrapper inner offsets are written the way each
    format stores them (absolute for v0, relative for v1).  ``timestamp`` is the default (now)
    for v1 records without one; v0 has no timestamps.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy message sets have magic 0 or 1, not {magic}")
    n = len(values)
    if n == 0:
        raise ValueError("a message set needs at least one message")
    codec = compression.codec_id(codec)
    offsets = list(range(base_offset, base_offset + n)) if offsets is None else list(offsets)
    if len(offsets) != n or (keys is not None and len(keys) != n):
        raise ValueError("keys/offsets must have one entry per value")
    keys = [None] * n if keys is None else keys
    if magic == 0:
        stamps = [NO_TIMESTAMP] * n
    else:
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        stamps = (
            [timestamp] * n
            if timestamps is None
            else [timestamp if t is None else t for t in timestamps]
        )
    lat = TIMESTAMP_TYPE_MASK if (magic == 1 and timestamp_type == LOG_APPEND_TIME) else 0
    if not codec:
        return _encode_plain(magic, values, keys, stamps, offsets, lat)
    inner_offsets = offsets if magic == 0 else [o - offsets[0] for o in offsets]
    inner = _encode_plain(magic, values, keys, stamps, inner_offsets, 0)
    compressed = compression.compress(codec, inner, magic, compression_level)
    wrapper_ts = timestamp if lat and timestamp is not None else max(stamps)
    return encode_message(magic, codec | lat, wrapper_ts, None, compressed, offsets[-1])


# ----------------------------------------------------------------------------- decode
def check_crc(buf: bytes, pos: int, size: int, stored: int, offset: int) -> None:
    """Raise CorruptRecordError unless the CRC-32 of magic..end equals ``stored``."""
    end = pos + LOG_OVERHEAD + size
    computed = zlib.crc32(buf[pos + 16 : end] if size < _SMALL else memoryview(buf)[pos + 16 : end])
    if computed != stored:
        raise corrupt(offset, f"CRC-32 mismatch: stored {stored}, computed {computed}")


def _parse_message(buf: bytes, pos: int, size: int, validate_crc: bool) -> Message:
    """Parse the complete message at ``pos`` (``size`` from its size field).

    Returns ``(offset, magic, attributes, timestamp, key, value, crc)``.
    """
    end = pos + LOG_OVERHEAD + size
    magic = buf[pos + 16]
    if magic == 1 and size >= RECORD_OVERHEAD_V1:
        offset, _, crc, _, attrs, timestamp, kl = V1_HEAD.unpack_from(buf, pos)
        kpos = pos + 30
    elif magic == 0 and size >= RECORD_OVERHEAD_V0:
        offset, _, crc, _, attrs, kl = V0_HEAD.unpack_from(buf, pos)
        timestamp = NO_TIMESTAMP
        kpos = pos + 22
    else:
        offset = OFFSET_FIELD.unpack_from(buf, pos)[0]
        why = "too small" if magic in (0, 1) else "has an unknown magic byte"
        raise corrupt(offset, f"message of size {size} with magic {magic} {why}")
    if validate_crc:
        check_crc(buf, pos, size, crc, offset)
    if kl < 0:
        if kl != -1:
            raise corrupt(offset, f"invalid key length {kl}")
        key = None
        vpos = kpos
    else:
        vpos = kpos + kl
        if vpos + 4 > end:
            raise corrupt(offset, f"invalid key length {kl}")
        key = buf[kpos:vpos]
    vl = INT32.unpack_from(buf, vpos)[0]
    vpos += 4
    if vl < 0:
        if vl != -1 or vpos != end:
            raise corrupt(offset, f"invalid value length {vl}")
        value = None
    elif vpos + vl != end:
        raise corrupt(offset, f"invalid value length {vl}")
    else:
        value = buf[vpos:end]
    return offset, magic, attrs, timestamp, key, value, crc


def _inner_rows(data: bytes, wrapper: Message, validate_crc: bool) -> list[Row]:
    """Rows of a decompressed inner message set (complete; no partial tail allowed), with the
    offsets as stored (absolute in v0, relative in v1)."""
    wrapper_offset, wrapper_ts = wrapper[0], wrapper[3]
    lat = wrapper[1] >= 1 and wrapper[2] & TIMESTAMP_TYPE_MASK
    info = LEGACY_INFO[(wrapper[1], wrapper[2] & CODEC_MASK)]
    rows: list[Row] = []
    pos, end = 0, len(data)
    while pos < end:
        if pos + LOG_OVERHEAD + RECORD_OVERHEAD_V0 > end:
            raise corrupt(wrapper_offset, "truncated inner message")
        size = INT32.unpack_from(data, pos + 8)[0]
        if size < RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > end:
            raise corrupt(wrapper_offset, f"invalid inner message size {size}")
        offset, magic, attrs, ts, key, value, _ = _parse_message(data, pos, size, validate_crc)
        if attrs & CODEC_MASK:
            raise corrupt(wrapper_offset, "nested compressed message")
        if lat:
            rows.append((offset, wrapper_ts, LOG_APPEND_TIME, key, value, info))
        elif magic == 0:
            rows.append((offset, NO_TIMESTAMP, NO_TIMESTAMP_TYPE, key, value, info))
        else:
            rows.append((offset, ts, CREATE_TIME, key, value, info))
        pos += LOG_OVERHEAD + size
    if not rows:
        raise corrupt(wrapper_offset, "empty compressed message set")
    return rows


def _wrapper_rows(msg: Message, max_decompressed: int, validate_crc: bool) -> list[Row]:
    """Decompress a wrapper message (as returned by :func:`parse_message`) into its rows,
    with absolute offsets (v1: ``wrapper_offset - last_inner_offset + inner_offset``)."""
    offset, magic, attrs, _, _, value, _ = msg
    if value is None:
        raise corrupt(offset, "compressed message has a null value")
    try:
        data = compression.decompress(attrs & CODEC_MASK, value, magic, max_decompressed)
    except ProtocolDecodeError as exc:
        raise corrupt(offset, f"cannot decompress message set: {exc}") from None
    try:
        rows = _inner_rows(data, msg, validate_crc)
    except CorruptRecordError as exc:
        if exc.offset == offset:
            raise
        raise corrupt(offset, f"bad inner message: {exc.context}") from None
    if magic >= 1:
        shift = offset - rows[-1][0]
        if shift:
            rows = [(row[0] + shift,) + row[1:] for row in rows]
    return rows


def _plain_row(msg: Message) -> Row:
    """The row of an uncompressed message (as returned by :func:`parse_message`)."""
    offset, magic, attrs, ts, key, value, _ = msg
    if magic == 0:
        return offset, NO_TIMESTAMP, NO_TIMESTAMP_TYPE, key, value, LEGACY_INFO[(0, 0)]
    ts_type = LOG_APPEND_TIME if attrs & TIMESTAMP_TYPE_MASK else CREATE_TIME
    return offset, ts, ts_type, key, value, LEGACY_INFO[(1, 0)]


def message_rows(
    buf: bytes,
    pos: int,
    size: int,
    validate_crc: bool = True,
    max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED,
    start_offset: int | None = None,
) -> list[Row]:
    """The records of the complete v0/v1 entry at ``pos`` (a message or a compressed wrapper)
    as rows ``(offset, timestamp, timestamp_type, key, value, info)``, offsets absolute;
    records below ``start_offset`` are left out (a wrapper wholly below it is not even
    decompressed)."""
    msg = _parse_message(buf, pos, size, validate_crc)
    if start_offset is not None and msg[0] < start_offset:
        return []  # a wrapper's offset is its last inner message's
    if not msg[2] & CODEC_MASK:
        return [_plain_row(msg)]
    rows = _wrapper_rows(msg, max_decompressed, validate_crc)
    if start_offset is not None and rows[0][0] < start_offset:
        rows = [row for row in rows if row[0] >= start_offset]
    return rows


def rows_records(rows: list[Row], factory: RecordFactory = make_records) -> Iterable[Any]:
    """Records built by ``factory`` from rows of :func:`message_rows` (no headers in v0/v1)."""
    if not rows:
        return ()
    offsets, stamps, ts_types, keys, values, infos = zip(*rows)
    return factory(offsets, stamps, ts_types, keys, list(values), None, infos)


def read_message(
    buf: bytes,
    pos: int,
    size: int,
    *,
    validate_crc: bool = True,
    max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED,
) -> Batch:
    """Decode the complete v0/v1 entry at ``pos`` (a message or a compressed wrapper)."""
    msg = _parse_message(buf, pos, size, validate_crc)
    magic, attrs, ts = msg[1], msg[2], msg[3]
    codec = attrs & CODEC_MASK
    rows = _wrapper_rows(msg, max_decompressed, validate_crc) if codec else [_plain_row(msg)]
    stamps = [row[1] for row in rows]
    return Batch(
        magic=magic,
        position=pos,
        size=size + LOG_OVERHEAD,
        base_offset=rows[0][0],
        last_offset=rows[-1][0],
        codec=codec,
        timestamp_type=rows[0][2],
        first_timestamp=stamps[0],
        max_timestamp=ts if (codec and magic == 1) else max(stamps),
        record_count=len(rows),
        crc=msg[6],
        records=list(rows_records(rows)),
    )


def parse_message(buf: bytes, pos: int, size: int, validate_crc: bool = True) -> Message:
    """Parse one complete message: ``(offset, magic, attributes, timestamp, key, value, crc)``."""
    return _parse_message(buf, pos, size, validate_crc)


def set_offset(buf: bytearray, pos: int, offset: int) -> None:
    """Rewrite the offset of the entry at ``pos`` in place (not covered by the CRC)."""
    OFFSET_FIELD.pack_into(buf, pos, offset)


def set_log_append_time(buf: bytearray, pos: int, size: int, timestamp: int) -> None:
    """Give a v1 message (or wrapper) the LogAppendTime bit and ``timestamp``; fix its CRC."""
    buf[pos + 17] = (buf[pos + 17] | TIMESTAMP_TYPE_MASK) & 0xFF
    struct.pack_into(">q", buf, pos + 18, timestamp)
    struct.pack_into(">I", buf, pos + 12, zlib.crc32(memoryview(buf)[pos + 16 : pos + 12 + size]))


def messages_info(records: Sequence[Record]) -> tuple[int, int, int]:
    """(first offset, last offset, max timestamp) of decoded legacy records."""
    return records[0].offset, records[-1].offset, max(r.timestamp for r in records)


__all__ = [
    "encode_message",
    "build_message_set",
    "check_crc",
    "parse_message",
    "message_rows",
    "rows_records",
    "read_message",
    "set_offset",
    "set_log_append_time",
    "messages_info",
]
