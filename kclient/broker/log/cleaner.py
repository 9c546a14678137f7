"""The log cleaner thread: compacts the dirtiest log whose cleanup.policy holds "compact".

Every ``log.cleaner.backoff.ms`` with nothing to do, the thread computes each compacted log's
cleanable ratio (:func:`~kclient.broker.log.cleaning.cleanable`), cleans the dirtiest one above
its ``min.cleanable.dirty.ratio`` and records the new first dirty offset in the
``cleaner-offset-checkpoint`` file (Kafka's format: version, count, ``topic partition offset``
lines).  Reads and writes are throttled to ``log.cleaner.io.max.bytes.per.second``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kclient.broker.log.checkpoint import CLEANER_CHECKPOINT, read_checkpoint, write_checkpoint
from kclient.broker.log.cleaning import Cleanable, CleaningAborted, Throttler, clean_log, cleanable
from kclient.broker.log.log import Log, now_ms

log = logging.getLogger(__name__)

CHECKPOINT_FILE = CLEANER_CHECKPOINT
#: Kafka's offset map: 24 bytes per key (MD5 hash and offset), filled to 90%.
_BYTES_PER_KEY, _LOAD_FACTOR = 24, 0.9


class CleanerCheckpoint:
    """``(topic, partition) -> first dirty offset``, persisted atomically in Kafka's format."""

    def __init__(self, path: Path) -> None:
        """Read ``path`` if it exists (a damaged file counts as empty)."""
        self.path = Path(path)
        self.offsets: dict[tuple[str, int], int] = read_checkpoint(self.path)

    def get(self, key: tuple[str, int]) -> int:
        """The first dirty offset of a partition (0: never cleaned)."""
        return self.offsets.get(key, 0)

    def update(
        self, key: tuple[str, int] | None, offset: int, live: Iterable[tuple[str, int]]
    ) -> None:
        """Set one partition's offset (``key`` None: none), drop partitions no longer
        ``live``, write the file."""
        keep = set(live)
        self.offsets = {k: v for k, v in self.offsets.items() if k in keep}
        if key is not None:
            self.offsets[key] = offset
        write_checkpoint(self.path, self.offsets)


class LogCleaner:
    """A daemon thread compacting the logs ``logs()`` returns (see the module docstring)."""

    def __init__(
        self,
        logs: Callable[[], Iterable[Log]],
        checkpoint_dir: Path,
        config: Mapping[str, str] | None = None,
        *,
        name: str = "kclient-log-cleaner",
    ) -> None:
        """``config``: broker settings (``log.cleaner.*``; Kafka's defaults when absent)."""
        config = config or {}
        self.logs = logs
        self.checkpoint = CleanerCheckpoint(Path(checkpoint_dir) / CHECKPOINT_FILE)
        self.backoff_ms = int(config.get("log.cleaner.backoff.ms", 15000))
        buffer = int(config.get("log.cleaner.dedupe.buffer.size", 134217728))
        self.map_slots = int(buffer / _BYTES_PER_KEY * _LOAD_FACTOR)
        self.io_rate = float(config.get("log.cleaner.io.max.bytes.per.second", "inf"))
        self.name = name
        self.rounds = 0
        #: Partitions whose cleaning failed (Kafka's uncleanable partitions): skipped from now.
        self.uncleanable: set[tuple[str, int]] = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread."""
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread, abandoning a round in progress (its files are discarded)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def forget(self, topic: str) -> None:
        """Drop a deleted topic's checkpoints (a topic created again starts dirty)."""
        with self._lock:
            live = [k for k in self.checkpoint.offsets if k[0] != topic]
            self.checkpoint.update(None, 0, live)

    def _run(self) -> None:
        """Clean while there is work; sleep ``backoff_ms`` when there is none."""
        while not self._stop.is_set():
            try:
                busy = self.clean_once() is not None
            except Exception:  # noqa: BLE001 - one bad log must not stop the cleaner
                log.exception("log cleaning failed")
                busy = False
            if not busy:
                self._stop.wait(self.backoff_ms / 1000)

    def filthiest(self, now: int) -> Cleanable | None:
        """The compacted log with the highest cleanable ratio above its minimum, or None."""
        best = None
        for each in self.logs():
            if each.closed or not each.config.compact or _key(each) in self.uncleanable:
                continue
            target = cleanable(each, self.checkpoint.get(_key(each)), now)
            if (
                target.dirty_bytes
                and target.ratio > each.config.min_cleanable_dirty_ratio
                and (best is None or target.ratio > best.ratio)
            ):
                best = target
        return best

    def caught_up(self) -> bool:
        """True when no compacted log needs a round now (what the thread was given is done)."""
        with self._lock:
            return self.filthiest(now_ms()) is None

    def clean_once(self, now: int | None = None) -> Cleanable | None:
        """Clean the filthiest log once; what was cleaned, or None when nothing needed it."""
        now = now_ms() if now is None else now
        with self._lock:
            return self._clean(self.filthiest(now), now)

    def clean(self, each: Log, now: int | None = None) -> Cleanable | None:
        """Clean ``each`` now whatever its dirty ratio (None when nothing of it is dirty)."""
        now = now_ms() if now is None else now
        with self._lock:
            target = cleanable(each, self.checkpoint.get(_key(each)), now)
            return self._clean(target if target.dirty_bytes else None, now)

    def _clean(self, target: Cleanable | None, now: int) -> Cleanable | None:
        """One round on ``target`` (lock held); the checkpoint moves on afterwards."""
        if target is None:
            return None
        try:
            end = clean_log(
                target,
                now,
                map_slots=self.map_slots,
                stop=self._stop,
                throttle=Throttler(self.io_rate, self._stop),
            )
        except Exception as exc:
            if isinstance(exc, (CleaningAborted, OSError)) and (
                target.log.closed or self._stop.is_set()
            ):
                log.info("cleaning of %s aborted: %r", target.log.directory.name, exc)
                return None
            self._give_up(target.log)
            raise
        live = [_key(each) for each in self.logs() if not each.closed]
        self.checkpoint.update(_key(target.log), end, live)
        self.rounds += 1
        log.info(
            "cleaned %s: first dirty offset %d -> %d (ratio was %.2f)",
            target.log.directory.name,
            target.first_dirty,
            end,
            target.ratio,
        )
        return target

    def _give_up(self, each: Log) -> None:
        """Stop cleaning a log whose cleaning failed (until the broker restarts)."""
        self.uncleanable.add(_key(each))
        log.error("marking %s uncleanable after a failed cleaning", each.directory.name)


def _key(each: Log) -> tuple[str, int]:
    """A log's checkpoint key."""
    return each.topic, each.partition


__all__ = ["CHECKPOINT_FILE", "CleanerCheckpoint", "LogCleaner"]
