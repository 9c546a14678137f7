"""Committed consumer-group offsets, stored durably in an append-only, CRC-checked log.

The file plays the role of Kafka's compacted ``__consumer_offsets`` topic: every commit appends
one length-prefixed record ``[length u32][crc32 u32][payload]`` whose payload is JSON (a group,
and its committed or deleted partitions). Start-up replays the file, keeps the last value per
(group, topic, partition) and cuts off a torn or corrupt tail. Once the file is larger than
``offsets.topic.segment.bytes`` and than 1 / (1 - ``log.cleaner.min.cleanable.ratio``) times its
live data, it is rewritten with the latest values only. Commits are fsynced unless
``offsets.commit.required.acks`` is 1 or 0.
"""
from __future__ import annotations

import json
import logging
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OffsetEntry", "OffsetManager", "OFFSETS_FILE"]

log = logging.getLogger(__name__)

OFFSETS_FILE = "consumer-offsets.log"
_FRAME = struct.Struct(">II")
_MAX_RECORD = 64 * 1024 * 1024
_ENTRY_OVERHEAD = 48

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class OffsetEntry:
    """One committed position: offset, leader epoch, metadata, commit and explicit expiry time."""

    offset: int
    metadata: str | None = ""
    leader_epoch: int = -1
    commit_ms: int = 0
    expire_ms: int = -1

    def to_wire(self, tp: TopicPartition) -> list:
        """The compact list form stored in the log."""
        return [tp[0], tp[1], self.offset, self.leader_epoch, self.metadata,
                self.commit_ms, self.expire_ms]

    @classmethod
    def from_wire(cls, item: list) -> tuple[TopicPartition, OffsetEntry]:
        """Parse the list form back into a key and an entry."""
        topic, partition, offset, epoch, metadata, commit_ms, expire_ms = item
        return (topic, partition), cls(offset, metadata, epoch, commit_ms, expire_ms)


def _entry_size(tp: TopicPartition, entry: OffsetEntry) -> int:
    """Approximate bytes one live entry takes in a compacted file."""
    return _ENTRY_OVERHEAD + len(tp[0]) + len(entry.metadata or "")


def _truthy(value: str | None, default: bool) -> bool:
    """Parse a server.properties style boolean."""
    if value is None:
        return default
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def encode_record(payload: dict) -> bytes:
    """Frame one payload: length, CRC-32 of the payload, the JSON bytes."""
    data = json.dumps(payload, separators=(",", ":")).encode()
    return _FRAME.pack(len(data), zlib.crc32(data)) + data


def decode_records(buf: bytes) -> tuple[list[dict], int]:
    """Decode whole valid records from the start; returns them and the valid length."""
    out, pos = [], 0
    while pos + _FRAME.size <= len(buf):
        size, crc = _FRAME.unpack_from(buf, pos)
        end = pos + _FRAME.size + size
        if size > _MAX_RECORD or end > len(buf):
            break
        data = buf[pos + _FRAME.size:end]
        if zlib.crc32(data) != crc:
            break
        try:
            out.append(json.loads(data))
        except ValueError:
            break
        pos = end
    return out, pos


