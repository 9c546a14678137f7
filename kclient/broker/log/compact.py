"""Rewrite one log entry keeping only the records compaction retains (Kafka's cleaner filter).

A record is retained when it lies past the offset map (not yet deduplicated), or when it holds
the latest offset of its key and is either a value or a tombstone still inside its delete
horizon; keyless records are dropped.  v2 batches keep baseOffset and lastOffsetDelta (so the
last offset, and any producer sequence, survive) and are re-encoded with their codec and a new
CRC; a batch that keeps a tombstone gets a delete horizon (attribute bit 6, the horizon in
baseTimestamp) on its first cleaning.  v0/v1 compressed wrappers are rebuilt from their
retained inner messages with the same codec.  Control batches (transaction markers) are kept
as they are: this is the seam for transactional compaction.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from itertools import compress
from typing import Any

from crc32c import crc32c

from kclient.protocol import compression
from kclient.protocol.records import RecordsReader, legacy, v2
from kclient.protocol.records.common import (
    BATCH_HEADER_SIZE,
    CODEC_MASK,
    CONTROL_MASK,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    TIMESTAMP_TYPE_MASK,
)

#: v2 attribute bit: baseTimestamp holds the batch's delete horizon (KIP-534).
DELETE_HORIZON_MASK = 0x40
_ATTRS = struct.Struct(">h")


class OffsetMap:
    """Key -> latest offset of the dirty section, bounded like Kafka's dedupe buffer."""

    def __init__(self, slots: int = 1 << 22) -> None:
        """``slots``: how many keys fit (Kafka: dedupe.buffer.size / 24 * 0.9)."""
        self.slots = max(1, slots)
        self.latest_offset = -1
        self._offsets: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    def room_for(self, count: int) -> bool:
        """True if ``count`` more keys surely fit."""
        return len(self._offsets) + count <= self.slots

    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest for ``key``."""
        self._offsets[key] = offset
        self.latest_offset = max(self.latest_offset, offset)

    def update_latest(self, offset: int) -> None:
        """Note that the map covers the log up to ``offset`` (a mapped entry's last offset)."""
        self.latest_offset = max(self.latest_offset, offset)

    def get(self, key: bytes) -> int:
        """Latest offset of ``key`` (-1 when not mapped)."""
        return self._offsets.get(key, -1)


def _rows(
    offsets: Any, stamps: Any, ts_types: Any, keys: Any, values: Any, headers: Any, infos: Any
) -> list[tuple[Any, ...]]:
    """Record factory for the decoders: ``(offset, timestamp, key, value, headers)`` rows."""
    n = len(values)
    keys = [None] * n if keys is None else keys
    headers = [None] * n if headers is None else headers
    return list(zip(offsets, stamps, keys, values, headers))


def entry_keys(data: bytes) -> Iterator[tuple[int, bytes | None]]:
    """``(offset, key)`` of every data record in one complete entry (control batches: none)."""
    size = len(data) - LOG_OVERHEAD
    if data[MAGIC_OFFSET] == 2:
        rows = v2.batch_records(data, 0, size, _rows, validate_crc=False)
        return ((row[0], row[2]) for row in rows)
    rows = legacy.message_rows(data, 0, size, validate_crc=False)
    return ((row[0], row[3]) for row in rows)


class EntryFilter:
    """Decides which records of an entry survive one cleaning round and re-encodes the entry."""

    def __init__(
        self,
        offset_map: OffsetMap,
        now: int,
        delete_retention_ms: int,
        upper_bound: int,
        retain_legacy_deletes: bool = True,
    ) -> None:
        """``upper_bound``: first uncleanable offset (the batch ending there is kept, even
        empty, so the last offset is not lost); ``retain_legacy_deletes``: keep v0/v1
        tombstones (their segment is newer than the legacy delete horizon)."""
        self.map = offset_map
        self.now = now
        self.delete_retention_ms = delete_retention_ms
        self.upper_bound = upper_bound
        self.retain_legacy_deletes = retain_legacy_deletes

    def retain(self, offset: int, key: bytes | None, tombstone: bool, keep_deletes: bool) -> bool:
        """Kafka's shouldRetainRecord."""
        if offset > self.map.latest_offset:
            return True
        if key is None:
            return False
        return offset >= self.map.get(key) and (not tombstone or keep_deletes)

    def filter(self, data: bytes) -> bytes | None:
        """The entry to write for the complete entry ``data`` (itself when all is retained);
        None when nothing of it stays."""
        if data[MAGIC_OFFSET] == 2:
            return self._filter_v2(data)
        return self._filter_legacy(data)

    # ------------------------------------------------------------------ v2
    def _filter_v2(self, data: bytes) -> bytes | None:
        """Filter a record batch; see the module docstring."""
        head = v2.HEADER.unpack_from(data, 0)
        base, attrs, last_delta, base_ts = head[0], head[5], head[6], head[7]
        if attrs & CONTROL_MASK:
            return data
        horizon = base_ts if attrs & DELETE_HORIZON_MASK else None
        keep_deletes = horizon is None or self.now < horizon
        rows = v2.batch_records(data, 0, len(data) - LOG_OVERHEAD, _rows, validate_crc=False)
        keep = [self.retain(r[0], r[2], r[3] is None, keep_deletes) for r in rows]
        kept = list(compress(rows, keep))
        if not kept:  # emptied now or by an earlier round: only the round's end
            if base + last_delta + 1 == self.upper_bound:
                return data if not rows else empty_batch(data)
            return None
        new_horizon = horizon
        if horizon is None and any(r[3] is None for r in kept):
            new_horizon = self.now + self.delete_retention_ms
        if all(keep) and new_horizon == horizon:
            return data
        return rebuild_batch(data, kept, new_horizon)

    # ------------------------------------------------------------------ v0 / v1
    def _filter_legacy(self, data: bytes) -> bytes | None:
        """Filter a message, or the inner messages of a compressed wrapper."""
        size = len(data) - LOG_OVERHEAD
        rows = legacy.message_rows(data, 0, size, validate_crc=False)
        keep_deletes = self.retain_legacy_deletes
        keep = [self.retain(r[0], r[3], r[4] is None, keep_deletes) for r in rows]
        if all(keep):
            return data
        kept = list(compress(rows, keep))
        if not kept:
            return None
        magic, attrs, ts = legacy.parse_message(data, 0, size, validate_crc=False)[1:4]
        return legacy.build_message_set(
            [r[4] for r in kept],
            [r[3] for r in kept],
            [r[1] for r in kept],
            magic=magic,
            codec=attrs & CODEC_MASK,
            offsets=[r[0] for r in kept],
            timestamp=ts if attrs & TIMESTAMP_TYPE_MASK else None,
            timestamp_type=LOG_APPEND_TIME if attrs & TIMESTAMP_TYPE_MASK else 0,
        )


def rebuild_batch(data: bytes, kept: Iterable[tuple[Any, ...]], horizon: int | None) -> bytes:
    """Re-encode batch ``data`` with only the ``kept`` rows: same baseOffset, lastOffsetDelta,
    producer fields, leader epoch and codec; baseTimestamp is the delete horizon when set."""
    (base, _, epoch, _, _, attrs, last_delta, _, max_ts, pid, pepoch, bseq, _) = (
        v2.HEADER.unpack_from(data, 0)
    )
    kept = list(kept)
    stamps = [r[1] for r in kept]
    base_ts = stamps[0] if horizon is None else horizon
    if not attrs & TIMESTAMP_TYPE_MASK:
        max_ts = max(stamps)
    body = v2.encode_records(
        [r[3] for r in kept],
        [r[2] for r in kept],
        [t - base_ts for t in stamps],
        [r[0] - base for r in kept],
        [r[4] for r in kept],
    )
    codec = attrs & CODEC_MASK
    if codec:
        body = compression.compress(codec, body, 2)
    attrs = attrs & ~DELETE_HORIZON_MASK | (DELETE_HORIZON_MASK if horizon is not None else 0)
    return _assemble(
        base, epoch, attrs, last_delta, base_ts, max_ts, pid, pepoch, bseq, len(kept), body
    )


def empty_batch(data: bytes) -> bytes:
    """A batch with no records that keeps ``data``'s offsets, producer fields and timestamps
    (Kafka's empty batch header: no codec, baseTimestamp = maxTimestamp)."""
    (base, _, epoch, _, _, attrs, last_delta, _, max_ts, pid, pepoch, bseq, _) = (
        v2.HEADER.unpack_from(data, 0)
    )
    attrs &= ~(CODEC_MASK | DELETE_HORIZON_MASK)
    return _assemble(base, epoch, attrs, last_delta, max_ts, max_ts, pid, pepoch, bseq, 0, b"")


def _assemble(
    base: int,
    epoch: int,
    attrs: int,
    last_delta: int,
    base_ts: int,
    max_ts: int,
    pid: int,
    pepoch: int,
    bseq: int,
    count: int,
    body: bytes,
) -> bytes:
    """Header plus records section, with the CRC-32C computed."""
    tail = v2.TAIL.pack(attrs, last_delta, base_ts, max_ts, pid, pepoch, bseq, count)
    crc = crc32c(body, crc32c(tail))
    prefix = v2.PREFIX.pack(base, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body), epoch, 2, crc)
    return b"".join((prefix, tail, body))


def keyless_records(records: bytes) -> list[int]:
    """Batch indexes of the records without a key (Kafka counts within each v2 batch and
    across a v0/v1 message set), which a compacted topic refuses."""
    missing, legacy_index = [], 0
    for batch in RecordsReader(records).batches():
        for i, record in enumerate(batch.records):
            index = i if batch.magic == 2 else legacy_index + i
            if record.key is None:
                missing.append(index)
        if batch.magic < 2:
            legacy_index += len(batch.records)
    return missing


def has_delete_horizon(data: bytes) -> bool:
    """True for a v2 batch carrying a delete horizon."""
    return data[MAGIC_OFFSET] == 2 and bool(_ATTRS.unpack_from(data, 21)[0] & DELETE_HORIZON_MASK)


__all__ = [
    "DELETE_HORIZON_MASK",
    "EntryFilter",
    "OffsetMap",
    "empty_batch",
    "entry_keys",
    "has_delete_horizon",
    "keyless_records",
    "rebuild_batch",
]
