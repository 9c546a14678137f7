"""Record-buffer operations a broker needs: entry metadata, CRC validation, offset assignment
without re-encoding, and conversion between message formats.

* :func:`iter_entries` gives ``(position, size, magic, base_offset, last_offset, record_count,
  max_timestamp, ...)`` per entry, reading only v2 batch headers (v0/v1 wrappers are
  decompressed to count their messages);
* :func:`scan_log` is the recovery walk: how many leading bytes are valid entries, and why the
  walk stopped;
* :func:`assign_offsets` gives an incoming buffer its offsets: v2 batches get a new baseOffset,
  v0/v1 plain messages and v1 wrappers a new outer offset (none of these is under a CRC);
  v0 wrappers, whose inner offsets are absolute, are re-encoded;
* :func:`convert_records` re-encodes a buffer into another magic (up-conversion on produce,
  down-conversion for old fetch versions).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple, cast

from kclient.protocol.compression import DEFAULT_MAX_DECOMPRESSED
from kclient.protocol.errors import CorruptRecordError, UnsupportedCodecError
from kclient.protocol.records import legacy, v2
from kclient.protocol.records.common import (
    CREATE_TIME,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    Batch,
    corrupt,
)
from kclient.protocol.records.reader import as_bytes, read_entry, scan_entries
from kclient.protocol.varint import Buffer


class EntryInfo(NamedTuple):
    """Metadata of one log entry, as a broker's log and index need it."""

    position: int
    size: int  # whole entry, log overhead included
    magic: int
    base_offset: int
    last_offset: int
    record_count: int
    max_timestamp: int
    codec: int
    timestamp_type: int


class LogScan(NamedTuple):
    """Result of :func:`scan_log`: valid entries, valid prefix length and the stop reason."""

    entries: list[EntryInfo]
    valid_bytes: int
    incomplete_size: int | None
    error: CorruptRecordError | None


class AssignedRecords(NamedTuple):
    """Result of :func:`assign_offsets`."""

    data: bytes | bytearray
    entries: list[EntryInfo]
    next_offset: int


def _v2_info(buf: bytes, pos: int, size: int, validate_crc: bool) -> EntryInfo:
    """EntryInfo of a v2 batch from its header only (optionally checking its CRC)."""
    batch = v2.read_batch(buf, pos, size - LOG_OVERHEAD, validate_crc=validate_crc, decode=False)
    if batch.record_count < 0:
        raise corrupt(batch.base_offset, f"negative record count {batch.record_count}")
    return EntryInfo(
        pos,
        size,
        2,
        batch.base_offset,
        batch.last_offset,
        batch.record_count,
        batch.max_timestamp,
        batch.codec,
        batch.timestamp_type,
    )


def _legacy_info(
    buf: bytes, pos: int, size: int, validate_crc: bool, max_decompressed: int
) -> EntryInfo:
    """EntryInfo of a v0/v1 entry (wrappers are decompressed to count their messages)."""
    batch = legacy.read_message(
        buf, pos, size - LOG_OVERHEAD, validate_crc=validate_crc, max_decompressed=max_decompressed
    )
    return EntryInfo(
        pos,
        size,
        batch.magic,
        batch.base_offset,
        batch.last_offset,
        batch.record_count,
        batch.max_timestamp,
        batch.codec,
        batch.timestamp_type,
    )


