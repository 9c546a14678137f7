"""Offset index of one segment: sparse ``(relative offset, file position)`` pairs.

File format: 8-byte entries, ``relative offset int32`` (offset - segment base offset) then
``position int32``, one every ``index.interval.bytes`` of log data.  An entry ``(o, p)`` says that
the log entry at ``p`` holds offset ``o`` as its largest offset, so every entry before ``p`` ends
below ``o``: a lookup takes the last pair with ``o <= target`` and scans forward from ``p``.  The
pairs live in two in-memory arrays searched with :mod:`bisect`; readers search them without a
lock (positions are appended before offsets, so any offset a reader finds has its position).
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from pathlib import Path

from kclient.broker.log.region import FileHandle, pread_exact

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size


class IndexFile:
    """File handling shared by the offset and time indexes: fsync, close, delete."""

    path: Path
    _handle: FileHandle
    _dirty: bool

    def flush(self) -> None:
        """fsync the file if entries were added since the last flush."""
        if self._dirty and not self._handle.closed:
            os.fsync(self._handle.fd)
            self._dirty = False

    def close(self) -> None:
        """Close the file (the in-memory arrays stay usable)."""
        self._handle.close()

    def delete(self) -> None:
        """Remove the file from the directory."""
        self._handle.close()
        self.path.unlink(missing_ok=True)


class OffsetIndex(IndexFile):
    """Sparse offset -> position index of one segment, kept in memory and in ``<base>.index``."""

    def __init__(self, path: Path, base_offset: int) -> None:
        """Open (or create) the index file; call :meth:`load` or :meth:`rebuild` to fill it."""
        self.path = path
        self.base_offset = base_offset
        self._offsets = array("i")  # relative offsets, strictly increasing
        self._positions = array("i")  # file positions, strictly increasing
        self._handle = FileHandle(path)
        self._dirty = False

    def __len__(self) -> int:
        return len(self._offsets)

    def entries(self) -> list[tuple[int, int]]:
        """All ``(absolute offset, position)`` pairs, oldest first."""
        base = self.base_offset
        return [(base + o, p) for o, p in zip(self._offsets, self._positions)]

    def load(self, segment_size: int) -> str | None:
        """Read the file into memory after Kafka's ``sanityCheck``; why it is corrupt, or None.

        Corrupt: a length that is not a multiple of the entry size, offsets or positions that
        do not strictly increase, a negative offset or a position outside the segment file.
        Nothing is loaded from a corrupt file (the caller rebuilds it from the segment).
        """
        fd = self._handle.fd
        length = os.fstat(fd).st_size
        if length % ENTRY_SIZE:
            return f"{length} bytes, not a multiple of {ENTRY_SIZE}"
        data = pread_exact(fd, length, 0)
        offsets, positions = array("i"), array("i")
        last_o = last_p = -1
        for i, (rel, pos) in enumerate(ENTRY.iter_unpack(data)):
            if rel <= last_o or rel < 0:
                return (
                    f"entry {i} at byte {i * ENTRY_SIZE}: relative offset {rel} "
                    f"not above {max(last_o, -1)}"
                )
            if pos <= last_p or pos >= segment_size:
                return (
                    f"entry {i} at byte {i * ENTRY_SIZE}: position {pos} not in "
                    f"({last_p}, {segment_size})"
                )
            offsets.append(rel)
            positions.append(pos)
            last_o, last_p = rel, pos
        self._offsets, self._positions = offsets, positions
        return None

    def rebuild(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Replace memory and file contents with ``(absolute offset, position)`` pairs."""
        offsets, positions = array("i"), array("i")
        for offset, position in pairs:
            offsets.append(offset - self.base_offset)
            positions.append(position)
        data = b"".join(ENTRY.pack(o, p) for o, p in zip(offsets, positions))
        fd = self._handle.fd
        os.ftruncate(fd, 0)
        if data:
            os.pwrite(fd, data, 0)
        self._positions, self._offsets = positions, offsets
        self._dirty = True

    def append(self, offset: int, position: int) -> None:
        """Add a pair (caller holds the log's append lock); write it to the file at once."""
        rel = offset - self.base_offset
        if self._offsets and (rel <= self._offsets[-1] or position <= self._positions[-1]):
            return
        os.pwrite(self._handle.fd, ENTRY.pack(rel, position), len(self._offsets) * ENTRY_SIZE)
        self._positions.append(position)
        self._offsets.append(rel)
        self._dirty = True

    def lookup(self, offset: int) -> int:
        """File position to scan from for ``offset`` (0 when no pair is at or below it)."""
        return self.lookup_entry(offset)[1]

    def lookup_entry(self, offset: int) -> tuple[int, int]:
        """The last ``(absolute offset, position)`` pair at or below ``offset``; (-1, 0) if none."""
        i = bisect_right(self._offsets, offset - self.base_offset)
        if not i:
            return -1, 0
        return self.base_offset + self._offsets[i - 1], self._positions[i - 1]

    def last_entry(self) -> tuple[int, int]:
        """The last ``(absolute offset, position)`` pair; (-1, 0) when the index is empty."""
        if not self._offsets:
            return -1, 0
        return self.base_offset + self._offsets[-1], self._positions[-1]

    def last_position(self) -> int:
        """Position of the last indexed entry (0 when the index is empty)."""
        return self.last_entry()[1]


__all__ = ["IndexFile", "OffsetIndex", "ENTRY_SIZE"]
