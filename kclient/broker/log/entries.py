"""Walk the entries of a segment file: header-only (lookups) or fully validated (recovery).

Every entry, whatever its format, starts with ``offset int64, size int32`` and has its magic byte
at position 16.  The walk reads the file in chunks with ``pread`` (no locks, no shared file
position) and stops at the first entry that is partial, has an impossible size or magic, fails
its CRC (v0/v1: CRC-32 of magic..end; v2: CRC-32C of attributes..end, when validating) or does
not continue the offset sequence; ``valid_end`` then says where the valid prefix ends and
``error`` why the walk stopped.  The offset reported for an entry is its *largest* offset: the
offset field of a v0/v1 message or compressed wrapper, ``baseOffset + lastOffsetDelta`` for v2.

Offset checks (Kafka's recovery checks CRCs and ``ensureOffsetInRange``; the baseOffset of a v2
batch lies outside its CRC, so the sequence is what catches a damaged one): every entry's largest
offset lies in ``[min_offset, max_offset]`` and above the previous entry's; a header that tells
its first offset must start above the previous entry and end at or after it; in a ``dense`` walk
(a segment never compacted: the active one) it must start exactly one past the previous entry.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from crc32c import crc32c

from kclient.broker.log.region import pread_exact
from kclient.protocol.records.common import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MIN_ENTRY_SIZE,
    NO_TIMESTAMP,
    RECORD_OVERHEAD_V0,
    V2_CRC_START,
)

#: Bytes of an entry needed to know its offsets and max timestamp (v2 header up to maxTimestamp).
HEAD_SIZE = 43
_OFFSET_SIZE = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
INT64_MAX = (1 << 63) - 1


class EntryInfo(NamedTuple):
    """Where one entry sits in a segment file and what it holds."""

    position: int
    size: int  # whole entry, log overhead included
    magic: int
    last_offset: int
    max_timestamp: int  # -1 for v0


def head_info(buf: Any, rel: int, position: int, size: int) -> EntryInfo:
    """Parse offsets and max timestamp from the header of the entry at ``buf[rel:]``."""
    magic = buf[rel + MAGIC_OFFSET]
    offset = _INT64.unpack_from(buf, rel)[0]
    if magic == 2:
        last = offset + _INT32.unpack_from(buf, rel + 23)[0]
        max_ts = _INT64.unpack_from(buf, rel + 35)[0]
    elif magic == 1:
        last, max_ts = offset, _INT64.unpack_from(buf, rel + 18)[0]
    else:
        last, max_ts = offset, NO_TIMESTAMP
    return EntryInfo(position, size, magic, last, max_ts)


def crc_ok(buf: Any, rel: int, total: int, magic: int) -> bool:
    """True if the stored CRC of the complete entry at ``buf[rel:rel+total]`` matches."""
    view = memoryview(buf)
    if magic == 2:
        stored: int = _UINT32.unpack_from(buf, rel + 17)[0]
        return crc32c(view[rel + V2_CRC_START : rel + total]) == stored
    stored = _UINT32.unpack_from(buf, rel + 12)[0]
    return zlib.crc32(view[rel + MAGIC_OFFSET : rel + total]) == stored


def first_offset_of(buf: Any, rel: int) -> int | None:
    """The entry's first offset when its header tells it (v2, uncompressed v0/v1), else None."""
    magic = buf[rel + MAGIC_OFFSET]
    if magic == 2 or not buf[rel + MAGIC_OFFSET + 1] & 0x07:
        first: int = _INT64.unpack_from(buf, rel)[0]
        return first
    return None


