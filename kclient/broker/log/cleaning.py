"""One cleaning round of one compacted log, as Kafka's Cleaner does it.

1. Map every key of the dirty section ``[first dirty, first uncleanable)`` to its latest offset
   (the map is bounded; when it fills up, the round ends where the map ends).
2. Group the segments from the log start up to the map's end into runs of at most
   ``segment.bytes`` (and an int32 offset range), so cleaned segments do not shrink forever.
3. Rewrite each group into one ``<base>.log.cleaned`` (records filtered by
   :class:`~kclient.broker.log.compact.EntryFilter`, index rebuilt, the last segment's mtime
   kept) and swap it in (:meth:`Log.replace_segments`).

The round returns the offset up to which the log is now clean (the next first dirty offset).

Transactions, as Kafka's cleaner: nothing at or past the first unstable offset (the oldest open
transaction) is cleanable, and the records of aborted transactions (the ``.txnindex`` entries)
are removed first: they neither enter the offset map nor survive the rewrite, so an aborted
value never shadows a committed one.  Markers are kept.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kclient.broker.log import swap
from kclient.broker.log.compact import EntryFilter, OffsetMap, entry_keys
from kclient.broker.log.config import INT32_MAX
from kclient.broker.log.entries import head_info
from kclient.broker.log.index import ENTRY
from kclient.broker.log.log import Log
from kclient.broker.log.producer_state import parse_header
from kclient.broker.log.segment import LogSegment
from kclient.protocol.records.common import MAGIC_OFFSET


class CleaningAborted(Exception):
    """The log was closed or deleted, or the cleaner stopped, in the middle of a round."""


@dataclass(frozen=True)
class Cleanable:
    """A log's dirty section and how dirty it is."""

    log: Log
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int

    @property
    def ratio(self) -> float:
        """Kafka's cleanable ratio: dirty bytes over all bytes up to the uncleanable offset."""
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def _end(segments: Sequence[LogSegment], i: int) -> int:
    """Offset after segment ``i``: the next segment's base (or its own next offset)."""
    return segments[i + 1].base_offset if i + 1 < len(segments) else segments[i].next_offset


def cleanable(log: Log, checkpoint: int, now: int) -> Cleanable:
    """The dirty section of ``log`` given its cleaner checkpoint (Kafka's LogToClean)."""
    segments = log.segments
    first_dirty = checkpoint
    if not log.log_start_offset <= first_dirty <= log.log_end_offset:
        first_dirty = log.log_start_offset
    uncleanable = segments[-1].base_offset
    lag = log.config.min_compaction_lag_ms
    for i, seg in enumerate(segments[:-1]):
        if lag > 0 and _end(segments, i) > first_dirty and seg.known_max_timestamp() > now - lag:
            uncleanable = seg.base_offset
            break
    unstable = log.producer_state.first_unstable_offset()
    if unstable is not None:
        uncleanable = min(uncleanable, unstable)
    uncleanable = max(uncleanable, first_dirty)
    clean = dirty = 0
    for i, seg in enumerate(segments):
        if _end(segments, i) <= first_dirty:
            clean += seg.size
        elif seg.base_offset < uncleanable:
            dirty += seg.size
    return Cleanable(log, first_dirty, uncleanable, clean, dirty)


class Throttler:
    """Sleeps so that the bytes reported stay under ``rate`` bytes per second."""

    def __init__(self, rate: float, stop: threading.Event) -> None:
        """``stop`` cuts a sleep short (the cleaner is shutting down)."""
        self.rate, self.stop = rate, stop
        self.start, self.bytes = time.monotonic(), 0

    def __call__(self, count: int) -> None:
        """Account for ``count`` bytes read or written; sleep if ahead of the rate."""
        self.bytes += count
        if self.rate == float("inf"):
            return
        ahead = self.bytes / self.rate - (time.monotonic() - self.start)
        if ahead > 0:
            self.stop.wait(ahead)


