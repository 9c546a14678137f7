"""Committed consumer-group offsets, stored in a compacted log as Kafka's ``__consumer_offsets``.

Every commit appends one record batch to ``<data dir>/__consumer_offsets-0`` (a
:class:`~kclient.broker.state_log.StateLog`), one record per partition keyed by Kafka's
offset-commit key (group, topic, partition) with Kafka's value schema
(:mod:`kclient.broker.offsets_schema`); deleting offsets appends tombstones.  Start-up replays
the log (whose own recovery cuts a torn or corrupt tail) keeping the last value per key.  The
log has ``cleanup.policy=compact`` and ``segment.bytes=offsets.topic.segment.bytes``; a log
cleaner thread (``log.cleaner.*`` settings) compacts it, so it stays bounded by about two
segments plus the live offsets.  Commits are fsynced unless ``offsets.commit.required.acks``
is 1 or 0.  A ``consumer-offsets.log`` written by earlier versions is imported once.
"""

from __future__ import annotations

import json
import logging
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kclient.broker.log import Log
from kclient.broker.log.cleaner import LogCleaner
from kclient.broker.offsets_schema import decode_key, decode_value, encode_key, encode_value
from kclient.broker.state_log import StateLog, read_log

__all__ = ["OffsetEntry", "OffsetManager", "OFFSETS_LOG", "LEGACY_OFFSETS_FILE", "read_log"]

log = logging.getLogger(__name__)

OFFSETS_LOG = "__consumer_offsets-0"
LEGACY_OFFSETS_FILE = "consumer-offsets.log"
_FRAME = struct.Struct(">II")

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class OffsetEntry:
    """One committed position: offset, leader epoch, metadata, commit and explicit expiry time."""

    offset: int
    metadata: str | None = ""
    leader_epoch: int = -1
    commit_ms: int = 0
    expire_ms: int = -1

    def to_value(self) -> bytes:
        """The record value stored in the offsets log."""
        return encode_value(
            self.offset, self.metadata, self.leader_epoch, self.commit_ms, self.expire_ms
        )

    @classmethod
    def from_value(cls, value: bytes) -> OffsetEntry:
        """Parse a record value back into an entry."""
        offset, metadata, epoch, commit_ms, expire_ms = decode_value(value)
        return cls(offset, metadata, epoch, commit_ms, expire_ms)


