"""Message format v2: record batches (Kafka 0.11+), encode and decode.

Batch header (61 bytes)::

    baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8 (2),
    crc uint32 (CRC-32C of attributes..end), attributes int16, lastOffsetDelta int32,
    baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16,
    baseSequence int32, recordsCount int32

then the records (compressed as one block when the codec bits are set), each::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint, key, valueLength varint, value, headersCount varint,
    [headerKeyLength varint, headerKey utf-8, headerValueLength varint, headerValue]

The encode and decode loops are written for speed: precomputed varint tables, one join of all
parts, no per-record method calls; decoding produces plain :class:`Record` tuples.
"""
from __future__ import annotations

import struct
import time
from itertools import repeat
from typing import Iterator, List, Optional, Sequence

from crc32c import crc32c

from kclient.protocol import compression
from kclient.protocol.errors import ProtocolDecodeError
from kclient.protocol.records.common import (
    BATCH_HEADER_SIZE, CONTROL_MASK, CREATE_TIME, LOG_APPEND_TIME, LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, V2_CRC_START, Batch,
    Record, corrupt,
)
from kclient.protocol.varint import (
    TABLE_SIZE, UVARINT_TABLE, ZIGZAG_DECODE, decode_varint, encode_varint,
)

HEADER = struct.Struct(">qiibIhiqqqhii")
PREFIX = struct.Struct(">qiibI")        # baseOffset .. crc (not covered by the CRC)
TAIL = struct.Struct(">hiqqqhii")       # attributes .. recordsCount (start of the CRC'd part)
OFFSET_FIELD = struct.Struct(">q")
EPOCH_FIELD = struct.Struct(">i")
#: Smallest possible encoded record (length, attributes, ts delta, offset delta, key length,
#: value length, header count: one byte each).
MIN_RECORD_SIZE = 7

_UV = UVARINT_TABLE
_HALF = TABLE_SIZE >> 1


def _varint(n: int) -> bytes:
    """Signed varint from the table when small (the inlined fast path of the loops)."""
    return _UV[n << 1] if 0 <= n < _HALF else encode_varint(n)


def encode_headers(headers: Optional[Sequence]) -> bytes:
    """Encode a record's headers: count, then (utf-8 key, nullable value) pairs."""
    if not headers:
        return b"\x00"
    parts = [_varint(len(headers))]
    for key, value in headers:
        kb = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        parts.append(_varint(len(kb)))
        parts.append(kb)
        if value is None:
            parts.append(b"\x01")
        else:
            parts.append(_varint(len(value)))
            parts.append(value)
    return b"".join(parts)


def _encode_values_only(values: Sequence, head: bytes) -> list:
    """Fast path: null keys, one timestamp, no headers, offset deltas 0..n-1."""
    uv, half = _UV, _HALF
    parts: list = []
    i = 0
    for v in values:
        if v is None:
            vh, vl, v = b"\x01", 0, b""
        else:
            vl = len(v)
            vh = uv[vl << 1] if vl < half else encode_varint(vl)
        od = uv[i << 1] if i < half else encode_varint(i)
        n = 4 + len(od) + len(vh) + vl  # attributes, ts delta 0, key length -1, header count 0
        parts += (uv[n << 1] if n < half else encode_varint(n), head, od, b"\x01", vh, v, b"\x00")
        i += 1
    return parts


def _encode_keyed(values, keys, deltas) -> list:
    """Keys and timestamp deltas, no headers, offset deltas 0..n-1 (the usual producer batch)."""
    uv, half = _UV, _HALF
    parts: list = []
    i = 0
    for v, k, td in zip(values, keys, deltas):
        if v is None:
            vh, vl, v = b"\x01", 0, b""
        else:
            vl = len(v)
            vh = uv[vl << 1] if vl < half else encode_varint(vl)
        if k is None:
            kh, kl, k = b"\x01", 0, b""
        else:
            kl = len(k)
            kh = uv[kl << 1] if kl < half else encode_varint(kl)
        tdb = uv[td << 1] if 0 <= td < half else encode_varint(td)
        odb = uv[i << 1] if i < half else encode_varint(i)
        n = 2 + len(tdb) + len(odb) + len(kh) + kl + len(vh) + vl
        parts += (uv[n << 1] if n < half else encode_varint(n), b"\x00", tdb, odb, kh, k, vh, v,
                  b"\x00")
        i += 1
    return parts


