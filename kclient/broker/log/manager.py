"""All partition logs of one broker under ``log.dirs``, plus the flush and retention timers.

Layout: ``<log_dir>/<topic>-<partition>/`` per partition and ``<log_dir>/.topics/<topic>.json``
holding a topic's config overrides (Kafka names, string values), so a restart keeps
``message.format.version``, ``retention.ms`` and the rest.  ``<log_dir>/recovery-point-offset-
checkpoint`` holds every log's recovery point, written every
``log.flush.offset.checkpoint.interval.ms`` and on close, read at start (Kafka's LogManager).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from kclient.broker.log.checkpoint import (
    RECOVERY_POINT_CHECKPOINT,
    read_checkpoint,
    write_checkpoint,
)
from kclient.broker.log.cleaner import LogCleaner
from kclient.broker.log.config import LogConfig
from kclient.broker.log.log import Log, now_ms

log = logging.getLogger(__name__)

TOPICS_DIR = ".topics"
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def validate_topic_name(topic: str) -> None:
    """Raise ValueError unless ``topic`` is a legal Kafka topic name."""
    if not _LEGAL_TOPIC.match(topic) or topic in (".", ".."):
        raise ValueError(
            f"illegal topic name {topic!r}: use 1-249 of [a-zA-Z0-9._-], not '.' or '..'"
        )


class LogManager:
    """Creates, loads, flushes, cleans and deletes the logs in one log directory."""

    def __init__(
        self,
        log_dir: Path,
        default_config: LogConfig,
        *,
        flush_check_ms: int = 1000,
        retention_check_ms: int = 300000,
        checkpoint_interval_ms: int = 60000,
        cleaner_config: Mapping[str, str] | None = None,
    ) -> None:
        """Nothing is read until :meth:`start`; ``cleaner_config`` (broker settings) starts the
        log cleaner unless ``log.cleaner.enable`` is false; ``checkpoint_interval_ms`` is
        ``log.flush.offset.checkpoint.interval.ms``."""
        self.log_dir = Path(log_dir)
        self.default_config = default_config
        self.flush_check_ms = flush_check_ms
        self.retention_check_ms = retention_check_ms
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self._checkpoint_lock = threading.Lock()
        self._logs: dict[tuple[str, int], Log] = {}
        self._overrides: dict[str, dict[str, str]] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.cleaner: LogCleaner | None = None
        if (
            cleaner_config is not None
            and str(cleaner_config.get("log.cleaner.enable", "true")).lower() == "true"
        ):
            self.cleaner = LogCleaner(self.logs, self.log_dir, cleaner_config)

    # ------------------------------------------------------------------ startup
    def start(self) -> None:
        """Load every partition directory (with recovery) and start the timer threads."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._load_overrides()
            points = read_checkpoint(self.log_dir / RECOVERY_POINT_CHECKPOINT)
            for path in sorted(self.log_dir.iterdir()):
                match = _PARTITION_DIR.match(path.name)
                if path.is_dir() and match:
                    key = (match.group("topic"), int(match.group("partition")))
                    self._logs[key] = Log(
                        path, self.topic_config(key[0]), recovery_point=points.get(key, 0)
                    )
        self._start_timer("kclient-log-flusher", self.flush_check_ms, self._flush_due)
        self._start_timer(
            "kclient-recovery-point-checkpoint",
            self.checkpoint_interval_ms,
            self.checkpoint_recovery_offsets,
        )
        self._start_timer("kclient-log-retention", self.retention_check_ms, self.cleanup)
        if self.cleaner is not None:
            self.cleaner.start()

    def _load_overrides(self) -> None:
        """Read every ``.topics/<topic>.json`` (a broken file is logged and ignored)."""
        folder = self.log_dir / TOPICS_DIR
        if not folder.is_dir():
            return
        for path in folder.glob("*.json"):
            try:
                overrides = json.loads(path.read_text(encoding="utf-8"))
                LogConfig.from_properties(overrides, self.default_config)
            except (OSError, ValueError) as exc:
                log.error("ignoring topic config %s: %s", path, exc)
                continue
            self._overrides[path.name[: -len(".json")]] = {k: str(v) for k, v in overrides.items()}

    def _start_timer(self, name: str, interval_ms: int, action: Callable[[], object]) -> None:
        """Run ``action`` every ``interval_ms`` on a daemon thread until :meth:`close`."""
        if interval_ms <= 0:
            return
        thread = threading.Thread(
            target=self._periodic, args=(interval_ms, action), name=name, daemon=True
        )
        thread.start()
        self._threads.append(thread)

    def _periodic(self, interval_ms: int, action: Callable[[], object]) -> None:
        """Timer loop; an exception is logged and the loop goes on."""
        while not self._stop.wait(interval_ms / 1000):
            try:
                action()
            except Exception:  # noqa: BLE001 - a timer must survive one bad log
                log.exception("log manager task %s failed", getattr(action, "__name__", action))

    # ------------------------------------------------------------------ logs
    def get_log(self, topic: str, partition: int) -> Log | None:
        """The log of one partition, or None if it does not exist here."""
        return self._logs.get((topic, partition))

    def create_log(
        self, topic: str, partition: int, topic_config: dict[str, str] | None = None
    ) -> Log:
        """Create (or return the existing) log; persist ``topic_config`` overrides if given."""
        validate_topic_name(topic)
        if partition < 0:
            raise ValueError(f"partition must be >= 0, not {partition}")
        with self._lock:
            existing = self._logs.get((topic, partition))
            if existing is not None:
                return existing
            if topic_config is not None:
                self._save_overrides(topic, {k: str(v) for k, v in topic_config.items()})
            new = Log(
                self.log_dir / f"{topic}-{partition}", self.topic_config(topic), recover=False
            )
            self._logs[(topic, partition)] = new
            return new

    def _save_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        """Validate and store a topic's overrides in ``.topics/<topic>.json`` (atomically)."""
        LogConfig.from_properties(overrides, self.default_config)
        folder = self.log_dir / TOPICS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{topic}.json"
        tmp = folder / f"{topic}.json.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(overrides, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self._overrides[topic] = overrides

    def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        """Replace a topic's stored overrides and apply them to its open logs at once."""
        with self._lock:
            self._save_overrides(topic, {k: str(v) for k, v in overrides.items()})
            config = self.topic_config(topic)
            for (name, _), each in self._logs.items():
                if name == topic:
                    each.config = config

    def topic_config(self, topic: str) -> LogConfig:
        """The effective config of ``topic``: broker defaults plus its stored overrides."""
        return LogConfig.from_properties(self._overrides.get(topic, {}), self.default_config)

    def topic_overrides(self, topic: str) -> dict[str, str]:
        """The topic's stored overrides (Kafka names), e.g. for DescribeConfigs."""
        return dict(self._overrides.get(topic, {}))

    def topics(self) -> dict[str, list[int]]:
        """Topic -> sorted partition numbers present on disk."""
        out: dict[str, list[int]] = {}
        for topic, partition in list(self._logs):
            out.setdefault(topic, []).append(partition)
        return {topic: sorted(parts) for topic, parts in sorted(out.items())}

    def logs(self) -> list[Log]:
        """Every open log (a snapshot list)."""
        return list(self._logs.values())

    def delete_topic(self, topic: str) -> None:
        """Delete all partitions of ``topic`` and its stored config."""
        with self._lock:
            doomed = [key for key in self._logs if key[0] == topic]
            for key in doomed:
                self._logs.pop(key).delete()
            for path in self.log_dir.glob(f"{glob_escape(topic)}-*"):
                match = _PARTITION_DIR.match(path.name)
                if path.is_dir() and match and match.group("topic") == topic:
                    shutil.rmtree(path, ignore_errors=True)
            self._overrides.pop(topic, None)
            if self.cleaner is not None:
                self.cleaner.forget(topic)
            try:
                (self.log_dir / TOPICS_DIR / f"{topic}.json").unlink()
            except FileNotFoundError:
                pass

    # ------------------------------------------------------------------ maintenance
    def _flush_due(self) -> None:
        """Flush every log whose flush.ms interval has passed."""
        now = now_ms()
        for each in self.logs():
            each.maybe_flush(now)

    def cleanup(self, now: int | None = None) -> int:
        """Apply retention to every log now; return the number of segments deleted."""
        now = now_ms() if now is None else now
        return sum(each.delete_old_segments(now) for each in self.logs())

    def checkpoint_recovery_offsets(self) -> None:
        """Write every open log's recovery point to ``recovery-point-offset-checkpoint``."""
        with self._checkpoint_lock:
            points = {(each.topic, each.partition): each.recovery_point for each in self.logs()}
            write_checkpoint(self.log_dir / RECOVERY_POINT_CHECKPOINT, points)

    def flush_all(self) -> None:
        """fsync every log."""
        for each in self.logs():
            each.flush()

    def close(self) -> None:
        """Stop the timers, then flush and close every log (clean-shutdown markers written).
        A second call does nothing (it must not checkpoint an empty set over the real one)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self.cleaner is not None:
            self.cleaner.close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
        self._threads.clear()
        with self._lock:
            for each in self._logs.values():
                each.close()
            self.checkpoint_recovery_offsets()
            self._logs.clear()


def glob_escape(text: str) -> str:
    """Escape glob metacharacters (topic names may not hold them, but be safe)."""
    return re.sub(r"([*?\[])", r"[\1]", text)


__all__ = ["LogManager", "TOPICS_DIR", "validate_topic_name"]