class OffsetManager:
    """Committed offsets per (group, topic, partition), thread safe and durable across restarts."""

    def __init__(self, data_dir: Path | str, config: Mapping[str, str] | None = None):
        config = dict(config or {})
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / OFFSETS_LOG
        acks = str(config.get("offsets.commit.required.acks", "-1")).strip()
        self.fsync = acks in ("-1", "all")  # acks=1/0: written, not forced to disk
        self.retention_ms = int(config.get("offsets.retention.minutes", 10080)) * 60_000
        self.store = StateLog(
            self.path,
            config,
            fsync=self.fsync,
            name="kclient-offsets-cleaner",
            segment_bytes=int(config.get("offsets.topic.segment.bytes", 104857600)),
            codec=int(config.get("offsets.topic.compression.codec", 0)),
        )
        self._lock = threading.Lock()
        self._offsets: dict[str, dict[TopicPartition, OffsetEntry]] = {}
        #: TxnOffsetCommit offsets per producer id, visible once its transaction commits
        self._pending: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self._open = False
        #: where the records that are not offset commits (the consumer groups' records, Kafka's
        #: key types 3-8) go when the log is replayed
        self.on_group_record: Callable[[bytes, bytes | None], None] | None = None

    @property
    def log(self) -> Log | None:
        """The offsets log (None unless started)."""
        return self.store.log

    @property
    def cleaner(self) -> LogCleaner | None:
        """The offsets log's cleaner (None when log.cleaner.enable is false)."""
        return self.store.cleaner

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Open and replay the log, import a legacy file, start the cleaner."""
        with self._lock:
            if self._open:
                return
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.store.open(self._apply, self._replay_txn)
            self._open = True
            self._import_legacy()

    def close(self) -> None:
        """Stop the cleaner, flush and close the log."""
        with self._lock:
            if self._open:
                self.store.close()
                self._open = False

    def __enter__(self) -> OffsetManager:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads -------------------------------------------------------------------------------

    def fetch(
        self, group: str, partitions: Iterable[TopicPartition] | None = None
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
        """Bytes the offsets log takes on disk (all segments)."""
        return self.store.size

    # -- writes ------------------------------------------------------------------------------

    def commit(self, group: str, offsets: Mapping[TopicPartition, OffsetEntry]) -> None:
        """Durably store offsets for a group (one atomic batch), then make them visible."""
        if offsets:
            self._append(group, [(tp, entry.to_value()) for tp, entry in offsets.items()])

    def append_records(self, keys: list[bytes], values: list[bytes | None]) -> None:
        """Durably append a consumer group's records (one atomic batch)."""
        with self._lock:
            if not self._open:
                raise RuntimeError("OffsetManager is not started (or already closed)")
            self.store.append(keys, values)

    def delete(self, group: str, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Remove a group's offsets (all of them when partitions is None) with tombstones."""
        with self._lock:
            known = self._offsets.get(group, {})
            doomed: list[TopicPartition] = (
                list(known) if partitions is None else [(tp[0], tp[1]) for tp in partitions]
            )
        if doomed:
            self._append(group, [(tp, None) for tp in doomed])

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

    def txn_commit(
        self,
        group: str,
        producer_id: int,
        epoch: int,
        offsets: Mapping[TopicPartition, OffsetEntry],
    ) -> None:
        """TxnOffsetCommit: store offsets as part of ``producer_id``'s transaction (durable,
        visible only once :meth:`end_txn` commits it; discarded if it aborts)."""
        if not offsets:
            return
        keys = [encode_key(group, tp) for tp in offsets]
        values: list[bytes | None] = [entry.to_value() for entry in offsets.values()]
        with self._lock:
            if not self._open:
                raise RuntimeError("OffsetManager is not started (or already closed)")
            self.store.append(keys, values, producer_id=producer_id, epoch=epoch)
            self._pending.setdefault(producer_id, []).extend(zip(keys, values))

    def end_txn(self, producer_id: int, epoch: int, commit: bool) -> bool:
        """The transaction marker for ``producer_id``: its pending offsets become visible
        (commit) or are dropped (abort); False when it had none here."""
        with self._lock:
            if not self._open or producer_id not in self._pending:
                return False
            self.store.end_txn(producer_id, epoch, commit)
            self._replay_txn(producer_id, None, commit)
            return True

    def pending(self, producer_id: int) -> dict[str, dict[TopicPartition, OffsetEntry]]:
        """The offsets ``producer_id``'s open transaction would commit, by group."""
        out: dict[str, dict[TopicPartition, OffsetEntry]] = {}
        with self._lock:
            for key, value in self._pending.get(producer_id, ()):
                parsed = decode_key(key)
                if parsed is not None and value is not None:
                    out.setdefault(parsed[0], {})[parsed[1]] = OffsetEntry.from_value(value)
        return out

    def _replay_txn(self, producer_id: int, key: bytes | None, value: bytes | bool | None) -> None:
        """A transactional record (held pending) or marker (``key`` None: apply or drop)."""
        if key is not None:
            self._pending.setdefault(producer_id, []).append(
                (key, value if isinstance(value, bytes) else None)
            )
            return
        held = self._pending.pop(producer_id, [])
        if value is True:
            for k, v in held:
                self._apply(k, v)

    def compact(self) -> None:
        """Roll the log and clean it now, whatever its dirty ratio (tests, tools)."""
        self.store.compact()

    # -- internals ---------------------------------------------------------------------------

    def _append(self, group: str, items: list[tuple[TopicPartition, bytes | None]]) -> None:
        """Append one batch (fsynced when configured) and apply it to the in-memory view."""
        keys = [encode_key(group, tp) for tp, _ in items]
        values = [value for _, value in items]
        with self._lock:
            if not self._open:
                raise RuntimeError("OffsetManager is not started (or already closed)")
            self.store.append(keys, values)
            for key, value in zip(keys, values):
                self._apply(key, value)

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        """Fold one record into the in-memory map (a tombstone removes the key)."""
        parsed = decode_key(key) if key else None
        if parsed is None:
            if key and self.on_group_record is not None:
                self.on_group_record(key, value)
            return
        group, tp = parsed
        committed = self._offsets.setdefault(group, {})
        if value is None:
            committed.pop(tp, None)
        else:
            committed[tp] = OffsetEntry.from_value(value)
        if not committed:
            del self._offsets[group]

    def _import_legacy(self) -> None:
        """Move the offsets of an older version's JSON file into the log, then remove it."""
        legacy = self.data_dir / LEGACY_OFFSETS_FILE
        if not legacy.exists():
            return
        old: dict[str, dict[TopicPartition, OffsetEntry]] = {}
        for payload in decode_legacy(legacy.read_bytes()):
            committed = old.setdefault(payload["g"], {})
            for topic, partition, offset, epoch, metadata, commit_ms, expire_ms in payload.get(
                "c", ()
            ):
                committed[(topic, partition)] = OffsetEntry(
                    offset, metadata, epoch, commit_ms, expire_ms
                )
            if "d" in payload:
                for tp in list(committed) if payload["d"] is None else payload["d"]:
                    committed.pop(tuple(tp), None)
        for group, committed in old.items():
            if committed:
                keys = [encode_key(group, tp) for tp in committed]
                values = [e.to_value() for e in committed.values()]
                self.store.append(keys, values)
                for key, value in zip(keys, values):
                    self._apply(key, value)
        self.store.flush()
        legacy.unlink()
        log.info("imported the offsets of %d groups from %s", len(old), legacy)


def decode_legacy(buf: bytes) -> list[dict[str, Any]]:
    """The whole valid records of an older version's file: ``[length][crc32][JSON]``."""
    out, pos = [], 0
    while pos + _FRAME.size <= len(buf):
        size, crc = _FRAME.unpack_from(buf, pos)
        end = pos + _FRAME.size + size
        data = buf[pos + _FRAME.size : end]
        if end > len(buf) or zlib.crc32(data) != crc:
            break
        try:
            out.append(json.loads(data))
        except ValueError:
            break
        pos = end
    return out