def _encode_general(values, keys, deltas, offsets, headers) -> list:
    """Any mix of keys, timestamp deltas, offset deltas and headers (iterables of equal length)."""
    uv, half = _UV, _HALF
    parts: list = []
    for v, k, td, od, hs in zip(values, keys, deltas, offsets, headers):
        if v is None:
            vh, vl, v = b"\x01", 0, b""
        else:
            vl = len(v)
            vh = uv[vl << 1] if vl < half else encode_varint(vl)
        if k is None:
            kh, kl, k = b"\x01", 0, b""
        else:
            kl = len(k)
            kh = uv[kl << 1] if kl < half else encode_varint(kl)
        tdb = uv[td << 1] if 0 <= td < half else encode_varint(td)
        odb = uv[od << 1] if 0 <= od < half else encode_varint(od)
        hb = encode_headers(hs) if hs else b"\x00"
        n = 1 + len(tdb) + len(odb) + len(kh) + kl + len(vh) + vl + len(hb)
        parts += (uv[n << 1] if n < half else encode_varint(n), b"\x00", tdb, odb, kh, k, vh, v, hb)
    return parts


def encode_records(values: Sequence, keys: Optional[Sequence] = None,
                   timestamp_deltas: Optional[Sequence] = None,
                   offset_deltas: Optional[Sequence] = None,
                   headers: Optional[Sequence] = None) -> bytes:
    """Encode the records section of a batch (uncompressed) from parallel columns."""
    if offset_deltas is None and headers is None:
        if keys is None and timestamp_deltas is None:
            return b"".join(_encode_values_only(values, b"\x00\x00"))
        return b"".join(_encode_keyed(values, repeat(None) if keys is None else keys,
                                      repeat(0) if timestamp_deltas is None else timestamp_deltas))
    parts = _encode_general(
        values,
        repeat(None) if keys is None else keys,
        repeat(0) if timestamp_deltas is None else timestamp_deltas,
        range(len(values)) if offset_deltas is None else offset_deltas,
        repeat(None) if headers is None else headers)
    return b"".join(parts)


def _check_columns(n: int, **columns) -> None:
    for name, col in columns.items():
        if col is not None and len(col) != n:
            raise ValueError(f"{name} has {len(col)} entries for {n} values")


def build_batch(values: Sequence[Optional[bytes]], keys: Optional[Sequence] = None,
                timestamps: Optional[Sequence[int]] = None, headers: Optional[Sequence] = None,
                *, base_offset: int = 0, codec: int = compression.NONE,
                timestamp: Optional[int] = None, offset_deltas: Optional[Sequence[int]] = None,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                is_transactional: bool = False, is_control: bool = False,
                timestamp_type: int = CREATE_TIME,
                partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                compression_level: Optional[int] = None) -> bytes:
    """Encode one v2 record batch from parallel columns (values, keys, timestamps, headers).

    ``timestamps`` defaults to ``timestamp`` (or now, in ms) for every record; ``offset_deltas``
    defaults to ``0..n-1``.  Columns given as ``None`` cost nothing per record.
    """
    n = len(values)
    if n == 0:
        raise ValueError("a record batch needs at least one record")
    codec = compression.codec_id(codec)
    _check_columns(n, keys=keys, timestamps=timestamps, headers=headers,
                   offset_deltas=offset_deltas)
    if timestamp is None:
        timestamp = int(time.time() * 1000)
    deltas = None
    if timestamps is None:
        base_ts = max_ts = timestamp
    else:
        if None in timestamps:
            timestamps = [timestamp if t is None else t for t in timestamps]
        base_ts, max_ts = timestamps[0], max(timestamps)
        if base_ts != max_ts or min(timestamps) != base_ts:
            deltas = [t - base_ts for t in timestamps]
    if keys is not None and not any(k is not None for k in keys):
        keys = None
    if headers is not None and not any(headers):
        headers = None
    body = encode_records(values, keys, deltas, offset_deltas, headers)
    last_delta = n - 1 if offset_deltas is None else offset_deltas[-1]
    attributes = (codec | (TIMESTAMP_TYPE_MASK if timestamp_type == LOG_APPEND_TIME else 0)
                  | (TRANSACTIONAL_MASK if is_transactional else 0)
                  | (CONTROL_MASK if is_control else 0))
    if codec:
        body = compression.compress(codec, body, 2, compression_level)
    tail = TAIL.pack(attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch,
                     base_sequence, n)
    crc = crc32c(body, crc32c(tail))
    prefix = PREFIX.pack(base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body),
                         partition_leader_epoch, 2, crc)
    return b"".join((prefix, tail, body))


