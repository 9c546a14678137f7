"""Durable share-group state: Kafka's ``__share_group_state`` for the mini-broker.

One compacted :class:`~kclient.broker.state_log.StateLog` (``<data dir>/__share_group_state-0``)
holds three kinds of keyed records, the last value per key winning at start-up: a share
partition's snapshot (SPSO, state epoch, the in-flight window as ``(first, last, state,
delivery count)`` runs, keyed by group, topic and partition, with the topic's id so a topic
deleted and created again starts afresh), a group's record (its epoch: the group exists even
without members) and a group's dynamic configuration (``share.auto.offset.reset`` ...).  A
null value deletes.  Every change is one appended batch, fsynced before the request that made
it is answered, so a crash (kill -9) loses nothing answered.
"""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..state_log import StateLog

__all__ = ["PartitionSnapshot", "ShareStateStore", "STATE_LOG"]

STATE_LOG = "__share_group_state-0"
_SNAPSHOT, _GROUP, _CONFIG = 0, 1, 2
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
_HEAD = struct.Struct(">16siqi")  # topic id, state epoch, start offset, run count
_RUN = struct.Struct(">qqbh")  # first, last, state, delivery count

SharePartitionKey = tuple[str, str, int]  # group, topic, partition


@dataclass(frozen=True)
class PartitionSnapshot:
    """A share partition as stored: topic id, state epoch, SPSO and the in-flight runs."""

    topic_id: bytes
    state_epoch: int
    start: int
    batches: tuple[tuple[int, int, int, int], ...] = ()

    def encode(self) -> bytes:
        """The record value."""
        head = _HEAD.pack(self.topic_id, self.state_epoch, self.start, len(self.batches))
        return head + b"".join(_RUN.pack(*run) for run in self.batches)

    @classmethod
    def decode(cls, value: bytes) -> PartitionSnapshot:
        """Parse a record value."""
        topic_id, epoch, start, n = _HEAD.unpack_from(value, 0)
        runs = tuple(_RUN.unpack_from(value, _HEAD.size + i * _RUN.size) for i in range(n))
        return cls(topic_id, epoch, start, runs)


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def _key(kind: int, group: str, topic: str = "", partition: int = -1) -> bytes:
    """A record key: kind, group, topic, partition."""
    return _I16.pack(kind) + _string(group) + _string(topic) + _I32.pack(partition)


def _parse_key(key: bytes) -> tuple[int, str, str, int]:
    """(kind, group, topic, partition) of a key."""
    kind = _I16.unpack_from(key, 0)[0]
    pos, parts = 2, []
    for _ in range(2):
        size = _I16.unpack_from(key, pos)[0]
        parts.append(key[pos + 2 : pos + 2 + size].decode("utf-8"))
        pos += 2 + size
    return kind, parts[0], parts[1], _I32.unpack_from(key, pos)[0]


class ShareStateStore:
    """Share partitions' snapshots, group epochs and group configs, durable and replayed."""

    def __init__(self, data_dir: Path | str, config: Mapping[str, str] | None = None) -> None:
        config = dict(config or {})
        self.store = StateLog(
            Path(data_dir) / STATE_LOG,
            config,
            fsync=True,
            name="kclient-share-state-cleaner",
            segment_bytes=int(config.get("share.coordinator.state.topic.segment.bytes", 104857600)),
        )
        self.partitions: dict[SharePartitionKey, PartitionSnapshot] = {}
        self.groups: dict[str, int] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        self._open = False

    def start(self) -> None:
        """Open and replay the log."""
        with self._lock:
            if not self._open:
                Path(self.store.directory).parent.mkdir(parents=True, exist_ok=True)
                self.store.open(self._apply)
                self._open = True

    def close(self) -> None:
        """Stop the cleaner and close the log."""
        with self._lock:
            if self._open:
                self.store.close()
                self._open = False

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        """Fold one record into the maps."""
        if not key:
            return
        kind, group, topic, partition = _parse_key(key)
        if kind == _SNAPSHOT:
            if value is None:
                self.partitions.pop((group, topic, partition), None)
            else:
                self.partitions[(group, topic, partition)] = PartitionSnapshot.decode(value)
        elif kind == _GROUP:
            if value is None:
                self.groups.pop(group, None)
            else:
                self.groups[group] = _I32.unpack_from(value, 0)[0]
        elif kind == _CONFIG:
            if value is None:
                self.configs.pop(group, None)
            else:
                self.configs[group] = json.loads(value)

    def write(
        self,
        snapshots: Mapping[SharePartitionKey, PartitionSnapshot | None] | None = None,
        groups: Mapping[str, int | None] | None = None,
        configs: Mapping[str, Mapping[str, str] | None] | None = None,
    ) -> None:
        """Store changes as one atomic batch (None deletes), then make them visible."""
        keys: list[bytes] = []
        values: list[bytes | None] = []
        for (group, topic, partition), snap in (snapshots or {}).items():
            keys.append(_key(_SNAPSHOT, group, topic, partition))
            values.append(None if snap is None else snap.encode())
        for group, epoch in (groups or {}).items():
            keys.append(_key(_GROUP, group))
            values.append(None if epoch is None else _I32.pack(epoch))
        for group, conf in (configs or {}).items():
            keys.append(_key(_CONFIG, group))
            values.append(None if conf is None else json.dumps(dict(conf)).encode())
        if not keys:
            return
        with self._lock:
            if not self._open:
                raise RuntimeError("the share state store is not open")
            self.store.append(keys, values)
            for key, value in zip(keys, values):
                self._apply(key, value)

    def delete_group(self, group: str) -> None:
        """Remove a group's record, configs and every share partition of it."""
        doomed: dict[SharePartitionKey, PartitionSnapshot | None] = {
            key: None for key in self.partitions if key[0] == group
        }
        self.write(doomed, {group: None}, {group: None} if group in self.configs else {})

    def group_partitions(self, group: str) -> Iterable[SharePartitionKey]:
        """The share partitions stored for ``group``."""
        return [key for key in self.partitions if key[0] == group]

    def compact(self) -> None:
        """Roll and clean the log now (tests)."""
        self.store.compact()
