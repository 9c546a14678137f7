"""Message format v2: record batches (Kafka 0.11+), decoding and in-place header edits.

Batch header (61 bytes)::

    baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8 (2),
    crc uint32 (CRC-32C of attributes..end), attributes int16, lastOffsetDelta int32,
    baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16,
    baseSequence int32, recordsCount int32

then the records (compressed as one block when the codec bits are set).  The records are
decoded column-wise by :mod:`kclient.protocol.records.v2_walk`, and :func:`batch_records` hands
the columns to a record factory (:class:`Record` objects by default); encoding lives in
:mod:`kclient.protocol.records.v2_build` (re-exported here).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from itertools import compress, repeat
from operator import add
from typing import Any

from crc32c import crc32c

from kclient.protocol import compression
from kclient.protocol.errors import CorruptRecordError, ProtocolDecodeError
from kclient.protocol.records.common import (
    BATCH_HEADER_SIZE,
    CODEC_MASK,
    CONTROL_MASK,
    CREATE_TIME,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    V2_CRC_START,
    Batch,
    BatchInfo,
    RecordFactory,
    corrupt,
    make_records,
)
from kclient.protocol.records.v2_build import (  # noqa: F401 - re-exported
    PREFIX,
    TAIL,
    RecordBatchBuilder,
    build_batch,
    encode_headers,
    encode_records,
)
from kclient.protocol.records.v2_walk import MIN_RECORD_SIZE, decode_columns  # noqa: F401
from kclient.protocol.varint import Buffer

HEADER = struct.Struct(">qiibIhiqqqhii")
OFFSET_FIELD = struct.Struct(">q")
EPOCH_FIELD = struct.Struct(">i")
STORED_CRC = struct.Struct(">I")
#: Where the stored CRC sits in a batch.
CRC_OFFSET = 17


# ----------------------------------------------------------------------------- decode
def check_crc(buf: Buffer, pos: int, size: int, stored: int, base_offset: int) -> None:
    """Raise CorruptRecordError unless the CRC-32C of attributes..end equals ``stored``."""
    computed = crc32c(memoryview(buf)[pos + V2_CRC_START : pos + LOG_OVERHEAD + size])
    if computed != stored:
        raise corrupt(base_offset, f"CRC-32C mismatch: stored {stored}, computed {computed}")


def records_section(
    buf: Buffer, pos: int, size: int, base_offset: int, codec: int, max_decompressed: int
) -> tuple[Buffer, int, int]:
    """``(buffer, start, end)`` of the batch's records, decompressed if need be."""
    start, end = pos + BATCH_HEADER_SIZE, pos + LOG_OVERHEAD + size
    if not codec:
        return buf, start, end
    try:
        data = compression.decompress(codec, memoryview(buf)[start:end], 2, max_decompressed)
    except ProtocolDecodeError as exc:
        raise corrupt(base_offset, f"cannot decompress batch: {exc}") from None
    return data, 0, len(data)


def batch_records(
    buf: Buffer,
    pos: int,
    size: int,
    factory: RecordFactory = make_records,
    start_offset: int | None = None,
    skip_control: bool = True,
    validate_crc: bool = True,
    max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED,
) -> Iterable[Any]:
    """The records of the complete batch at ``buf[pos:pos+12+size]``, as ``factory`` builds
    them from the decoded columns (see :func:`~kclient.protocol.records.common.make_records`).

    A control batch gives nothing when ``skip_control``; records below ``start_offset`` are
    dropped (a batch wholly below it is not even decompressed).  LogAppendTime batches give
    every record the batch's maxTimestamp.  Raises CorruptRecordError naming the batch's
    baseOffset.
    """
    (base, _, epoch, _, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, bseq, count) = (
        HEADER.unpack_from(buf, pos)
    )
    if validate_crc:
        check_crc(buf, pos, size, crc, base)
    if (skip_control and attrs & CONTROL_MASK) or (
        start_offset is not None and base + last_delta < start_offset
    ):
        return ()
    codec = attrs & CODEC_MASK
    data, start, end = records_section(buf, pos, size, base, codec, max_decompressed)
    ods, tss, keys, vals, hdrs = decode_columns(
        data, start, end, count, base, count == last_delta + 1
    )
    first = base
    if start_offset is not None and base < start_offset:
        if ods is None:
            first = min(start_offset, base + len(vals))
            k = first - base
            del vals[:k], tss[:k]
            if keys is not None:
                del keys[:k]
        else:  # any offset deltas: keep those at or above the start
            keep = [od >= start_offset - base for od in ods]
            ods, tss, vals = (list(compress(c, keep)) for c in (ods, tss, vals))
            keys = None if keys is None else list(compress(keys, keep))
            if hdrs is not None:
                hdrs = list(compress(hdrs, keep))
    offsets = range(first, first + len(vals)) if ods is None else map(add, repeat(base), ods)
    stamps: Iterable[int]
    if attrs & TIMESTAMP_TYPE_MASK:
        stamps, ts_type = repeat(max_ts), LOG_APPEND_TIME
    else:
        stamps, ts_type = map(add, repeat(base_ts), tss), CREATE_TIME
    info = BatchInfo(2, codec, bool(attrs & TRANSACTIONAL_MASK), pid, pepoch, bseq, epoch)
    return factory(offsets, stamps, repeat(ts_type), keys, vals, hdrs, repeat(info))


