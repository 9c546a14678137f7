"""Producer state of one partition, as Kafka's ProducerStateManager keeps it.

Theory of operation.  Every v2 batch written by an idempotent or transactional producer carries
``(producerId, producerEpoch, baseSequence)``.  Per producer id the partition remembers its
epoch and the metadata (sequences and offsets) of its last 5 batches, which is how many requests
a producer may have in flight.  An incoming batch is then, in this order:

* a *duplicate* when a remembered batch of the same epoch has exactly its sequence range: it is
  not written again and the producer is answered with the original offsets (Kafka 1.0+ answers
  success, not DUPLICATE_SEQUENCE_NUMBER);
* *fenced* when its epoch is below the producer's: INVALID_PRODUCER_EPOCH;
* *out of order* when its epoch is the producer's and its first sequence does not follow the
  last one (``last + 1``, wrapping at 2**31-1 to 0), or when it opens a new epoch with a
  sequence other than 0: OUT_OF_ORDER_SEQUENCE_NUMBER.  A producer the partition does not know
  (new, or its state gone with the log's head) may start at any sequence, as Kafka 2.5+ does.

A transactional batch opens a transaction of its producer at its first offset if none is open;
a control batch (a commit or abort marker written by the transaction coordinator) closes it and
is reported as a :class:`CompletedTxn`, from which the log keeps its last stable offset and its
aborted-transaction index.

Durability: at every segment roll and on clean shutdown the state is written to
``<20-digit log end offset>.snapshot`` in Kafka's ProducerSnapshot format (version 1: int16
version, uint32 CRC-32C of what follows, then an int32-counted array of ``producerId int64,
epoch int16, lastSequence int32, lastOffset int64, offsetDelta int32, timestamp int64,
coordinatorEpoch int32, currentTxnFirstOffset int64``; only the last batch of each producer is
kept, as in Kafka).  Opening a log loads the newest snapshot not beyond the log end and replays
the batch headers after it; snapshots beyond the end (left by a truncated crash) are deleted.
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from crc32c import crc32c

from kclient.broker.log.entries import EntryWalk
from kclient.protocol.error_codes import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
)
from kclient.protocol.records import v2
from kclient.protocol.records.common import CONTROL_MASK, LOG_OVERHEAD, TRANSACTIONAL_MASK

if TYPE_CHECKING:
    from kclient.broker.log.segment import LogSegment

log = logging.getLogger(__name__)

__all__ = [
    "ProducerStateManager",
    "ProducerEntry",
    "BatchMetadata",
    "BatchHeader",
    "CompletedTxn",
    "batch_headers",
    "SNAPSHOT_SUFFIX",
    "MAX_BATCHES",
    "read_snapshot",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "replay",
    "parse_header",
    "control_type",
]

SNAPSHOT_SUFFIX = ".snapshot"
#: Batches remembered per producer (Kafka's NUM_BATCHES_TO_RETAIN; the client's in-flight cap).
MAX_BATCHES = 5
SNAPSHOT_VERSION = 1
#: Control record types (the key of a marker: version int16, type int16).
CONTROL_ABORT, CONTROL_COMMIT = 0, 1
_INT32_MAX = 0x7FFFFFFF
#: baseOffset .. recordsCount of a v2 batch header (the fields the state needs).
_HEADER = struct.Struct(">qiibIhiqqqhii")
_SNAP_HEAD = struct.Struct(">hI")
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")
_COUNT = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")


class BatchMetadata(NamedTuple):
    """Sequences and offsets of one remembered batch."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        """Sequence of the batch's first record (sequences wrap at 2**31-1)."""
        return (self.last_seq - self.offset_delta) & _INT32_MAX

    @property
    def first_offset(self) -> int:
        """Offset of the batch's first record."""
        return self.last_offset - self.offset_delta