class RecordBatchBuilder:
    """Accumulate records with ``append`` and encode them as one v2 batch with ``build``."""

    def __init__(self, codec: int = compression.NONE, **batch_fields) -> None:
        """``batch_fields`` are :func:`build_batch` keywords (producer id, base offset, ...)."""
        self.codec = codec
        self.batch_fields = batch_fields
        self.values: list = []
        self.keys: list = []
        self.timestamps: list = []
        self.headers: list = []

    def append(self, value: Optional[bytes], key: Optional[bytes] = None,
               timestamp: Optional[int] = None, headers: Optional[Sequence] = None) -> int:
        """Add one record; return its offset delta within the batch."""
        self.values.append(value)
        self.keys.append(key)
        self.timestamps.append(timestamp)
        self.headers.append(headers)
        return len(self.values) - 1

    def __len__(self) -> int:
        return len(self.values)

    def build(self) -> bytes:
        """Encode everything appended so far as one batch."""
        ts = self.timestamps if any(t is not None for t in self.timestamps) else None
        return build_batch(self.values, self.keys, ts, self.headers, codec=self.codec,
                           **self.batch_fields)


# ----------------------------------------------------------------------------- decode
def _decode_headers(buf, pos: int, end: int) -> tuple:
    """Decode a header list (count, then key/value pairs) starting at ``pos``."""
    count, pos = decode_varint(buf, pos)
    if count < 0 or count > (end - pos) // 2:
        raise ProtocolDecodeError(f"invalid header count {count}")
    headers = []
    for _ in range(count):
        kl, pos = decode_varint(buf, pos)
        if kl < 0 or pos + kl > end:
            raise ProtocolDecodeError(f"invalid header key length {kl}")
        key = bytes(buf[pos:pos + kl]).decode("utf-8", "replace")
        pos += kl
        vl, pos = decode_varint(buf, pos)
        if vl < -1 or pos + vl > end:
            raise ProtocolDecodeError(f"invalid header value length {vl}")
        if vl < 0:
            value = None
        else:
            value = buf[pos:pos + vl]
            pos += vl
        headers.append((key, value))
    return headers, pos


