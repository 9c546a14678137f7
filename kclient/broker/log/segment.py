"""One log segment: ``<20-digit base offset>.log`` plus its ``.index``.

Appends go through :meth:`LogSegment.append` under the owning log's lock: the bytes are written
with ``pwrite`` first and only then is ``size`` raised, so a reader that snapshots ``size`` sees
complete, committed entries only and never needs the lock.  Reads locate the entry holding an
offset through the sparse index plus a short header walk and return a :class:`FileRegion`.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kclient.broker.log.entries import EntryInfo, EntryWalk
from kclient.broker.log.index import OffsetIndex
from kclient.broker.log.region import FileHandle, FileRegion, pread_exact
from kclient.protocol.records import legacy, v2
from kclient.protocol.records.common import LOG_OVERHEAD

#: Bytes read per step when walking headers from an index position to the wanted entry.
LOOKUP_CHUNK = 16 * 1024


def segment_name(base_offset: int, suffix: str) -> str:
    """File name of a segment's file: 20-digit zero-padded base offset plus ``suffix``."""
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """A segment file, its offset index and the in-memory facts about both."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        """Open (creating if missing) the segment's files; sizes come from the file."""
        self.base_offset = base_offset
        self.log_path = directory / segment_name(base_offset, ".log")
        self.index_interval_bytes = index_interval_bytes
        self._handle = FileHandle(self.log_path)
        self.index = OffsetIndex(directory / segment_name(base_offset, ".index"), base_offset)
        self.size = os.fstat(self._handle.fd).st_size
        self.next_offset = base_offset
        self.max_timestamp: int | None = None  # None: not known until scanned
        self.first_append_ms: int | None = None if self.size == 0 else self.last_modified_ms()
        self._bytes_since_index = 0
        self._dirty = False

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, next={self.next_offset})"

    # ------------------------------------------------------------------ loading
    def recover(self) -> int:
        """Validate every entry (size, CRC, offsets), truncate after the last valid one.

        Rebuilds the index; returns the number of bytes cut off.
        """
        walk = EntryWalk(self._handle.fd, 0, self.size, validate=True,
                         min_offset=self.base_offset)
        self._reindex(walk)
        truncated = self.size - walk.valid_end
        if truncated:
            os.ftruncate(self._handle.fd, walk.valid_end)
            os.fsync(self._handle.fd)
            self.size = walk.valid_end
        return truncated

    def load(self) -> bool:
        """Trust a cleanly closed segment: load its index, find its end; False if inconsistent."""
        if not self.index.load(self.size):
            walk = EntryWalk(self._handle.fd, 0, self.size, min_offset=self.base_offset)
            self._reindex(walk)
            return walk.valid_end == self.size
        start = self.index.last_position()
        walk = EntryWalk(self._handle.fd, start, self.size)
        last = None
        for info in walk:
            last = info
        if last is not None:
            self.next_offset = last.last_offset + 1
        self._bytes_since_index = self.size - start
        return walk.valid_end == self.size and (last is not None or self.size == 0)

    def _reindex(self, walk: Iterable[EntryInfo]) -> None:
        """Rebuild the index, next offset and max timestamp from a walk over all entries."""
        pairs = []
        since, max_ts = 0, -1
        for info in walk:
            if since >= self.index_interval_bytes:
                pairs.append((info.last_offset, info.position))
                since = 0
            since += info.size
            max_ts = max(max_ts, info.max_timestamp)
            self.next_offset = info.last_offset + 1
        self.index.rebuild(pairs)
        self.max_timestamp = max_ts
        self._bytes_since_index = since

    # ------------------------------------------------------------------ writing
    def append(self, data: bytes, entries: Iterable[tuple[int, int, int]], next_offset: int,
               max_timestamp: int, now_ms: int) -> None:
        """Write prepared entries at the end, then publish the new size, index and offsets."""
        fd, position = self._handle.fd, self.size
        view, written = memoryview(data), 0
        while written < len(data):
            written += os.pwrite(fd, view[written:], position + written)
        self.size = position + len(data)
        for rel, size, last_offset in entries:
            if self._bytes_since_index >= self.index_interval_bytes:
                self.index.append(last_offset, position + rel)
                self._bytes_since_index = 0
            self._bytes_since_index += size
        self.next_offset = next_offset
        if self.max_timestamp is not None:
            self.max_timestamp = max(self.max_timestamp, max_timestamp)
        if self.first_append_ms is None:
            self.first_append_ms = now_ms
        self._dirty = True

    def flush(self) -> None:
        """fsync the segment and its index if anything was written since the last flush."""
        if self._dirty and not self._handle.closed:
            os.fsync(self._handle.fd)
            self._dirty = False
        self.index.flush()

    def seal(self) -> None:
        """Flush and close the index file of a segment that will not be written again."""
        self.flush()
        self.index.close()

    # ------------------------------------------------------------------ reading
    def find_position(self, offset: int, limit: int) -> int | None:
        """Position of the first entry (below ``limit``) whose largest offset is >= ``offset``."""
        start = self.index.lookup(offset)
        for info in EntryWalk(self._handle.fd, start, limit, chunk=LOOKUP_CHUNK):
            if info.last_offset >= offset:
                return info.position
        return None

    def read(self, offset: int, max_bytes: int) -> FileRegion | None:
        """Region from the entry holding ``offset``, at most ``max_bytes``; None if past the end."""
        limit = self.size
        position = self.find_position(offset, limit)
        if position is None:
            return None
        return FileRegion(self._handle.fd, position, min(max_bytes, limit - position),
                          self._handle)

    def entries(self, start: int = 0) -> EntryWalk:
        """Header walk over the committed entries from ``start``."""
        return EntryWalk(self._handle.fd, start, self.size)

    def known_max_timestamp(self) -> int:
        """Largest record timestamp in the segment (computed by one header walk, then kept)."""
        if self.max_timestamp is None:
            self.max_timestamp = max((i.max_timestamp for i in self.entries()), default=-1)
        return self.max_timestamp

    def find_timestamp(self, timestamp: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``min_offset`` stamped at or
        after ``timestamp``, or None."""
        if self.known_max_timestamp() < timestamp:
            return None
        for info in self.entries():
            if info.max_timestamp < timestamp or info.last_offset < min_offset:
                continue
            for record in self._decode(info):
                if record.timestamp >= timestamp and record.offset >= min_offset:
                    return record.offset, record.timestamp
        return None

    def read_entry(self, info: EntryInfo) -> bytes:
        """The bytes of one entry found by a walk over this segment."""
        return pread_exact(self._handle.fd, info.size, info.position)

    def _decode(self, info: EntryInfo) -> list:
        """The records of one entry (decompressed, absolute offsets)."""
        data = self.read_entry(info)
        if info.magic == 2:
            return v2.read_batch(data, 0, info.size - LOG_OVERHEAD).records
        return legacy.read_message(data, 0, info.size - LOG_OVERHEAD).records

    def last_modified_ms(self) -> int:
        """The segment file's modification time in ms (retention and ListOffsets v0 use it)."""
        if self._handle.closed:
            return os.stat(self.log_path).st_mtime_ns // 1_000_000
        return os.fstat(self._handle.fd).st_mtime_ns // 1_000_000

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close the index; the data file closes once no snapshot or region references it."""
        self.index.close()

    def delete(self) -> None:
        """Unlink both files; an open region keeps reading the unlinked data until released."""
        self.index.close()
        self.index.delete()
        try:
            self.log_path.unlink()
        except FileNotFoundError:
            pass


__all__ = ["LogSegment", "segment_name", "LOOKUP_CHUNK"]