@dataclass
class ProducerEntry:
    """What a partition knows of one producer id."""

    producer_id: int
    epoch: int = -1
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=MAX_BATCHES))
    coordinator_epoch: int = -1
    txn_first_offset: int = -1
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        """Sequence of the last record written (-1: none)."""
        return self.batches[-1].last_seq if self.batches else -1

    def duplicate_of(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The remembered batch with exactly this epoch and sequence range, if any."""
        if epoch != self.epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None


class BatchHeader(NamedTuple):
    """The producer fields of one v2 batch about to be (or already) in the log."""

    base_offset: int
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    epoch: int
    base_sequence: int
    transactional: bool
    control: bool

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record."""
        return self.base_offset + self.last_offset_delta

    @property
    def last_seq(self) -> int:
        """Sequence of the batch's last record."""
        return (self.base_sequence + self.last_offset_delta) & _INT32_MAX


class CompletedTxn(NamedTuple):
    """A transaction a control batch just ended on this partition."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


def parse_header(buf: bytes | bytearray | memoryview, pos: int) -> BatchHeader:
    """The producer fields of the v2 batch at ``buf[pos:]``."""
    (base, _, _, _, _, attrs, delta, _, max_ts, pid, epoch, seq, _) = _HEADER.unpack_from(buf, pos)
    return BatchHeader(
        base,
        delta,
        max_ts,
        pid,
        epoch,
        seq,
        bool(attrs & TRANSACTIONAL_MASK),
        bool(attrs & CONTROL_MASK),
    )


def batch_headers(data: bytes | bytearray, positions: Iterable[int]) -> list[BatchHeader]:
    """Headers of the batches at ``positions`` of a v2 buffer that carry a producer id."""
    out = []
    for pos in positions:
        header = parse_header(data, pos)
        if header.producer_id >= 0:
            out.append(header)
    return out


def control_type(batch_bytes: bytes) -> int:
    """The type of the (single) control record of a control batch: abort 0, commit 1."""
    batch = v2.read_batch(batch_bytes, 0, len(batch_bytes) - LOG_OVERHEAD, validate_crc=False)
    key = batch.records[0].key if batch.records else None
    if key is None or len(key) < _CONTROL_KEY.size:
        return -1
    return int(_CONTROL_KEY.unpack_from(key)[1])


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    """Whether ``next_seq`` follows ``last_seq`` (Kafka's inSequence)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateManager:
    """Producer entries, open transactions and snapshots of one partition directory."""

    def __init__(self, directory: Path, name: str) -> None:
        """Empty state for the partition in ``directory`` (``name`` for messages)."""
        self.directory = Path(directory)
        self.name = name
        self.producers: dict[int, ProducerEntry] = {}
        #: producer id -> first offset of its open transaction (kept beside the entries so the
        #: last stable offset, asked on every fetch, costs nothing without transactions)
        self.ongoing: dict[int, int] = {}
        #: snapshot offsets known to be on disk, ascending (None: not listed yet)
        self._snapshots: list[int] | None = None

    # ------------------------------------------------------------------ client appends
    def check(self, headers: Sequence[BatchHeader]) -> BatchMetadata | None:
        """Validate client batches against the state; the duplicate they repeat, if any.

        Raises INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER or INVALID_TXN_STATE as a
        Kafka broker answers them; changes nothing.
        """
        pending: dict[int, tuple[int, int, bool]] = {}
        for h in headers:
            if h.control:
                raise InvalidTxnStateError(f"{self.name}: clients may not write control batches")
            entry = self.producers.get(h.producer_id)
            if h.producer_id not in pending and entry is not None:
                dup = entry.duplicate_of(h.epoch, h.base_sequence, h.last_seq)
                if dup is not None:
                    return dup
            known = pending.get(h.producer_id)
            epoch, last_seq, in_txn = (
                known
                if known is not None
                else (
                    (entry.epoch, entry.last_seq, entry.txn_first_offset >= 0)
                    if entry is not None
                    else (-1, -1, False)
                )
            )
            self._check_one(h, epoch, last_seq, in_txn)
            pending[h.producer_id] = (h.epoch, h.last_seq, h.transactional)
        return None

    def _check_one(self, h: BatchHeader, epoch: int, last_seq: int, in_txn: bool) -> None:
        """Epoch, sequence and transaction checks of one batch against what precedes it."""
        if h.epoch < epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {h.producer_id} at offset {h.base_offset} in {self.name} "
                f"is {h.epoch}, which is smaller than the last seen epoch {epoch}"
            )
        if h.epoch != epoch:
            if h.base_sequence != 0 and epoch != -1:
                raise OutOfOrderSequenceNumberError(
                    f"Invalid sequence number for new epoch of producer {h.producer_id} at "
                    f"offset {h.base_offset} in partition {self.name}: {h.epoch} (request "
                    f"epoch), {h.base_sequence} (seq. number), {epoch} (current producer epoch)"
                )
        elif epoch != -1 and last_seq != -1 and not _in_sequence(last_seq, h.base_sequence):
            raise OutOfOrderSequenceNumberError(
                f"Out of order sequence number for producer {h.producer_id} at offset "
                f"{h.base_offset} in partition {self.name}: {h.base_sequence} (incoming seq. "
                f"number), {last_seq} (current end sequence number)"
            )
        if in_txn and not h.transactional and h.epoch == epoch:
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {h.producer_id} at offset "
                f"{h.base_offset} in partition {self.name}"
            )

    def update(
        self, headers: Sequence[BatchHeader], markers: dict[int, int] | None = None
    ) -> list[CompletedTxn]:
        """Record batches now in the log; ``markers`` maps a control batch's base offset to its
        type (abort 0, commit 1). Returns the transactions the control batches ended."""
        completed = []
        for h in headers:
            entry = self.producers.get(h.producer_id)
            if entry is None:
                entry = self.producers[h.producer_id] = ProducerEntry(h.producer_id)
            if h.epoch != entry.epoch:
                entry.epoch = h.epoch
                entry.batches.clear()
            entry.last_timestamp = h.max_timestamp
            if h.control:
                kind = (markers or {}).get(h.base_offset, -1)
                if entry.txn_first_offset >= 0:
                    completed.append(
                        CompletedTxn(
                            h.producer_id,
                            entry.txn_first_offset,
                            h.base_offset,
                            kind == CONTROL_ABORT,
                        )
                    )
                entry.txn_first_offset = -1
                self.ongoing.pop(h.producer_id, None)
                continue
            if h.transactional and entry.txn_first_offset < 0:
                entry.txn_first_offset = self.ongoing[h.producer_id] = h.base_offset
            entry.batches.append(
                BatchMetadata(h.last_seq, h.last_offset, h.last_offset_delta, h.max_timestamp)
            )
        return completed

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction (None: none open)."""
        return min(self.ongoing.values()) if self.ongoing else None

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of every open transaction."""
        return dict(self.ongoing)

    # ------------------------------------------------------------------ snapshots
    def snapshot_path(self, offset: int) -> Path:
        """``<20-digit offset>.snapshot`` in the partition directory."""
        return self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def list_snapshots(self) -> list[int]:
        """Offsets of the snapshot files present, ascending."""
        found = []
        for path in self.directory.iterdir():
            stem, dot, suffix = path.name.partition(".")
            if dot and "." + suffix == SNAPSHOT_SUFFIX and len(stem) == 20 and stem.isdigit():
                found.append(int(stem))
        return sorted(found)

    def write_snapshot(self, offset: int, keep: int = 2) -> None:
        """Write the state as of log end ``offset`` (atomically), keeping the ``keep`` newest."""
        entries = []
        for e in self.producers.values():
            last = e.batches[-1] if e.batches else None
            entries.append(
                _SNAP_ENTRY.pack(
                    e.producer_id,
                    e.epoch,
                    last.last_seq if last else -1,
                    last.last_offset if last else -1,
                    last.offset_delta if last else 0,
                    e.last_timestamp,
                    e.coordinator_epoch,
                    e.txn_first_offset,
                )
            )
        body = _COUNT.pack(len(entries)) + b"".join(entries)
        data = _SNAP_HEAD.pack(SNAPSHOT_VERSION, crc32c(body)) + body
        path = self.snapshot_path(offset)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        known = self.list_snapshots() if self._snapshots is None else self._snapshots
        self._snapshots = sorted(set(known) | {offset})
        for old in self._snapshots[:-keep]:
            self.snapshot_path(old).unlink(missing_ok=True)
        self._snapshots = self._snapshots[-keep:]

    def load_snapshot(self, log_end: int) -> int | None:
        """Load the newest valid snapshot at or below ``log_end``; its offset, or None.

        Snapshots beyond ``log_end`` (written before a crash truncated the log) and corrupt
        ones are deleted.
        """
        self.producers.clear()
        self.ongoing.clear()
        for offset in reversed(self.list_snapshots()):
            path = self.snapshot_path(offset)
            if offset > log_end:
                path.unlink(missing_ok=True)
                continue
            try:
                entries = read_snapshot(path)
            except (OSError, ValueError) as exc:
                log.warning(
                    "%s: deleting unreadable producer snapshot %s: %s", self.name, path.name, exc
                )
                path.unlink(missing_ok=True)
                continue
            self.producers = {e.producer_id: e for e in entries}
            self.ongoing = {
                e.producer_id: e.txn_first_offset for e in entries if e.txn_first_offset >= 0
            }
            return offset
        return None

    def truncate_below(self, log_start: int) -> None:
        """Forget producers whose last write is below the log start (retention removed it)."""
        for pid in [
            pid
            for pid, e in self.producers.items()
            if e.batches and e.batches[-1].last_offset < log_start and e.txn_first_offset < 0
        ]:
            del self.producers[pid]


