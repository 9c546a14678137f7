"""The transaction coordinator's durable state: Kafka's ``__transaction_state`` topic.

Each transactional id belongs to partition ``abs(javaHashCode(id)) % partitions``
(``transaction.state.log.num.partitions``, Kafka's partitionFor); each partition is a
compacted :class:`~kclient.broker.state_log.StateLog` ``__transaction_state-N`` under the
coordinator's directory, created on first use, and one log cleaner thread looks after all of
them.  Every state change appends the id's record (Kafka's schemas, :mod:`.txn_schema`) and is
fsynced before it is applied in memory; start-up replays every partition present.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from .log import Log
from .log.cleaner import LogCleaner
from .state_log import StateLog
from .txn_schema import TxnMetadata, decode_key, decode_value, encode_key, encode_value

__all__ = ["TransactionLog", "partition_for", "java_hash", "TOPIC"]

TOPIC = "__transaction_state"


def java_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, int32 arithmetic)."""
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def partition_for(transactional_id: str, partitions: int) -> int:
    """The ``__transaction_state`` partition of an id, as Kafka computes it."""
    return (java_hash(transactional_id) & 0x7FFFFFFF) % partitions


class TransactionLog:
    """Transaction metadata per transactional id, kept in partitioned compacted logs."""

    def __init__(self, directory: Path, config: Mapping[str, str]) -> None:
        """``config``: broker settings (``transaction.state.log.*``, ``log.cleaner.*``)."""
        self.directory = Path(directory)
        self.config = {**config, "log.cleaner.enable": "false"}  # one cleaner for all
        self.partitions = int(config.get("transaction.state.log.num.partitions", 50))
        self.segment_bytes = int(config.get("transaction.state.log.segment.bytes", 104857600))
        #: TransactionLogValue version written: 1 once transaction.version is 1 or more (Kafka)
        self.value_version = 0
        self.stores: dict[int, StateLog] = {}
        self.txns: dict[str, TxnMetadata] = {}
        self._lock = threading.Lock()
        self.cleaner: LogCleaner | None = None
        if str(config.get("log.cleaner.enable", "true")).strip().lower() == "true":
            self.cleaner = LogCleaner(
                self._logs, self.directory, config, name="kclient-txn-state-cleaner"
            )

    def _logs(self) -> list[Log]:
        """Every open partition log (what the cleaner looks after)."""
        with self._lock:
            return [s.log for s in self.stores.values() if s.log is not None]

    def open(self) -> None:
        """Replay every partition present on disk, start the cleaner."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in sorted(self.directory.glob(f"{TOPIC}-*")):
            suffix = path.name[len(TOPIC) + 1 :]
            if path.is_dir() and suffix.isdigit():
                self._store(int(suffix))
        if self.cleaner is not None:
            self.cleaner.start()

    def _store(self, partition: int) -> StateLog:
        """The partition's state log, opened (and replayed) on first use."""
        store = self.stores.get(partition)
        if store is None:
            store = StateLog(
                self.directory / f"{TOPIC}-{partition}",
                self.config,
                segment_bytes=self.segment_bytes,
                name="kclient-txn-state",
            )
            store.open(self._apply)
            with self._lock:
                self.stores[partition] = store
        return store

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        """Fold one replayed record into the map (a tombstone removes the id)."""
        tid = decode_key(key) if key else None
        if tid is None:
            return
        if value is None:
            self.txns.pop(tid, None)
        else:
            self.txns[tid] = decode_value(tid, value)

    def partition_of(self, transactional_id: str) -> int:
        """The id's ``__transaction_state`` partition."""
        return partition_for(transactional_id, self.partitions)

    def write(self, meta: TxnMetadata) -> None:
        """Durably store an id's new state, then make it the current one."""
        store = self._store(self.partition_of(meta.transactional_id))
        store.append([encode_key(meta.transactional_id)], [encode_value(meta, self.value_version)])
        self.txns[meta.transactional_id] = meta

    def get(self, transactional_id: str) -> TxnMetadata | None:
        """The id's current metadata (None: unknown)."""
        return self.txns.get(transactional_id)

    def close(self) -> None:
        """Stop the cleaner and close every partition log."""
        if self.cleaner is not None:
            self.cleaner.close()
        for store in self.stores.values():
            store.close()
        self.stores.clear()