class LogCleaning:
    """One cleaning round of one log (see the module docstring)."""

    def __init__(
        self,
        target: Cleanable,
        now: int,
        map_slots: int,
        throttle: Callable[[int], None],
        stop: threading.Event,
    ) -> None:
        """``map_slots``: capacity of the offset map in keys."""
        self.target, self.log, self.now = target, target.log, now
        self.map = OffsetMap(map_slots)
        self.throttle, self.stop = throttle, stop
        #: producer id -> (first offset, marker offset) of each aborted transaction
        self.aborted: dict[int, list[tuple[int, int]]] = {}
        for seg in self.log.segments:
            for txn in seg.txn_index.entries:
                self.aborted.setdefault(txn.producer_id, []).append(
                    (txn.first_offset, txn.last_offset)
                )

    def is_aborted(self, data: bytes) -> bool:
        """Whether the entry is a data batch of an aborted transaction."""
        if not self.aborted or data[MAGIC_OFFSET] != 2:
            return False
        h = parse_header(data, 0)
        if not h.transactional or h.control:
            return False
        return any(
            first <= h.base_offset <= last for first, last in self.aborted.get(h.producer_id, ())
        )

    def check(self) -> None:
        """Raise CleaningAborted when the cleaner stops or the log went away."""
        if self.stop.is_set() or self.log.closed:
            raise CleaningAborted(self.log.directory.name)

    def run(self) -> int:
        """Clean; return the new first dirty offset."""
        target = self.target
        segments = self.log.segments
        legacy_horizon = self._legacy_horizon(segments)
        if not self.build_map(segments):
            raise ValueError(
                f"{self.log.directory.name}: the offset map holds {self.map.slots} "
                f"keys, too few for one entry; raise log.cleaner.dedupe.buffer.size"
            )
        end = (
            self.map.latest_offset + 1 if self.map.latest_offset >= 0 else target.first_uncleanable
        )
        filt = EntryFilter(
            self.map, self.now, self.log.config.delete_retention_ms, target.first_uncleanable
        )
        for group in group_segments(
            [s for s in segments[:-1] if s.base_offset < end],
            self.log.config.segment_bytes,
            target.first_uncleanable,
        ):
            self.clean_group(group, filt, legacy_horizon)
        return end

    def _legacy_horizon(self, segments: Sequence[LogSegment]) -> int:
        """v0/v1 tombstones go from segments older than the last clean segment's mtime minus
        delete.retention.ms (0 when nothing is clean yet)."""
        clean = [s for i, s in enumerate(segments) if _end(segments, i) <= self.target.first_dirty]
        if not clean:
            return 0
        return clean[-1].last_modified_ms() - self.log.config.delete_retention_ms

    def build_map(self, segments: Sequence[LogSegment]) -> bool:
        """Map the keys of ``[first dirty, first uncleanable)`` to their latest offsets, up to
        where the map is full; False if not even the first entry fit."""
        start, stop = self.target.first_dirty, self.target.first_uncleanable
        for i, seg in enumerate(segments):
            if _end(segments, i) <= start or seg.base_offset >= stop:
                continue
            for info in seg.entries(seg.index.lookup(start)):
                if info.last_offset < start:
                    continue
                self.check()
                data = seg.read_entry(info)
                self.throttle(len(data))
                keys = (
                    []
                    if self.is_aborted(data)
                    else [(o, k) for o, k in entry_keys(data) if start <= o < stop]
                )
                if not self.map.room_for(len(keys)):
                    return self.map.latest_offset >= 0
                for offset, key in keys:
                    if key is not None:
                        self.map.put(key, offset)
                self.map.update_latest(info.last_offset)
        return True

    def clean_group(self, group: list[LogSegment], filt: EntryFilter, legacy_horizon: int) -> bool:
        """Rewrite ``group`` into one cleaned segment and swap it in."""
        directory, base = self.log.directory, group[0].base_offset
        log_c, index_c = swap.paths(directory, base, swap.CLEANED)
        try:
            with open(log_c, "wb") as out:
                pairs = self._rewrite(group, filt, legacy_horizon, out)
                out.flush()
                os.fsync(out.fileno())
            with open(index_c, "wb") as out:
                out.write(b"".join(ENTRY.pack(o - base, p) for o, p in pairs))
                out.flush()
                os.fsync(out.fileno())
            mtime = group[-1].last_modified_ms() * 1_000_000
            os.utime(log_c, ns=(mtime, mtime))
            swap.write_end(directory, base, group[-1].next_offset)
            swap.crash_point("cleaned")
            self.check()
        except BaseException:
            swap.discard(directory, base)
            raise
        return self.log.replace_segments(tuple(group))

    def _rewrite(
        self, group: list[LogSegment], filt: EntryFilter, legacy_horizon: int, out: Any
    ) -> list[tuple[int, int]]:
        """Write the retained entries of ``group`` to ``out``; the index pairs to write."""
        interval = self.log.config.index_interval_bytes
        pairs, position, since = [], 0, 0
        for seg in group:
            filt.retain_legacy_deletes = seg.last_modified_ms() > legacy_horizon
            for info in seg.entries():
                self.check()
                data = seg.read_entry(info)
                kept = None if self.is_aborted(data) else filt.filter(data)
                self.throttle(len(data))
                if kept is None:
                    continue
                if since >= interval:
                    pairs.append((head_info(kept, 0, position, len(kept)).last_offset, position))
                    since = 0
                out.write(kept)
                since += len(kept)
                position += len(kept)
        return pairs


def group_segments(
    segments: list[LogSegment], max_size: int, uncleanable: int
) -> list[list[LogSegment]]:
    """Runs of consecutive segments of at most ``max_size`` bytes whose offsets fit an int32
    range from the run's base (Kafka's groupSegmentsBySize)."""
    groups: list[list[LogSegment]] = []
    i, n = 0, len(segments)
    while i < n:
        group, size = [segments[i]], segments[i].size
        i += 1
        while i < n and size + segments[i].size <= max_size:
            last = segments[i + 1].base_offset - 1 if i + 1 < n else uncleanable - 1
            if segments[i].size and last - group[0].base_offset > INT32_MAX:
                break
            group.append(segments[i])
            size += segments[i].size
            i += 1
        groups.append(group)
    return groups


def clean_log(
    target: Cleanable,
    now: int,
    *,
    map_slots: int = 1 << 22,
    throttle: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run one cleaning round on ``target``; the log's new first dirty offset."""
    stop = stop if stop is not None else threading.Event()
    throttler = throttle if throttle is not None else Throttler(float("inf"), stop)
    return LogCleaning(target, now, map_slots, throttler, stop).run()


__all__ = [
    "Cleanable",
    "CleaningAborted",
    "LogCleaning",
    "Throttler",
    "cleanable",
    "clean_log",
    "group_segments",
]