def plain_columns(
    buf: Buffer, spans: Iterable[tuple[int, int, int, int]], start_offset: int
) -> tuple[list[int], list[int], list[int], list[Any] | None, list[Any], list[Any] | None] | None:
    """The common fetch answer's columns in one pass: ``(offsets, timestamps, timestamp types,
    keys, values, headers)`` (keys / headers None when no record has one) of ``spans`` when
    each is a v2 batch, uncompressed, not a control batch, at or above ``start_offset``, with
    as many records as offsets; None for anything else (or damage): :func:`batch_records`
    then decodes it and names what is wrong.  CRCs are not checked here (the caller did)."""
    offsets: list[int] = []
    stamps: list[int] = []
    types: list[int] = []
    values: list[Any] = []
    keys: list[Any] | None = None
    headers: list[Any] | None = None
    for pos, total, magic, _ in spans:
        if magic != 2:
            return None
        base, _, _, _, _, attrs, last, base_ts, max_ts, _, _, _, count = HEADER.unpack_from(
            buf, pos
        )
        if attrs & (CODEC_MASK | CONTROL_MASK) or base < start_offset or count != last + 1:
            return None
        try:
            ods, tss, ks, vals, hdrs = decode_columns(
                buf, pos + BATCH_HEADER_SIZE, pos + total, count, base, True
            )
        except (CorruptRecordError, ValueError, IndexError):
            return None
        n, before = len(vals), len(values)
        offsets += range(base, base + n) if ods is None else map(add, repeat(base), ods)
        if attrs & TIMESTAMP_TYPE_MASK:
            stamps += repeat(max_ts, n)
            types += repeat(LOG_APPEND_TIME, n)
        else:
            stamps += map(add, repeat(base_ts), tss)
            types += repeat(CREATE_TIME, n)
        values += vals
        keys = _extend_sparse(keys, ks, before, n)
        headers = _extend_sparse(headers, hdrs, before, n)
    return offsets, stamps, types, keys, values, headers


def _extend_sparse(column: list[Any] | None, got: Any, before: int, n: int) -> list[Any] | None:
    """A column kept as None while no record has the field: ``got`` (a batch's ``n`` values,
    or None) appended, the ``before`` earlier records' Nones written out when it first has one."""
    if got is not None:
        if column is None:
            column = [None] * before
        column += got
    elif column is not None:
        column += repeat(None, n)
    return column


def read_batch(
    buf: bytes,
    pos: int,
    size: int,
    *,
    validate_crc: bool = True,
    max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED,
    decode: bool = True,
) -> Batch:
    """Decode the complete v2 batch at ``buf[pos:pos+12+size]`` (header and records)."""
    (
        base_offset,
        _,
        epoch,
        _,
        crc,
        attrs,
        last_delta,
        base_ts,
        max_ts,
        pid,
        pepoch,
        bseq,
        count,
    ) = HEADER.unpack_from(buf, pos)
    if validate_crc:
        check_crc(buf, pos, size, crc, base_offset)
    ts_type = LOG_APPEND_TIME if attrs & TIMESTAMP_TYPE_MASK else CREATE_TIME
    batch = Batch(
        magic=2,
        position=pos,
        size=size + LOG_OVERHEAD,
        base_offset=base_offset,
        last_offset=base_offset + last_delta,
        codec=attrs & CODEC_MASK,
        timestamp_type=ts_type,
        is_transactional=bool(attrs & TRANSACTIONAL_MASK),
        is_control=bool(attrs & CONTROL_MASK),
        producer_id=pid,
        producer_epoch=pepoch,
        base_sequence=bseq,
        partition_leader_epoch=epoch,
        first_timestamp=base_ts,
        max_timestamp=max_ts,
        record_count=count,
        crc=crc,
    )
    if decode:
        batch.records = list(
            batch_records(buf, pos, size, make_records, None, False, False, max_decompressed)
        )
    return batch


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
    crc = crc32c(memoryview(buf)[pos + V2_CRC_START : pos + LOG_OVERHEAD + size])
    struct.pack_into(">I", buf, pos + 17, crc)


_PRODUCER_FIELDS = struct.Struct(">qhi")
#: Where producerId, producerEpoch and baseSequence sit in a batch.
PRODUCER_OFFSET = 43


def set_producer_state(
    data: bytes | bytearray,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool = False,
) -> bytearray:
    """A copy of the single batch ``data`` stamped with an idempotent (or transactional)
    producer's id, epoch and base sequence, its CRC recomputed (these fields are under it)."""
    buf = bytearray(data)
    _PRODUCER_FIELDS.pack_into(buf, PRODUCER_OFFSET, producer_id, producer_epoch, base_sequence)
    attrs = struct.unpack_from(">h", buf, V2_CRC_START)[0]
    attrs = attrs | TRANSACTIONAL_MASK if transactional else attrs & ~TRANSACTIONAL_MASK
    struct.pack_into(">h", buf, V2_CRC_START, attrs)
    STORED_CRC.pack_into(buf, CRC_OFFSET, crc32c(memoryview(buf)[V2_CRC_START:]))
    return buf


__all__ = [
    "set_producer_state",
    "PRODUCER_OFFSET",
    "HEADER",
    "PREFIX",
    "TAIL",
    "MIN_RECORD_SIZE",
    "CRC_OFFSET",
    "STORED_CRC",
    "encode_headers",
    "encode_records",
    "build_batch",
    "RecordBatchBuilder",
    "check_crc",
    "records_section",
    "batch_records",
    "read_batch",
    "set_base_offset",
    "set_partition_leader_epoch",
    "set_log_append_time",
]
