"""One log segment: ``<20-digit base offset>.log`` plus its ``.index``, ``.timeindex`` and
``.txnindex``.

Appends go through :meth:`LogSegment.append` under the owning log's lock: the bytes are written
with ``pwrite`` first and only then is ``size`` raised, so a reader that snapshots ``size`` sees
complete, committed entries only and never needs the lock.  Reads locate the entry holding an
offset through the sparse index plus a short header walk and return a :class:`FileRegion`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kclient.broker.log.config import INT32_MAX
from kclient.broker.log.entries import EntryInfo, EntryWalk, crc_ok
from kclient.broker.log.index import ENTRY_SIZE, OffsetIndex
from kclient.broker.log.region import FileHandle, FileRegion, pread_exact
from kclient.broker.log.time_index import TIME_INDEX_SUFFIX, TimeIndex
from kclient.broker.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex
from kclient.protocol.records import legacy, v2
from kclient.protocol.records.common import LOG_OVERHEAD

log = logging.getLogger(__name__)

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
        self.time_index = TimeIndex(
            directory / segment_name(base_offset, TIME_INDEX_SUFFIX), base_offset
        )
        self.txn_index = TransactionIndex(directory / segment_name(base_offset, TXN_INDEX_SUFFIX))
        self.size = os.fstat(self._handle.fd).st_size
        self.next_offset = base_offset
        self.max_timestamp: int | None = None  # None: not known until scanned
        self.offset_of_max_timestamp = base_offset - 1  # last offset of the entry holding it
        self.first_append_ms: int | None = None if self.size == 0 else self.last_modified_ms()
        self._bytes_since_index = 0
        self._dirty = False
        self.recovery_error: str | None = None
        self._index_suspect = False

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, next={self.next_offset})"

    # ------------------------------------------------------------------ loading
    def max_offset(self, next_base: int | None) -> int:
        """Largest offset this segment may hold: below the next segment's base, and within
        an int32 of its own base (Kafka's ``ensureOffsetInRange``)."""
        top = self.base_offset + INT32_MAX
        return top if next_base is None else min(top, next_base - 1)

    def recover(self, next_base: int | None = None, active: bool = True) -> int:
        """Kafka's ``LogSegment.recover``: validate every entry (size, CRC, offset order and
        range; dense offsets in the ``active`` segment), truncate after the last valid one.

        Rebuilds both indexes; returns the bytes cut off (``recovery_error`` says why).
        """
        walk = EntryWalk(
            self._handle.fd,
            0,
            self.size,
            validate=True,
            min_offset=self.base_offset,
            max_offset=self.max_offset(next_base),
            dense=active,
        )
        self._reindex(walk)
        self.recovery_error = walk.error
        truncated = self.size - walk.valid_end
        if truncated:
            os.ftruncate(self._handle.fd, walk.valid_end)
            os.fsync(self._handle.fd)
            self.size = walk.valid_end
        return truncated

    def load(self, next_base: int | None = None, active: bool = True) -> str | None:
        """Load a cleanly closed segment after Kafka's ``sanityCheck``; what is wrong, or None.

        The index must be sane and agree with the entries it points at; the entries walked
        (from the last index entry, or all of them in the ``active`` segment, whose last entry's
        CRC is checked too because it sets the log end offset) must keep their offsets in order
        and in range.  A problem is returned with its file and byte position; the caller then
        recovers the segment (:meth:`recover`), as Kafka's LogLoader does.
        """
        problem = self.index.load(self.size)
        if problem is not None:
            return f"corrupt index {self.index.path.name}: {problem}"
        top = self.max_offset(next_base)
        problem = self._check_all(top) if active else self._check_tail(top)
        if problem is not None:
            return problem
        if self.time_index.missing and self.size:  # Kafka rebuilds a missing index
            log.info("%s: no time index, rebuilding it", self.log_path)
            self._reindex(self.entries(), offsets=False)
            return None
        problem = self.time_index.load(self.next_offset)
        if problem is not None:
            return f"corrupt time index {self.time_index.path.name}: {problem}"
        return None

    def _check_tail(self, top: int) -> str | None:
        """Walk from the last index entry: it must point at an entry ending at its offset."""
        indexed, start = self.index.last_entry()
        walk = EntryWalk(
            self._handle.fd, start, self.size, min_offset=self.base_offset, max_offset=top
        )
        last = None
        for info in walk:
            if last is None and indexed >= 0 and info.last_offset != indexed:
                return (
                    f"corrupt index {self.index.path.name}: its last entry says offset "
                    f"{indexed} at byte {start}, the entry there ends at {info.last_offset}"
                )
            last = info
        if walk.error is not None:
            return f"{self.log_path.name}: {walk.error}"
        if last is not None:
            self.next_offset = last.last_offset + 1
        self._bytes_since_index = self.size - start
        return None

    def _check_all(self, top: int) -> str | None:
        """Walk every entry header (dense offsets), match each index entry, CRC the last."""
        pairs = self.index.entries()
        walk = EntryWalk(
            self._handle.fd, 0, self.size, min_offset=self.base_offset, max_offset=top, dense=True
        )
        j, last, max_ts, max_at = 0, None, -1, -1
        for info in walk:
            if j < len(pairs) and pairs[j][1] <= info.position:
                offset, position = pairs[j]
                if position != info.position or offset != info.last_offset:
                    return (
                        f"corrupt index {self.index.path.name}: entry {j} at byte "
                        f"{j * ENTRY_SIZE} says offset {offset} at byte {position}, the "
                        f"entry at byte {info.position} ends at {info.last_offset}"
                    )
                j += 1
            if info.max_timestamp > max_ts:
                max_ts, max_at = info.max_timestamp, info.last_offset
            last = info
        if walk.error is not None:
            return f"{self.log_path.name}: {walk.error}"
        if last is not None:
            if not crc_ok(self.read_entry(last), 0, last.size, last.magic):
                return f"{self.log_path.name}: CRC mismatch at position {last.position}"
            self.next_offset = last.last_offset + 1
        self.max_timestamp = max_ts
        if max_ts >= 0:
            self.offset_of_max_timestamp = max_at
        self._bytes_since_index = self.size - self.index.last_position()
        return None

    def _reindex(self, walk: Iterable[EntryInfo], offsets: bool = True) -> None:
        """Rebuild the time index (and with ``offsets`` the offset index, next offset and
        bytes since the last index entry) from a walk over all entries, as appends build them;
        the time index ends with the segment's largest timestamp."""
        pairs, times = [], []
        since, max_ts, max_at = 0, -1, self.base_offset - 1
        for info in walk:
            if info.max_timestamp > max_ts:
                max_ts, max_at = info.max_timestamp, info.last_offset
            if since >= self.index_interval_bytes:
                pairs.append((info.last_offset, info.position))
                times.append((max_ts, max_at))
                since = 0
            since += info.size
            if offsets:
                self.next_offset = info.last_offset + 1
        if offsets:
            self.index.rebuild(pairs)
            self._bytes_since_index = since
        self.time_index.rebuild(times + [(max_ts, max_at)])
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_at

    # ------------------------------------------------------------------ writing
    def append(
        self,
        data: bytes | bytearray,
        entries: Iterable[tuple[int, int, int, int]],
        next_offset: int,
        max_timestamp: int,
        now_ms: int,
    ) -> None:
        """Write prepared entries ``(position, size, last offset, max timestamp)`` at the end,
        then publish the new size, indexes and offsets (Kafka's LogSegment.append)."""
        fd, position = self._handle.fd, self.size
        view, written = memoryview(data), 0
        while written < len(data):
            written += os.pwrite(fd, view[written:], position + written)
        self.size = position + len(data)
        max_ts = self.known_max_timestamp()
        for rel, size, last_offset, entry_ts in entries:
            if entry_ts > max_ts:
                max_ts, self.offset_of_max_timestamp = entry_ts, last_offset
            if self._bytes_since_index >= self.index_interval_bytes:
                self.index.append(last_offset, position + rel)
                self.time_index.maybe_append(max_ts, self.offset_of_max_timestamp)
                self._bytes_since_index = 0
            self._bytes_since_index += size
        self.next_offset = next_offset
        self.max_timestamp = max_ts
        if self.first_append_ms is None:
            self.first_append_ms = now_ms
        self._dirty = True

    def flush(self) -> None:
        """fsync the segment and its index if anything was written since the last flush."""
        if self._dirty and not self._handle.closed:
            os.fsync(self._handle.fd)
            self._dirty = False
        self.index.flush()
        self.time_index.flush()

    def seal(self) -> None:
        """Add the largest timestamp to the time index (Kafka's onBecomeInactiveSegment), then
        flush and close the index files of a segment that will not be written again."""
        if self.max_timestamp is not None and self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.flush()
        self.index.close()
        self.time_index.close()

    # ------------------------------------------------------------------ reading
    def find_position(self, offset: int, limit: int) -> int | None:
        """Position of the first entry (below ``limit``) whose largest offset is >= ``offset``.

        The entry an index pair points at must end at the pair's offset; if it does not (an
        index damaged after load), the error is logged once and the segment is scanned from 0.
        """
        indexed, start = self.index.lookup_entry(offset)
        if self._index_suspect or start >= limit:  # start >= limit: a pair newer than limit
            indexed, start = -1, 0
        for info in EntryWalk(self._handle.fd, start, limit, chunk=LOOKUP_CHUNK):
            if indexed >= 0:
                if info.last_offset != indexed:
                    break
                indexed = -1
            if info.last_offset >= offset:
                return info.position
        else:
            if indexed < 0:
                return None
        self._index_suspect = True
        log.error(
            "%s: index entry (offset %d, position %d) does not point at an entry ending "
            "at that offset; scanning the segment from its start instead",
            self.index.path,
            indexed,
            start,
        )
        return self.find_position(offset, limit)

    def read(self, offset: int, max_bytes: int) -> FileRegion | None:
        """Region from the entry holding ``offset``, at most ``max_bytes``; None if past the end."""
        limit = self.size
        position = self.find_position(offset, limit)
        if position is None:
            return None
        return FileRegion(self._handle.fd, position, min(max_bytes, limit - position), self._handle)

    def entries(self, start: int = 0) -> EntryWalk:
        """Header walk over the committed entries from ``start``."""
        return EntryWalk(self._handle.fd, start, self.size)

    def known_max_timestamp(self) -> int:
        """Largest record timestamp in the segment: kept while appending; for a segment loaded
        sealed, the last time-index entry (seal writes it), else one header walk."""
        if self.max_timestamp is None:
            max_ts, max_at = self.time_index.last_timestamp(), self.base_offset - 1
            if max_ts < 0:
                for info in self.entries():
                    if info.max_timestamp > max_ts:
                        max_ts, max_at = info.max_timestamp, info.last_offset
            self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_at
        return self.max_timestamp

    def find_timestamp(self, timestamp: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``min_offset`` stamped at or
        after ``timestamp``, or None: the time index (binary search) names the last offset
        that cannot match, the offset index its position; entries are scanned from there."""
        if self.known_max_timestamp() < timestamp:
            return None
        start = max(self.time_index.offset_below(timestamp) + 1, min_offset)
        position = self.find_position(start, self.size)
        if position is None:
            return None
        for info in self.entries(position):
            if info.max_timestamp < timestamp or info.last_offset < start:
                continue
            for record in self._decode(info):
                if record.timestamp >= timestamp and record.offset >= start:
                    return record.offset, record.timestamp
        return None

    def read_entry(self, info: EntryInfo) -> bytes:
        """The bytes of one entry found by a walk over this segment."""
        return pread_exact(self._handle.fd, info.size, info.position)

    def _decode(self, info: EntryInfo) -> list[Any]:
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
        """Close the indexes; the data file closes once no snapshot or region references it."""
        self.index.close()
        self.time_index.close()

    def delete(self) -> None:
        """Unlink the files; an open region keeps reading the unlinked data until released."""
        self.index.close()
        self.index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        try:
            self.log_path.unlink()
        except FileNotFoundError:
            pass


__all__ = ["LogSegment", "segment_name", "LOOKUP_CHUNK"]
