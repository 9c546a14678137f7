"""Time index of one segment, Kafka's ``.timeindex``: sparse ``(timestamp, relative offset)``.

File format (Kafka's): 12-byte entries, ``timestamp int64`` then ``relative offset int32``
(offset - segment base offset).  An entry ``(t, o)`` says that ``t`` is the largest timestamp
of every record at or below offset ``o``; entries are added beside offset-index entries (every
``index.interval.bytes``) when the segment's largest timestamp has grown, and once more when
the segment is sealed, so timestamps strictly increase and offsets never decrease.  A lookup
for ``target`` takes the last entry stamped below it: no record at or below its offset can be
stamped ``>= target``, so the scan starts after it.  Like the offset index the file holds only
written entries (no preallocated tail to trim).
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import Path

from kclient.broker.log.index import IndexFile
from kclient.broker.log.region import FileHandle, pread_exact

TIME_ENTRY = struct.Struct(">qi")
TIME_ENTRY_SIZE = TIME_ENTRY.size
TIME_INDEX_SUFFIX = ".timeindex"


class TimeIndex(IndexFile):
    """Sparse timestamp -> offset index of one segment, in memory and in ``<base>.timeindex``."""

    def __init__(self, path: Path, base_offset: int) -> None:
        """Open (or create) the file; ``missing`` says it did not exist before."""
        self.path = path
        self.base_offset = base_offset
        self.missing = not path.exists()
        self._timestamps = array("q")  # strictly increasing
        self._offsets = array("i")  # relative, never decreasing
        self._handle = FileHandle(path)
        self._dirty = False

    def __len__(self) -> int:
        return len(self._timestamps)

    def entries(self) -> list[tuple[int, int]]:
        """All ``(timestamp, absolute offset)`` pairs, oldest first."""
        return [(t, self.base_offset + o) for t, o in zip(self._timestamps, self._offsets)]

    def load(self, next_offset: int) -> str | None:
        """Read the file after Kafka's ``sanityCheck``; why it is corrupt, or None.

        Corrupt: a length that is not a multiple of 12, timestamps that do not strictly
        increase, offsets that decrease or fall outside ``[base, next_offset)``.
        """
        fd = self._handle.fd
        length = os.fstat(fd).st_size
        if length % TIME_ENTRY_SIZE:
            return f"{length} bytes, not a multiple of {TIME_ENTRY_SIZE}"
        stamps, offsets = array("q"), array("i")
        last_t, last_o = -1, 0
        for i, (ts, rel) in enumerate(TIME_ENTRY.iter_unpack(pread_exact(fd, length, 0))):
            if ts <= last_t or rel < last_o or self.base_offset + rel >= next_offset:
                return (
                    f"entry {i} at byte {i * TIME_ENTRY_SIZE} (timestamp {ts}, offset "
                    f"{self.base_offset + rel}) out of order or beyond offset "
                    f"{next_offset - 1}"
                )
            stamps.append(ts)
            offsets.append(rel)
            last_t, last_o = ts, rel
        self._timestamps, self._offsets = stamps, offsets
        return None

    def rebuild(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Replace memory and file contents with ``(timestamp, absolute offset)`` pairs."""
        os.ftruncate(self._handle.fd, 0)
        self._timestamps, self._offsets = array("q"), array("i")
        for ts, offset in pairs:
            self.maybe_append(ts, offset)
        self._dirty = True
        self.missing = False

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add an entry if ``timestamp`` is above the last one (Kafka's maybeAppend)."""
        rel = offset - self.base_offset
        if self._timestamps and (timestamp <= self._timestamps[-1] or rel < self._offsets[-1]):
            return
        if timestamp < 0:
            return
        os.pwrite(
            self._handle.fd,
            TIME_ENTRY.pack(timestamp, rel),
            len(self._timestamps) * TIME_ENTRY_SIZE,
        )
        self._offsets.append(rel)
        self._timestamps.append(timestamp)
        self._dirty = True

    def offset_below(self, timestamp: int) -> int:
        """Offset of the last entry stamped below ``timestamp`` (binary search); -1 if none."""
        i = bisect_left(self._timestamps, timestamp)
        return self.base_offset + self._offsets[i - 1] if i else -1

    def last_timestamp(self) -> int:
        """Timestamp of the last entry (-1 when empty): a sealed segment's largest."""
        return self._timestamps[-1] if self._timestamps else -1


__all__ = ["TimeIndex", "TIME_ENTRY", "TIME_ENTRY_SIZE", "TIME_INDEX_SUFFIX"]