def read_snapshot(path: Path) -> list[ProducerEntry]:
    """The producer entries of a ``.snapshot`` file (ValueError when it is corrupt)."""
    data = path.read_bytes()
    if len(data) < _SNAP_HEAD.size + _COUNT.size:
        raise ValueError(f"snapshot of {len(data)} bytes is too short")
    version, crc = _SNAP_HEAD.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise ValueError(f"unknown snapshot version {version}")
    body = data[_SNAP_HEAD.size :]
    if crc32c(body) != crc:
        raise ValueError("snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body)
    if count < 0 or len(body) != _COUNT.size + count * _SNAP_ENTRY.size:
        raise ValueError(f"snapshot size does not fit {count} entries")
    entries = []
    for i in range(count):
        (pid, epoch, last_seq, last_offset, delta, ts, coord_epoch, txn_first) = (
            _SNAP_ENTRY.unpack_from(body, _COUNT.size + i * _SNAP_ENTRY.size)
        )
        entry = ProducerEntry(
            pid, epoch, coordinator_epoch=coord_epoch, txn_first_offset=txn_first, last_timestamp=ts
        )
        if last_offset >= 0:
            entry.batches.append(BatchMetadata(last_seq, last_offset, delta, ts))
        entries.append(entry)
    return entries


def replay(
    state: ProducerStateManager,
    segments: Sequence[LogSegment],
    from_offset: int,
    on_complete: Callable[[CompletedTxn], None] | None = None,
) -> list[CompletedTxn]:
    """Rebuild ``state`` from the batch headers of ``segments`` at and after ``from_offset``;
    the transactions ended on the way (the aborted ones rebuild the ``.txnindex``), each also
    handed to ``on_complete`` as it ends (the state then is that of the log at its marker)."""
    completed: list[CompletedTxn] = []
    for i, seg in enumerate(segments):
        if i + 1 < len(segments) and segments[i + 1].base_offset <= from_offset:
            continue
        fd = os.open(seg.log_path, os.O_RDONLY)
        try:
            for info in EntryWalk(fd, 0, seg.size):
                if info.magic != 2 or info.last_offset < from_offset:
                    continue
                header = parse_header(os.pread(fd, _HEADER.size, info.position), 0)
                if header.producer_id < 0:
                    continue
                markers = None
                if header.control:
                    kind = control_type(os.pread(fd, info.size, info.position))
                    markers = {header.base_offset: kind}
                done = state.update([header], markers)
                completed += done
                if on_complete is not None:
                    for txn in done:
                        on_complete(txn)
        finally:
            os.close(fd)
    return completed