def iter_records_v2(buf: bytes, pos: int, end: int, count: int, base_offset: int,
                    base_timestamp: int, timestamp_type: int) -> Iterator[Record]:
    """Yield ``count`` records decoded from ``buf[pos:end]`` (the hot loop).

    A generator, so records a consumer drops die at once (no list of a whole batch kept
    alive, hence no garbage-collector pressure).  Raises CorruptRecordError
    (offset = ``base_offset``) on any inconsistency.
    """
    if count < 0 or count > (end - pos) // MIN_RECORD_SIZE:
        raise corrupt(base_offset, f"record count {count} does not fit in {end - pos} bytes")
    zd = ZIGZAG_DECODE
    new = object.__new__
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 128:
                ln = zd[b]
                pos += 1
            else:
                b2 = buf[pos + 1]
                if b2 < 128:
                    ln = zd[b + (b2 << 7) - 128]
                    pos += 2
                else:
                    ln, pos = decode_varint(buf, pos)
            rec_end = pos + ln  # checked once the fields are parsed; overruns fail there
            b = buf[pos + 1]  # skip the record attributes
            if b < 128:
                tsd = zd[b]
                pos += 2
            else:
                tsd, pos = decode_varint(buf, pos + 1)
            b = buf[pos]
            if b < 128:
                od = zd[b]
                pos += 1
            else:
                b2 = buf[pos + 1]
                if b2 < 128:
                    od = zd[b + (b2 << 7) - 128]
                    pos += 2
                else:
                    od, pos = decode_varint(buf, pos)
            b = buf[pos]
            if b < 128:
                kl = zd[b]
                pos += 1
            else:
                kl, pos = decode_varint(buf, pos)
            if kl < 0:
                if kl != -1:
                    raise corrupt(base_offset, f"invalid key length {kl}")
                key = None
            else:
                key = buf[pos:pos + kl]
                pos += kl
            b = buf[pos]
            if b < 128:
                vl = zd[b]
                pos += 1
            else:
                b2 = buf[pos + 1]
                if b2 < 128:
                    vl = zd[b + (b2 << 7) - 128]
                    pos += 2
                else:
                    vl, pos = decode_varint(buf, pos)
            if vl < 0:
                if vl != -1:
                    raise corrupt(base_offset, f"invalid value length {vl}")
                value = None
            else:
                value = buf[pos:pos + vl]
                pos += vl
            if buf[pos] == 0:
                headers = None
                pos += 1
            else:
                headers, pos = _decode_headers(buf, pos, rec_end)
            if pos != rec_end:
                raise corrupt(base_offset, "record length does not match its fields")
            rec = new(Record)
            rec.offset = base_offset + od
            rec.timestamp = base_timestamp + tsd
            rec.timestamp_type = timestamp_type
            rec.key = key
            rec.value = value
            rec._headers = headers
            yield rec
    except (IndexError, ProtocolDecodeError) as exc:
        raise corrupt(base_offset, f"malformed record in batch: {exc}") from None
    if pos != end:
        raise corrupt(base_offset, f"{end - pos} bytes left after the batch's {count} records")


def decode_records(buf: bytes, pos: int, end: int, count: int, base_offset: int,
                   base_timestamp: int, timestamp_type: int) -> List[Record]:
    """List form of :func:`iter_records_v2`."""
    return list(iter_records_v2(buf, pos, end, count, base_offset, base_timestamp,
                                timestamp_type))


def check_crc(buf, pos: int, size: int, stored: int, base_offset: int) -> None:
    """Raise CorruptRecordError unless the CRC-32C of attributes..end equals ``stored``."""
    computed = crc32c(memoryview(buf)[pos + V2_CRC_START:pos + LOG_OVERHEAD + size])
    if computed != stored:
        raise corrupt(base_offset, f"CRC-32C mismatch: stored {stored}, computed {computed}")


def read_batch(buf: bytes, pos: int, size: int, *, validate_crc: bool = True,
               max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED,
               decode: bool = True) -> Batch:
    """Decode the complete v2 batch at ``buf[pos:pos+12+size]`` (header and records)."""
    (base_offset, _, epoch, _, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, bseq,
     count) = HEADER.unpack_from(buf, pos)
    if validate_crc:
        check_crc(buf, pos, size, crc, base_offset)
    codec = attrs & 0x07
    ts_type = LOG_APPEND_TIME if attrs & TIMESTAMP_TYPE_MASK else CREATE_TIME
    batch = Batch(magic=2, position=pos, size=size + LOG_OVERHEAD, base_offset=base_offset,
                  last_offset=base_offset + last_delta, codec=codec, timestamp_type=ts_type,
                  is_transactional=bool(attrs & TRANSACTIONAL_MASK),
                  is_control=bool(attrs & CONTROL_MASK), producer_id=pid,
                  producer_epoch=pepoch, base_sequence=bseq, partition_leader_epoch=epoch,
                  first_timestamp=base_ts, max_timestamp=max_ts, record_count=count, crc=crc)
    if decode:
        batch.records = decode_batch_records(buf, pos, size, batch, max_decompressed)
    return batch


