"""The log of one topic-partition: a directory ``<topic>-<partition>`` of segments.

Writers (append, roll, flush, retention, close) serialize on one lock.  Readers never take it:
the segment list is an immutable tuple replaced as a whole (copy-on-write), so a read binary-
searches a consistent snapshot while retention deletes segments; a deleted segment's open file
descriptor stays valid for as long as a snapshot or a returned region references it.

Durability: the active segment is fsynced every ``flush_interval_messages`` records, on the
manager's ``flush_interval_ms`` timer, on roll (the rolled segment) and on close; each flush
moves the log's ``recovery_point`` (Kafka's: every offset below it is on disk), which the
manager checkpoints in ``recovery-point-offset-checkpoint``.  Close writes a clean-shutdown
marker; opening removes it.  With the marker the segments are sanity-checked
(:meth:`LogSegment.load`); without it every segment holding offsets at or after the recovery
point is recovered (:meth:`LogSegment.recover`: CRC, offset order and range) and truncated at
the first invalid entry, as Kafka's LogLoader does; a segment failing its sanity check is
recovered the same way.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from kclient.broker.log import swap
from kclient.broker.log.assign import prepare
from kclient.broker.log.config import INT32_MAX, LogConfig
from kclient.broker.log.producer_state import (
    CompletedTxn,
    ProducerStateManager,
    batch_headers,
    replay,
)
from kclient.broker.log.region import FileRegion
from kclient.broker.log.segment import LogSegment
from kclient.broker.log.txn_index import AbortedTxn
from kclient.protocol.error_codes import InvalidProducerEpochError
from kclient.protocol.errors import OffsetOutOfRangeError, RecordListTooLargeError
from kclient.protocol.records import build_marker_batch
from kclient.protocol.records.ops import EntryInfo

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN = ".kclient_clean_shutdown"
#: the per-partition recovery point file of earlier versions (removed on load)
LEGACY_RECOVERY_POINT = ".kclient_recovery_point"
LOG_START_OFFSET = ".kclient_log_start_offset"
LATEST, EARLIEST = -1, -2
_SEGMENT_FILE = re.compile(r"^(\d{20})\.log$")
_DIR_NAME = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def now_ms() -> int:
    """Wall-clock time in ms (module-level so tests can patch the log's clock)."""
    return int(time.time() * 1000)


@dataclass(frozen=True)
class AppendInfo:
    """What an append stored: offsets, the LogAppendTime used (-1: none), max timestamp, bytes."""

    first_offset: int
    last_offset: int
    log_append_time: int
    max_timestamp: int
    bytes: int
    #: the records repeat batches already written (idempotent producer retry): nothing stored
    duplicate: bool = False


def _write_small_file(path: Path, text: str) -> None:
    """Write a tiny state file atomically (temp file, fsync, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="ascii") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Log:
    """Append-only, segmented, recoverable log of one topic-partition."""

    def __init__(
        self, directory: Path, config: LogConfig, *, recover: bool = True, recovery_point: int = 0
    ) -> None:
        """Open (creating if needed) the partition directory and load its segments.

        ``recovery_point``: the offset checkpointed as on disk (0, unknown: after an unclean
        shutdown every segment is recovered); ``recover=False`` trusts the files (a new log).
        """
        self.directory = Path(directory)
        self.config = config
        match = _DIR_NAME.match(self.directory.name)
        self.topic = match.group("topic") if match else self.directory.name
        self.partition = int(match.group("partition")) if match else 0
        self._lock = threading.RLock()
        self._closed = False
        self._unflushed = 0
        self._last_flush_ms = now_ms()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._view: tuple[tuple[LogSegment, ...], list[int]] = ((), [])
        self.recovery_point = recovery_point
        self._load(recover)
        self.producer_state = ProducerStateManager(self.directory, self.directory.name)
        self._load_producer_state()

    def __repr__(self) -> str:
        return (
            f"Log({self.directory.name}, offsets {self.log_start_offset}.."
            f"{self.log_end_offset}, segments={len(self._view[0])})"
        )

    # ------------------------------------------------------------------ loading
    def _load(self, recover: bool) -> None:
        """Open the segments; recover the unclean ones; set the start and end offsets."""
        marker = self.directory / CLEAN_SHUTDOWN
        clean = marker.exists()
        if clean:
            marker.unlink()
            swap.fsync_dir(self.directory)
        swapped = swap.recover(self.directory)
        segments = [
            LogSegment(self.directory, base, self.config.index_interval_bytes)
            for base in self._segment_bases()
        ]
        if not segments:
            segments = [LogSegment(self.directory, 0, self.config.index_interval_bytes)]
        point = self.recovery_point if recover and not clean else None
        segments = self._open_segments(segments, point, swapped)
        self._publish(tuple(segments))
        self.log_end_offset = segments[-1].next_offset
        self.log_start_offset = max(
            segments[0].base_offset, min(self._read_log_start(), self.log_end_offset)
        )
        self.recovery_point = (
            self.log_end_offset
            if clean or not recover
            else min(max(self.recovery_point, self.log_start_offset), self.log_end_offset)
        )
        (self.directory / LEGACY_RECOVERY_POINT).unlink(missing_ok=True)

    def _load_producer_state(self) -> None:
        """Producer state from the newest snapshot plus the batches written after it."""
        state = self.producer_state
        snapshot = state.load_snapshot(self.log_end_offset)
        start = max(snapshot if snapshot is not None else 0, self.log_start_offset)
        segments = self._view[0]
        for seg in segments:  # aborts at or after ``start`` are replayed below
            seg.txn_index.truncate_from(start)
        if start < self.log_end_offset:
            replay(state, segments, start, self._index_abort)

    def _index_abort(self, done: CompletedTxn) -> None:
        """Record an aborted transaction in the ``.txnindex`` of its marker's segment."""
        if not done.aborted:
            return
        segments, bases = self._view
        seg = segments[max(bisect_right(bases, done.last_offset) - 1, 0)]
        lso = self.producer_state.first_unstable_offset()
        seg.txn_index.append(
            AbortedTxn(
                done.producer_id,
                done.first_offset,
                done.last_offset,
                done.last_offset + 1 if lso is None else lso,
            )
        )

    def _segment_bases(self) -> list[int]:
        """Base offsets of the ``.log`` files present, ascending; removes stray temp files."""
        bases = []
        for path in self.directory.iterdir():
            if path.name.endswith(".tmp"):
                path.unlink()
            elif _SEGMENT_FILE.match(path.name):
                bases.append(int(path.name[:20]))
        return sorted(bases)

    def _read_log_start(self) -> int:
        """The log start offset DeleteRecords last set (0 when never set)."""
        try:
            return int((self.directory / LOG_START_OFFSET).read_text().strip())
        except (OSError, ValueError):
            return 0

    def _open_segments(
        self,
        segments: list[LogSegment],
        point: int | None,
        swapped: frozenset[int] | set[int] = frozenset(),
    ) -> list[LogSegment]:
        """Kafka's LogLoader: recover every segment holding offsets at or after the recovery
        point (and those a swap just replaced); sanity-check the others and recover those that
        fail; drop every segment after a truncated one."""
        for i, seg in enumerate(segments):
            active = i == len(segments) - 1
            next_base = None if active else segments[i + 1].base_offset
            if seg.base_offset in swapped or (
                point is not None and (next_base is None or next_base > point)
            ):
                cut = self._recover_segment(seg, next_base, active)
            else:
                problem = seg.load(next_base, active)
                cut = 0
                if problem is not None:
                    log.error(
                        "%s: %s; recovering the segment and rebuilding its index",
                        self.directory,
                        problem,
                    )
                    cut = self._recover_segment(seg, next_base, active)
            if next_base is not None and not cut:
                seg.next_offset = max(seg.next_offset, next_base)
                seg.seal()
            if cut:
                self._drop(segments[i + 1 :])
                return segments[: i + 1]
        return segments

    def _recover_segment(self, seg: LogSegment, next_base: int | None, active: bool) -> int:
        """Recover one segment; report a truncation with the file, position and cause."""
        cut = seg.recover(next_base, active)
        if cut:
            log.error(
                "%s: found invalid entries: %s; truncated %d bytes at byte position %d, "
                "the log now ends at offset %d",
                seg.log_path,
                seg.recovery_error,
                cut,
                seg.size,
                seg.next_offset,
            )
        return cut

    def _drop(self, segments: list[LogSegment]) -> None:
        """Delete segments that follow a truncated one (their data is not contiguous)."""
        for seg in segments:
            log.warning(
                "%s: deleting segment %d after a corrupt one", self.directory.name, seg.base_offset
            )
            seg.delete()

    def _publish(self, segments: tuple[LogSegment, ...]) -> None:
        """Swap in a new segment snapshot (one atomic attribute store)."""
        self._view = (segments, [s.base_offset for s in segments])

    @property
    def closed(self) -> bool:
        """True once the log was closed or deleted."""
        return self._closed

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The current segment snapshot, oldest first."""
        return self._view[0]

    @property
    def size(self) -> int:
        """Bytes on disk over all segments."""
        return sum(s.size for s in self._view[0])

    # ------------------------------------------------------------------ append
    def append(
        self,
        records: bytes,
        *,
        magic: int,
        log_append_time: int | None = None,
        entries: list[EntryInfo] | None = None,
        leader_epoch: int | None = None,
        coordinator: bool = False,
    ) -> AppendInfo:
        """Assign offsets to ``records`` (format ``magic``), append them, flush per policy.

        ``entries``: the result of ``validate_records(records)`` when the caller already
        validated these exact bytes (they are then not validated again). ``leader_epoch`` is
        written into v2 batches (their partitionLeaderEpoch), as Kafka's leader does.
        ``coordinator``: a coordinator's own write (Kafka's AppendOrigin.COORDINATOR), whose
        batches carry no sequence and are not checked against the producer state.
        """
        with self._lock:
            self._check_open()
            prep = prepare(
                records,
                magic,
                self.log_end_offset,
                log_append_time=log_append_time,
                max_message_bytes=self.config.max_message_bytes,
                entries=entries,
                partition_leader_epoch=leader_epoch,
            )
            if len(prep.data) > self.config.segment_bytes:
                raise RecordListTooLargeError(
                    f"{len(prep.data)} bytes exceed segment.bytes={self.config.segment_bytes}"
                )
            headers = batch_headers(prep.data, (e[0] for e in prep.entries)) if magic == 2 else []
            if headers and not coordinator:
                dup = self.producer_state.check(headers)
                if dup is not None:
                    # Kafka answers a duplicate's max timestamp as its log append time
                    return AppendInfo(
                        dup.first_offset,
                        dup.last_offset,
                        dup.timestamp,
                        dup.timestamp,
                        0,
                        duplicate=True,
                    )
            now = now_ms()
            seg = self._maybe_roll(len(prep.data), prep.last_offset, now)
            seg.append(prep.data, prep.entries, prep.last_offset + 1, prep.max_timestamp, now)
            self.log_end_offset = prep.last_offset + 1
            if headers:
                self.producer_state.update(headers)
            self._unflushed += prep.record_count
            if self._unflushed >= self.config.flush_interval_messages:
                self._flush_locked(now)
        lat = log_append_time if (log_append_time is not None and magic > 0) else -1
        return AppendInfo(
            prep.first_offset, prep.last_offset, lat, prep.max_timestamp, len(prep.data)
        )

    def append_marker(
        self,
        producer_id: int,
        epoch: int,
        commit: bool,
        coordinator_epoch: int = 0,
        leader_epoch: int | None = None,
    ) -> int:
        """Write a transaction marker (control batch) ending ``producer_id``'s transaction on
        this partition, as the coordinator does; its offset.  Aborts go to the ``.txnindex``.
        A marker older than the producer's epoch here is refused (INVALID_PRODUCER_EPOCH)."""
        with self._lock:
            self._check_open()
            known = self.producer_state.producers.get(producer_id)
            if known is not None and epoch < known.epoch:
                raise InvalidProducerEpochError(
                    f"{self.directory.name}: marker epoch {epoch} of producer {producer_id} is "
                    f"below its epoch {known.epoch}"
                )
            batch = build_marker_batch(producer_id, epoch, commit, coordinator_epoch)
            prep = prepare(
                batch,
                2,
                self.log_end_offset,
                log_append_time=None,
                max_message_bytes=1 << 30,
                partition_leader_epoch=leader_epoch,
            )
            now = now_ms()
            seg = self._maybe_roll(len(prep.data), prep.last_offset, now)
            seg.append(
                bytes(prep.data), prep.entries, prep.last_offset + 1, prep.max_timestamp, now
            )
            self.log_end_offset = prep.last_offset + 1
            headers = batch_headers(prep.data, [0])
            for done in self.producer_state.update(headers, {prep.first_offset: int(commit)}):
                self._index_abort(done)
            self._flush_locked(now)
            return prep.first_offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, else the log end (Kafka's LSO:
        read_committed consumers read below it)."""
        first = self.producer_state.first_unstable_offset()
        end = self.log_end_offset
        return end if first is None else min(first, end)

    def aborted_transactions(self, fetch_offset: int, upper: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[fetch_offset, upper)`` (Kafka's
        collectAbortedTransactions: the segment of ``fetch_offset`` and those after it)."""
        segments, bases = self._view
        out: list[AbortedTxn] = []
        for seg in segments[max(bisect_right(bases, fetch_offset) - 1, 0) :]:
            found, complete = seg.txn_index.collect(fetch_offset, upper)
            out += found
            if complete:
                break
        return out

    def _check_open(self) -> None:
        """Refuse writes to a closed log."""
        if self._closed:
            raise ValueError(f"log {self.directory.name} is closed")

    def _maybe_roll(self, size: int, last_offset: int, now: int) -> LogSegment:
        """The segment to append to, rolling first when size, age or offset range demand it."""
        active = self._view[0][-1]
        if active.size == 0:
            return active
        full = active.size + size > self.config.segment_bytes
        old = (
            active.first_append_ms is not None
            and now - active.first_append_ms >= self.config.segment_ms
        )
        if full or old or last_offset - active.base_offset > INT32_MAX:
            return self._roll()
        return active

    def roll(self) -> None:
        """Start a new active segment now (if the current one holds data), so that everything
        written so far becomes cleanable."""
        with self._lock:
            self._check_open()
            if self._view[0][-1].size:
                self._roll()

    def _roll(self) -> LogSegment:
        """Flush the active segment and start a new one at the log end offset."""
        old = self._view[0][-1]
        old.seal()
        new = LogSegment(self.directory, self.log_end_offset, self.config.index_interval_bytes)
        new.next_offset = self.log_end_offset
        new.max_timestamp = -1
        self._publish(self._view[0] + (new,))
        self.recovery_point = max(self.recovery_point, new.base_offset)  # old one fsynced
        self.producer_state.write_snapshot(new.base_offset)
        self._unflushed = 0
        return new

    # ------------------------------------------------------------------ read
    def read(
        self, offset: int, max_bytes: int, max_offset: int | None = None
    ) -> FileRegion | bytes | None:
        """Up to ``max_bytes`` from the entry containing ``offset`` (lock-free); with
        ``max_offset`` (the last stable offset of a read_committed fetch) no batch at or
        beyond it."""
        if self._closed:
            raise ValueError(f"log {self.directory.name} is closed")
        start, end = self.log_start_offset, self.log_end_offset
        if offset == end:
            return b""
        if not start <= offset < end:
            raise self._out_of_range(offset, start, end)
        if max_bytes <= 0 or (max_offset is not None and offset >= max_offset):
            return b""
        segments, bases = self._view
        i = bisect_right(bases, offset) - 1
        if i < 0:
            raise self._out_of_range(offset, bases[0], end)
        for seg in segments[i:]:
            region = seg.read(offset, max_bytes)
            if region is not None:
                if max_offset is not None and max_offset < seg.next_offset:
                    stop = seg.find_position(max_offset, seg.size)
                    if stop is not None and stop < region.position + region.size:
                        region.size = max(stop - region.position, 0)
                return region
        return b""

    def _out_of_range(self, offset: int, start: int, end: int) -> OffsetOutOfRangeError:
        """The error for an offset outside the log, naming the valid range."""
        return OffsetOutOfRangeError(
            f"{self.topic}-{self.partition}: offset {offset} is outside the log's range "
            f"[{start}, {end}]"
        )

    # ------------------------------------------------------------------ offsets by time
    def offsets_before(self, timestamp: int, max_num_offsets: int) -> list[int]:
        """ListOffsets v0: segment base offsets (and the end offset) descending, by mtime."""
        segments = self._view[0]
        pairs = [(s.base_offset, s.last_modified_ms()) for s in segments]
        if segments[-1].size > 0:
            pairs.append((self.log_end_offset, now_ms()))
        if timestamp == LATEST:
            start = len(pairs) - 1
        elif timestamp == EARLIEST:
            start = 0
        else:
            start = max((i for i, p in enumerate(pairs) if p[1] <= timestamp), default=-1)
        return [pairs[i][0] for i in range(start, -1, -1)][: max(max_num_offsets, 0)]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets v1+: (first offset stamped >= ``timestamp``, its timestamp), or None."""
        if timestamp == LATEST:
            return self.log_end_offset, -1
        if timestamp == EARLIEST:
            return self.log_start_offset, -1
        start = self.log_start_offset
        for seg in self._view[0]:
            found = seg.find_timestamp(timestamp, start)
            if found is not None:
                return found
        return None

    # ------------------------------------------------------------------ flush
    def flush(self) -> None:
        """fsync everything appended so far."""
        with self._lock:
            if not self._closed:
                self._flush_locked(now_ms())

    def maybe_flush(self, now: int) -> bool:
        """Flush if ``flush_interval_ms`` passed since the last flush with data pending."""
        interval = self.config.flush_interval_ms
        if interval is None or not self._unflushed or now - self._last_flush_ms < interval:
            return False
        self.flush()
        return True

    def _flush_locked(self, now: int) -> None:
        """fsync the active segment and its index (older ones were flushed on roll); all that
        is written is now on disk: the recovery point moves to the log end."""
        self._view[0][-1].flush()
        self.recovery_point = self.log_end_offset
        self._unflushed = 0
        self._last_flush_ms = now

    # ------------------------------------------------------------------ retention
    def delete_old_segments(self, now_ms: int) -> int:
        """Delete whole segments past retention.ms or beyond retention.bytes; return how many."""
        with self._lock:
            if self._closed or not self.config.delete:
                return 0
            segments = self._view[0]
            count = max(self._expired_by_time(segments, now_ms), self._over_size(segments))
            if count == 0:
                return 0
            if count == len(segments):
                if segments[-1].size == 0:
                    count -= 1
                else:
                    self._roll()
            return self._delete_first(count)

    def _expired_by_time(self, segments: tuple[LogSegment, ...], now: int) -> int:
        """How many leading segments were last modified more than retention.ms ago."""
        limit = self.config.retention_ms
        if limit < 0:
            return 0
        count = 0
        for seg in segments:
            if now - seg.last_modified_ms() <= limit:
                break
            count += 1
        return count

    def _over_size(self, segments: tuple[LogSegment, ...]) -> int:
        """How many leading segments to drop so the log fits in retention.bytes."""
        limit = self.config.retention_bytes
        if limit < 0:
            return 0
        excess = sum(s.size for s in segments) - limit
        count = 0
        for seg in segments:
            if excess - seg.size < 0:
                break
            excess -= seg.size
            count += 1
        return count

    def _delete_first(self, count: int) -> int:
        """Remove the ``count`` oldest segments from the snapshot, then from disk."""
        segments = self._view[0]
        doomed, kept = segments[:count], segments[count:]
        if not doomed:
            return 0
        self._publish(kept)
        self.log_start_offset = max(self.log_start_offset, kept[0].base_offset)
        for seg in doomed:
            seg.delete()
        log.info(
            "%s: deleted %d segments, log start offset now %d",
            self.directory.name,
            len(doomed),
            self.log_start_offset,
        )
        return len(doomed)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: raise the log start offset to ``offset`` (kept across restarts) and
        delete the segments wholly below it; returns the new log start offset (low watermark).
        """
        with self._lock:
            self._check_open()
            if not 0 <= offset <= self.log_end_offset:
                raise self._out_of_range(offset, self.log_start_offset, self.log_end_offset)
            if offset > self.log_start_offset:
                self.log_start_offset = offset
                _write_small_file(self.directory / LOG_START_OFFSET, str(offset))
                segments = self._view[0]
                below = sum(1 for nxt in segments[1:] if nxt.base_offset <= offset)
                self._delete_first(below)
            return self.log_start_offset

    # ------------------------------------------------------------------ compaction
    def replace_segments(self, group: tuple[LogSegment, ...]) -> bool:
        """Swap in the cleaned files written for ``group`` (consecutive, non-active segments).

        The ``.cleaned`` files are committed to ``.swap`` under the lock only if ``group`` is
        still part of the log (retention or deletion may have removed it); False otherwise,
        and they are discarded.  Readers keep reading the replaced segments' open files.
        """
        base = group[0].base_offset
        with self._lock:
            segments = self._view[0]
            i = next((k for k, seg in enumerate(segments) if seg is group[0]), -1)
            if (
                self._closed
                or i < 0
                or segments[i : i + len(group)] != group
                or i + len(group) >= len(segments)
            ):
                swap.discard(self.directory, base)
                return False
            swap.commit(self.directory, base)
            swap.crash_point("swap")
            for seg in reversed(group[1:]):
                seg.delete()
            swap.crash_point("deleted")
            group[0].close()
            group[0].time_index.delete()  # rebuilt for the cleaned segment when it loads
            swap.finish(self.directory, base)
            new = LogSegment(self.directory, base, self.config.index_interval_bytes)
            next_base = segments[i + len(group)].base_offset
            problem = new.load(next_base, active=False)
            if problem is not None:
                log.error("%s: %s; recovering the cleaned segment", self.directory, problem)
                self._recover_segment(new, next_base, False)
            new.next_offset = max(new.next_offset, next_base)
            new.seal()
            self._publish(segments[:i] + (new,) + segments[i + len(group) :])
        return True

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Flush, mark the directory cleanly shut down and close every file."""
        with self._lock:
            if self._closed:
                return
            self._flush_locked(now_ms())
            self._closed = True
            for seg in self._view[0]:
                seg.close()
            self.producer_state.write_snapshot(self.log_end_offset)
            _write_small_file(self.directory / CLEAN_SHUTDOWN, str(self.log_end_offset))

    def delete(self) -> None:
        """Close the files and remove the whole partition directory."""
        with self._lock:
            self._closed = True
            for seg in self._view[0]:
                seg.close()
            shutil.rmtree(self.directory, ignore_errors=True)


__all__ = ["Log", "AppendInfo", "LATEST", "EARLIEST", "CLEAN_SHUTDOWN", "now_ms"]
