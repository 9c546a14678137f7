"""Message format v2: record batches (Kafka 0.11+), decoding and in-place header edits.

Batch header (61 bytes)::

    baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8 (2),
    crc uint32 (CRC-32C of attributes..end), attributes int16, lastOffsetDelta int32,
    baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16,
    baseSequence int32, recordsCount int32

then the records (compressed as one block when the codec bits are set), each::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint, key, valueLength varint, value, headersCount varint,
    [headerKeyLength varint, headerKey utf-8, headerValueLength varint, headerValue]

The decode loop is written for speed: 1- and 2-byte varints are decoded inline through a
table, records are created without calling ``__init__``.  Encoding lives in
:mod:`kclient.protocol.records.v2_build` (re-exported here).
"""
from __future__ import annotations

import struct
from typing import Iterator, List

from crc32c import crc32c

from kclient.protocol import compression
from kclient.protocol.errors import ProtocolDecodeError
from kclient.protocol.records.common import (
    BATCH_HEADER_SIZE, CONTROL_MASK, CREATE_TIME, LOG_APPEND_TIME, LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, V2_CRC_START, Batch, Record, corrupt,
)
from kclient.protocol.records.v2_build import (  # noqa: F401 - re-exported
    PREFIX, TAIL, RecordBatchBuilder, build_batch, encode_headers, encode_records,
)
from kclient.protocol.varint import ZIGZAG_DECODE, decode_varint

HEADER = struct.Struct(">qiibIhiqqqhii")
OFFSET_FIELD = struct.Struct(">q")
EPOCH_FIELD = struct.Struct(">i")
#: Smallest possible encoded record (length, attributes, ts delta, offset delta, key length,
#: value length, header count: one byte each).
MIN_RECORD_SIZE = 7


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
    "HEADER", "PREFIX", "TAIL", "MIN_RECORD_SIZE", "encode_headers", "encode_records",
    "build_batch",
    "RecordBatchBuilder", "iter_records_v2", "decode_records", "stream_records",
    "iter_batch_records", "open_batch", "check_crc", "read_batch", "decode_batch_records",
    "set_base_offset", "set_partition_leader_epoch", "set_log_append_time",
]