def stream_records(buf: bytes, pos: int, size: int, base_offset: int, attributes: int,
                   base_timestamp: int, max_timestamp: int, count: int,
                   max_decompressed: int) -> Iterator[Record]:
    """Decompress (if needed) and stream the records of the batch at ``pos``, given the header
    fields that matter (the CRC is the caller's business)."""
    start, end = pos + BATCH_HEADER_SIZE, pos + LOG_OVERHEAD + size
    codec = attributes & 0x07
    if codec:
        try:
            data = compression.decompress(codec, memoryview(buf)[start:end], 2, max_decompressed)
        except ProtocolDecodeError as exc:
            raise corrupt(base_offset, f"cannot decompress batch: {exc}") from None
        buf, start, end = data, 0, len(data)
    if attributes & TIMESTAMP_TYPE_MASK:
        return _log_append_time(
            iter_records_v2(buf, start, end, count, base_offset, base_timestamp, LOG_APPEND_TIME),
            max_timestamp)
    return iter_records_v2(buf, start, end, count, base_offset, base_timestamp, CREATE_TIME)


def iter_batch_records(buf: bytes, pos: int, size: int, batch: Batch,
                       max_decompressed: int) -> Iterator[Record]:
    """Stream the records of a batch whose header was parsed into ``batch``."""
    attributes = batch.codec | (TIMESTAMP_TYPE_MASK if batch.timestamp_type else 0)
    return stream_records(buf, pos, size, batch.base_offset, attributes, batch.first_timestamp,
                          batch.max_timestamp, batch.record_count, max_decompressed)


def open_batch(buf: bytes, pos: int, size: int, validate_crc: bool, max_decompressed: int,
               skip_control: bool) -> Iterator[Record]:
    """Records of the batch at ``pos`` straight from its header, without a Batch object
    (the consumer's fast path); a control batch gives nothing when ``skip_control``."""
    (base_offset, _, _, _, crc, attrs, _, base_ts, max_ts, _, _, _,
     count) = HEADER.unpack_from(buf, pos)
    if validate_crc:
        check_crc(buf, pos, size, crc, base_offset)
    if skip_control and attrs & CONTROL_MASK:
        return iter(())
    return stream_records(buf, pos, size, base_offset, attrs, base_ts, max_ts, count,
                          max_decompressed)


def _log_append_time(records: Iterator[Record], timestamp: int) -> Iterator[Record]:
    """LogAppendTime batches: every record carries the batch's maxTimestamp."""
    for rec in records:
        rec.timestamp = timestamp
        rec.timestamp_type = LOG_APPEND_TIME
        yield rec


def decode_batch_records(buf: bytes, pos: int, size: int, batch: Batch,
                         max_decompressed: int) -> List[Record]:
    """List form of :func:`iter_batch_records`."""
    return list(iter_batch_records(buf, pos, size, batch, max_decompressed))


def set_base_offset(buf: bytearray, pos: int, base_offset: int) -> None:
    """Rewrite a batch's baseOffset in place (not covered by the CRC)."""
    OFFSET_FIELD.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray, pos: int, epoch: int) -> None:
    """Rewrite a batch's partitionLeaderEpoch in place (not covered by the CRC)."""
    EPOCH_FIELD.pack_into(buf, pos + LOG_OVERHEAD, epoch)


def set_log_append_time(buf: bytearray, pos: int, size: int, timestamp: int) -> None:
    """Mark a batch LogAppendTime with ``timestamp`` as maxTimestamp and recompute its CRC."""
    attrs = struct.unpack_from(">h", buf, pos + V2_CRC_START)[0]
    struct.pack_into(">h", buf, pos + V2_CRC_START, attrs | TIMESTAMP_TYPE_MASK)
    struct.pack_into(">q", buf, pos + 35, timestamp)  # maxTimestamp
    crc = crc32c(memoryview(buf)[pos + V2_CRC_START:pos + LOG_OVERHEAD + size])
    struct.pack_into(">I", buf, pos + 17, crc)


__all__ = [
    "HEADER", "MIN_RECORD_SIZE", "encode_headers", "encode_records", "build_batch",
    "RecordBatchBuilder", "iter_records_v2", "decode_records", "stream_records",
    "iter_batch_records", "open_batch", "check_crc", "read_batch", "decode_batch_records",
    "set_base_offset", "set_partition_leader_epoch", "set_log_append_time",
]