class EntryWalk:
    """Iterate the entries of ``fd`` between ``start`` and ``end``; see the module docstring."""

    def __init__(
        self,
        fd: int,
        start: int,
        end: int,
        *,
        validate: bool = False,
        min_offset: int = -1,
        max_offset: int = INT64_MAX,
        dense: bool = False,
        chunk: int = 1 << 20,
    ) -> None:
        """``min_offset``: the first entry's first offset (``dense``) or lowest possible one;
        ``max_offset``: no entry may hold an offset above it."""
        self.fd, self.start, self.end = fd, start, end
        self.validate, self.min_offset, self.chunk = validate, min_offset, chunk
        self.max_offset, self.dense = max_offset, dense
        self.valid_end = start
        self.error: str | None = None
        self.reason: str | None = None
        self._buf, self._base = b"", start

    def _stop(self, reason: str) -> None:
        """Record why the walk ended early (returns None for the callers' convenience)."""
        self.reason = reason
        self.error = f"{reason} at position {self.valid_end}"
        return None

    def _check(self, buf: Any, rel: int, size: int) -> str | None:
        """Why the complete-enough entry at ``buf[rel:]`` is invalid, or None."""
        magic = buf[rel + MAGIC_OFFSET]
        if magic not in MIN_ENTRY_SIZE:
            return f"unknown magic byte {magic}"
        if size < MIN_ENTRY_SIZE[magic]:
            return f"entry size {size} too small for magic {magic}"
        if self.validate and not crc_ok(buf, rel, LOG_OVERHEAD + size, magic):
            return "CRC mismatch"
        return None

    def _window(self, pos: int, need: int) -> int | None:
        """Make ``need`` bytes at ``pos`` available in ``self._buf``; their index, or None."""
        rel = pos - self._base
        if rel + need <= len(self._buf):
            return rel
        want = min(max(self.chunk, need), self.end - pos)
        self._buf, self._base = pread_exact(self.fd, want, pos), pos
        return 0 if len(self._buf) >= need else None

    def _entry_at(self, pos: int) -> tuple[int, int] | None:
        """(index in buffer, total size) of a plausible entry at ``pos``; None after _stop."""
        rel = self._window(pos, LOG_OVERHEAD)
        if rel is None:
            self._stop("partial entry header")
            return None
        size = _INT32.unpack_from(self._buf, rel + 8)[0]
        total = LOG_OVERHEAD + size
        if size < RECORD_OVERHEAD_V0:
            self._stop(f"invalid entry size {size}")
            return None
        if pos + total > self.end:
            self._stop(f"partial entry of {total} bytes")
            return None
        rel = self._window(pos, total if self.validate else min(total, HEAD_SIZE))
        if rel is None:
            self._stop("file shorter than expected")
            return None
        reason = self._check(self._buf, rel, size)
        if reason:
            self._stop(reason)
            return None
        return rel, total

    def __iter__(self) -> Iterator[EntryInfo]:
        """Yield each valid entry in file order."""
        pos, expected = self.start, self.min_offset
        self._buf, self._base = b"", pos
        while pos < self.end:
            found = self._entry_at(pos)
            if found is None:
                return
            rel, total = found
            info = head_info(self._buf, rel, pos, total)
            reason = self._out_of_order(info, first_offset_of(self._buf, rel), expected)
            if reason is not None:
                self._stop(reason)
                return
            expected = info.last_offset + 1
            pos += total
            self.valid_end = pos
            yield info

    def _out_of_order(self, info: EntryInfo, first: int | None, expected: int) -> str | None:
        """Why the entry's offsets do not continue the sequence at ``expected``, or None."""
        last = info.last_offset
        if first is not None and first > last:
            return f"first offset {first} above last offset {last}"
        if last > self.max_offset:
            return f"offset {last} beyond {self.max_offset}, the segment's last possible offset"
        if last < expected or (first is not None and first < expected):
            low = last if first is None else first
            return f"offset {low} out of sequence (expected at least {expected})"
        if self.dense and first is not None and expected >= 0 and first != expected:
            return f"offset {first} out of sequence (expected {expected})"
        return None


__all__ = ["EntryInfo", "EntryWalk", "HEAD_SIZE", "head_info", "crc_ok", "first_offset_of"]