class OffsetManager:
    """Committed offsets per (group, topic, partition), thread safe and durable across restarts."""

    def __init__(self, data_dir: Path | str, config: Mapping[str, str] | None = None):
        config = dict(config or {})
        self.path = Path(data_dir) / OFFSETS_FILE
        acks = str(config.get("offsets.commit.required.acks", "-1")).strip()
        self.fsync = acks in ("-1", "all")  # acks=1/0: written, not forced to disk
        ratio = float(config.get("log.cleaner.min.cleanable.ratio", 0.5))
        self.compaction_factor = 1 / max(1e-3, 1 - ratio)
        self.compaction_min_bytes = int(config.get("offsets.topic.segment.bytes", 104857600))
        self.compaction_enabled = _truthy(config.get("log.cleaner.enable"), True)
        self.retention_ms = int(config.get("offsets.retention.minutes", 10080)) * 60_000
        self._lock = threading.Lock()
        self._offsets: dict[str, dict[TopicPartition, OffsetEntry]] = {}
        self._live_bytes = 0
        self._file = None
        self._file_bytes = 0

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Replay the log (cutting off a torn tail) and open it for appends."""
        with self._lock:
            if self._file is not None:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            buf = self.path.read_bytes() if self.path.exists() else b""
            records, valid = decode_records(buf)
            for payload in records:
                self._apply(payload)
            if valid < len(buf):
                log.warning("offsets log %s: dropping %d bytes of torn or corrupt tail at %d",
                            self.path, len(buf) - valid, valid)
            self._file = open(self.path, "ab")
            self._file.truncate(valid)
            self._file_bytes = valid

    def close(self) -> None:
        """Flush and close the log file."""
        with self._lock:
            if self._file is not None:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
                self._file = None

    def __enter__(self) -> OffsetManager:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reads -------------------------------------------------------------------------------

    def fetch(self, group: str, partitions: Iterable[TopicPartition] | None = None
              ) -> dict[TopicPartition, OffsetEntry]:
        """Committed entries of a group: the given partitions that have one, or all of them."""
        with self._lock:
            committed = self._offsets.get(group, {})
            if partitions is None:
                return dict(committed)
            return {tp: committed[tp] for tp in partitions if tp in committed}

    def groups(self) -> list[str]:
        """Groups that have at least one committed offset."""
        with self._lock:
            return [g for g, offsets in self._offsets.items() if offsets]

    @property
    def file_bytes(self) -> int:
        """Current size of the log file."""
        return self._file_bytes

    @property
    def live_bytes(self) -> int:
        """Estimated size of the live (latest) entries, used to decide compaction."""
        return self._live_bytes

    # -- writes ------------------------------------------------------------------------------

    def commit(self, group: str, offsets: Mapping[TopicPartition, OffsetEntry]) -> None:
        """Durably store offsets for a group (one atomic record), then make them visible."""
        if not offsets:
            return
        payload = {"g": group, "c": [entry.to_wire(tp) for tp, entry in offsets.items()]}
        self._append(payload)

    def delete(self, group: str, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Remove a group's offsets (all of them when partitions is None) with a tombstone."""
        parts = None if partitions is None else [list(tp) for tp in partitions]
        self._append({"g": group, "d": parts})

    def expire(self, is_active: Callable[[str], bool], now_ms: int | None = None) -> int:
        """Tombstone offsets past retention for groups without members; returns how many."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        expired: dict[str, list[TopicPartition]] = {}
        with self._lock:
            for group, committed in self._offsets.items():
                if is_active(group):
                    continue
                old = [tp for tp, e in committed.items() if self._expired(e, now_ms)]
                if old:
                    expired[group] = old
        for group, tps in expired.items():
            self.delete(group, tps)
        return sum(len(v) for v in expired.values())

    def _expired(self, entry: OffsetEntry, now_ms: int) -> bool:
        """Whether an entry's explicit or default retention has run out."""
        if entry.expire_ms >= 0:
            return now_ms >= entry.expire_ms
        return self.retention_ms >= 0 and now_ms >= entry.commit_ms + self.retention_ms

    def compact(self) -> None:
        """Rewrite the log with only the live entries (atomically, by rename)."""
        with self._lock:
            self._compact_locked()

    # -- internals ---------------------------------------------------------------------------

    def _append(self, payload: dict) -> None:
        """Write one record (fsync when configured) and apply it to the in-memory view."""
        record = encode_record(payload)
        with self._lock:
            if self._file is None:
                raise RuntimeError("OffsetManager is not started (or already closed)")
            self._file.write(record)
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())
            self._file_bytes += len(record)
            self._apply(payload)
            if self._needs_compaction():
                self._compact_locked()

    def _apply(self, payload: dict) -> None:
        """Fold one record into the in-memory map."""
        group = payload["g"]
        committed = self._offsets.setdefault(group, {})
        for item in payload.get("c", ()):
            tp, entry = OffsetEntry.from_wire(item)
            self._forget(committed.get(tp), tp)
            committed[tp] = entry
            self._live_bytes += _entry_size(tp, entry)
        if "d" in payload:
            gone = list(committed) if payload["d"] is None else payload["d"]
            for topic, partition in gone:
                self._forget(committed.pop((topic, partition), None), (topic, partition))
        if not committed:
            del self._offsets[group]

    def _forget(self, entry: OffsetEntry | None, tp: TopicPartition) -> None:
        """Take a replaced or deleted entry out of the live-size estimate."""
        if entry is not None:
            self._live_bytes -= _entry_size(tp, entry)

    def _needs_compaction(self) -> bool:
        """True when the file is much larger than its live data (and past a segment's size)."""
        if not self.compaction_enabled:
            return False
        limit = max(self._live_bytes * self.compaction_factor, self.compaction_min_bytes)
        return self._file_bytes > limit

    def _compact_locked(self) -> None:
        """Write live entries to a temp file, fsync, rename over the log, reopen it."""
        tmp = self.path.with_suffix(".compacting")
        with open(tmp, "wb") as out:
            for group, committed in self._offsets.items():
                wire = [entry.to_wire(tp) for tp, entry in committed.items()]
                out.write(encode_record({"g": group, "c": wire}))
            out.flush()
            os.fsync(out.fileno())
        if self._file is not None:
            self._file.close()
        os.replace(tmp, self.path)
        self._fsync_dir()
        self._file = open(self.path, "ab")
        self._file_bytes = self.path.stat().st_size
        log.debug("compacted offsets log %s to %d bytes", self.path, self._file_bytes)

    def _fsync_dir(self) -> None:
        """Make the rename durable."""
        try:
            fd = os.open(self.path.parent, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