def entry_info(
    buf: bytes,
    pos: int,
    size: int,
    magic: int,
    *,
    validate_crc: bool = True,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> EntryInfo:
    """EntryInfo of the complete entry at ``pos`` (``size`` includes the log overhead)."""
    if magic == 2:
        return _v2_info(buf, pos, size, validate_crc)
    return _legacy_info(buf, pos, size, validate_crc, max_decompressed)


def iter_entries(
    buf: Buffer, *, validate_crc: bool = True, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
) -> Iterator[EntryInfo]:
    """Yield EntryInfo per complete entry; raise CorruptRecordError at the first invalid one."""
    data = as_bytes(buf)
    scan = scan_entries(data)
    for span in scan.entries:
        yield entry_info(
            data,
            span.position,
            span.size,
            span.magic,
            validate_crc=validate_crc,
            max_decompressed=max_decompressed,
        )
    if scan.error is not None:
        raise scan.error


def scan_log(
    buf: Buffer, *, validate_crc: bool = True, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
) -> LogScan:
    """Recovery walk: the valid leading entries, their byte length and the reason it stopped.

    A lost tail shows as ``incomplete_size``/trailing bytes beyond ``valid_bytes``; garbage or
    a bad CRC as ``error``.  Truncate the log to ``valid_bytes`` in both cases.
    """
    data = as_bytes(buf)
    scan = scan_entries(data)
    infos: list[EntryInfo] = []
    for span in scan.entries:
        try:
            infos.append(
                entry_info(
                    data,
                    span.position,
                    span.size,
                    span.magic,
                    validate_crc=validate_crc,
                    max_decompressed=max_decompressed,
                )
            )
        except CorruptRecordError as exc:
            return LogScan(infos, span.position, None, exc)
        except UnsupportedCodecError as exc:
            return LogScan(infos, span.position, None, corrupt(span.offset, str(exc)))
    return LogScan(infos, scan.valid_bytes, scan.incomplete_size, scan.error)


def validate_records(
    buf: Buffer, *, allow_partial: bool = False, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
) -> list[EntryInfo]:
    """Check every entry (sizes, magic, CRCs, wrapper contents); return their EntryInfo.

    A partial trailing entry is an error unless ``allow_partial`` (a produce request must be
    whole; a fetched buffer need not be).  v2 batches are read where they lie (no copy of a
    bytearray or memoryview); v0/v1 entries from one ``bytes`` copy, made only if there are any.
    """
    data = buf if isinstance(buf, bytes) else memoryview(buf).cast("B")
    scan = scan_entries(data)
    legacy_data = None
    infos = []
    for s in scan.entries:
        src = data
        if s.magic != 2 and not isinstance(data, bytes):
            if legacy_data is None:
                legacy_data = as_bytes(data)
            src = legacy_data
        # a v2 entry is read where it lies (header and CRC only), whatever the buffer type
        infos.append(
            entry_info(
                cast(bytes, src), s.position, s.size, s.magic, max_decompressed=max_decompressed
            )
        )
    if scan.error is not None:
        raise scan.error
    if scan.truncated and not allow_partial:
        last = infos[-1].last_offset + 1 if infos else None
        raise corrupt(last, f"partial entry after {scan.valid_bytes} valid bytes")
    return infos


# ----------------------------------------------------------------------------- offsets
def _reencode_legacy(batch: Batch, first_offset: int) -> bytes:
    """Re-encode a v0/v1 entry with offsets ``first_offset..`` (same magic and codec)."""
    recs = batch.records
    lat = batch.magic == 1 and batch.timestamp_type == 1
    return legacy.build_message_set(
        [r.value for r in recs],
        [r.key for r in recs],
        None if batch.magic == 0 else [r.timestamp for r in recs],
        magic=batch.magic,
        codec=batch.codec,
        base_offset=first_offset,
        timestamp=batch.max_timestamp if lat else None,
        timestamp_type=batch.timestamp_type if lat else CREATE_TIME,
    )


def _dense(batch: Batch) -> bool:
    """True if a wrapper's records have consecutive offsets (in-place assignment is exact)."""
    return batch.last_offset - batch.base_offset == batch.record_count - 1


def _assign_one(
    out: bytearray,
    pos: int,
    size: int,
    magic: int,
    next_offset: int,
    log_append_time: int | None,
    leader_epoch: int | None,
    max_decompressed: int,
) -> bytes | None:
    """Assign offsets to the entry at ``pos`` of ``out`` in place; return new bytes to use
    instead when the entry has to be re-encoded."""
    if magic == 2:
        v2.set_base_offset(out, pos, next_offset)
        if leader_epoch is not None:
            v2.set_partition_leader_epoch(out, pos, leader_epoch)
        if log_append_time is not None:
            v2.set_log_append_time(out, pos, size - LOG_OVERHEAD, log_append_time)
        return None
    batch = legacy.read_message(
        bytes(out[pos : pos + size]), 0, size - LOG_OVERHEAD, max_decompressed=max_decompressed
    )
    if batch.codec and (magic == 0 or not _dense(batch)):
        try:
            data = bytearray(_reencode_legacy(batch, next_offset))
        except (struct.error, OverflowError, ValueError) as exc:
            raise corrupt(batch.base_offset, f"cannot re-encode entry: {exc}") from None
        if log_append_time is not None and magic == 1:
            legacy.set_log_append_time(data, 0, len(data) - LOG_OVERHEAD, log_append_time)
        return bytes(data)
    legacy.set_offset(out, pos, next_offset + batch.record_count - 1)
    if log_append_time is not None and magic == 1:
        legacy.set_log_append_time(out, pos, size - LOG_OVERHEAD, log_append_time)
    return None


def assign_offsets(
    buf: Buffer,
    first_offset: int,
    *,
    log_append_time: int | None = None,
    partition_leader_epoch: int | None = None,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    entries: list[EntryInfo] | None = None,
) -> AssignedRecords:
    """Give the entries of an incoming (validated) buffer consecutive offsets from ``first_offset``.

    v2 batches: baseOffset (and optionally partitionLeaderEpoch) is rewritten, nothing else;
    v0/v1 messages and v1 wrappers: the outer offset is rewritten; v0 wrappers (absolute inner
    offsets) are re-encoded.  ``log_append_time`` stamps v1/v2 entries as LogAppendTime (their
    CRC is recomputed).  The buffer must hold only complete, valid entries: ``entries`` is what
    ``validate_records(buf)`` returned if the caller already ran it (then it is not run again);
    None validates here.  ``buf`` is copied once, into the bytearray that gets the offsets and
    is returned as ``data`` (``bytes`` when an entry had to be re-encoded).
    """
    infos = validate_records(buf, max_decompressed=max_decompressed) if entries is None else entries
    out = bytearray(buf)
    pieces: list[Buffer] = []
    assigned: list[EntryInfo] = []
    next_offset, start, shift = first_offset, 0, 0
    for info in infos:
        pos = info.position
        count = info.last_offset - info.base_offset + 1 if info.magic == 2 else info.record_count
        replacement = _assign_one(
            out,
            pos,
            info.size,
            info.magic,
            next_offset,
            log_append_time,
            partition_leader_epoch,
            max_decompressed,
        )
        size = info.size
        if replacement is not None:
            pieces.append(memoryview(out)[start:pos])  # final: later patches lie beyond
            pieces.append(replacement)
            start = pos + info.size
            size = len(replacement)
        max_ts = info.max_timestamp
        if log_append_time is not None and info.magic > 0:
            max_ts = log_append_time
        assigned.append(
            info._replace(
                position=pos + shift,
                size=size,
                base_offset=next_offset,
                last_offset=next_offset + count - 1,
                max_timestamp=max_ts,
            )
        )
        shift += size - info.size
        next_offset += count
    if not pieces:
        return AssignedRecords(out, assigned, next_offset)
    pieces.append(memoryview(out)[start:])
    return AssignedRecords(b"".join(pieces), assigned, next_offset)


# ----------------------------------------------------------------------------- conversion
def _to_v2(batch: Batch, codec: int) -> bytes:
    """Re-encode one decoded entry as a v2 batch, keeping offsets and producer fields."""
    recs = batch.records
    base = recs[0].offset
    stamps = [r.timestamp for r in recs]
    return v2.build_batch(
        [r.value for r in recs],
        [r.key for r in recs],
        stamps,
        [r.headers for r in recs],
        base_offset=base,
        codec=codec,
        offset_deltas=[r.offset - base for r in recs],
        timestamp=stamps[0],
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        timestamp_type=batch.timestamp_type if batch.timestamp_type >= 0 else CREATE_TIME,
        partition_leader_epoch=batch.partition_leader_epoch,
    )


def _to_legacy(batch: Batch, magic: int, codec: int) -> bytes:
    """Re-encode one decoded entry as v0/v1 messages (headers are dropped, as Kafka does)."""
    recs = batch.records
    lat = magic == 1 and batch.timestamp_type == 1
    stamps = None if magic == 0 else [max(r.timestamp, NO_TIMESTAMP) for r in recs]
    return legacy.build_message_set(
        [r.value for r in recs],
        [r.key for r in recs],
        stamps,
        magic=magic,
        codec=codec,
        offsets=[r.offset for r in recs],
        timestamp=batch.max_timestamp if lat else NO_TIMESTAMP,
        timestamp_type=1 if lat else CREATE_TIME,
    )


def _fits_run(run: Batch, batch: Batch) -> bool:
    """Can a plain v0/v1 message join the v2 batch being gathered (same timestamp type,
    increasing offsets, offset delta within int32)?"""
    first, last = run.records[0].offset, run.records[-1].offset
    offset = batch.base_offset
    return (
        run.timestamp_type == batch.timestamp_type
        and last < offset
        and offset - first <= 0x7FFFFFFF
    )


def _encode_as(batch: Batch, magic: int, codec: int | None) -> bytes:
    """Encode a decoded entry in ``magic`` with ``codec`` (None: the entry's own codec)."""
    target = batch.codec if codec is None else codec
    try:
        return _to_v2(batch, target) if magic == 2 else _to_legacy(batch, magic, target)
    except (struct.error, OverflowError, ValueError) as exc:  # fields out of the format's range
        raise corrupt(batch.base_offset, f"cannot re-encode entry: {exc}") from None


def convert_records(
    buf: Buffer,
    magic: int,
    *,
    codec: int | None = None,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> bytes:
    """Re-encode every complete entry of ``buf`` in message format ``magic``.

    Offsets are kept.  ``codec`` None keeps each entry's codec.  Down-conversion drops headers
    and control batches (old clients cannot read them) and refuses zstd for magic < 2
    (UnsupportedCodecError), as Kafka does; entries already in ``magic`` are copied unchanged.
    Up-conversion puts runs of uncompressed v0/v1 messages into one v2 batch.
    """
    if magic not in (0, 1, 2):
        raise ValueError(f"unknown magic {magic}")
    data = as_bytes(buf)
    scan = scan_entries(data)
    if scan.error is not None:
        raise scan.error
    parts: list[bytes] = []
    run: Batch | None = None  # consecutive plain v0/v1 messages bound for one v2 batch
    for span in scan.entries:
        if span.magic == magic and codec is None:
            batch = None
        else:
            batch = read_entry(data, span, max_decompressed=max_decompressed)
            if magic < 2 and batch.is_control:
                continue
            if magic == 2 and batch.magic < 2 and not batch.codec:
                if run is not None and _fits_run(run, batch):
                    run.records.extend(batch.records)
                    continue
                if run is not None:
                    parts.append(_encode_as(run, 2, codec))
                run = Batch(
                    magic=batch.magic,
                    timestamp_type=batch.timestamp_type,
                    records=list(batch.records),
                )
                continue
        if run is not None:
            parts.append(_encode_as(run, 2, codec))
            run = None
        if batch is None:
            parts.append(data[span.position : span.position + span.size])
        elif batch.records:
            parts.append(_encode_as(batch, magic, codec))
    if run is not None:
        parts.append(_encode_as(run, 2, codec))
    return b"".join(parts)


__all__ = [
    "EntryInfo",
    "LogScan",
    "AssignedRecords",
    "entry_info",
    "iter_entries",
    "scan_log",
    "validate_records",
    "assign_offsets",
    "convert_records",
]
