"""Per-topic log settings with Kafka's names (server.properties and topic-level configs).

``LogConfig.from_properties`` reads both the broker-wide names (``log.segment.bytes``,
``log.retention.hours`` ...) and the topic-level overrides (``segment.bytes``, ``retention.ms``
...); for each setting the later names in its list win, so a topic override beats the broker
default and ``log.retention.ms`` beats ``log.retention.minutes`` beats ``log.retention.hours``,
as in Kafka.  Keys that are not log settings are ignored, so a whole broker config can be passed.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-IV\d+)?")


@dataclass
class LogConfig:
    """Settings of one topic's logs; defaults are Kafka's."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    flush_interval_messages: int = INT64_MAX
    flush_interval_ms: int | None = None
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    message_format_version: int = 2
    timestamp_type: str = "CreateTime"
    max_message_bytes: int = 1048588
    cleanup_policy: tuple[str, ...] = ("delete",)
    delete_retention_ms: int = 24 * 3600 * 1000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0

    @property
    def compact(self) -> bool:
        """True when the cleaner compacts this log (cleanup.policy holds "compact")."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """True when retention by time and size applies (cleanup.policy holds "delete")."""
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        """True when the broker stamps records with its own clock (LogAppendTime)."""
        return self.timestamp_type == "LogAppendTime"

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], defaults: LogConfig | None = None
    ) -> LogConfig:
        """Build a config from Kafka-named properties on top of ``defaults`` (or Kafka's)."""
        config = dataclasses.replace(defaults) if defaults is not None else cls()
        for name, keys in _KEYS.items():
            for key, scale in keys:
                if key in props and props[key] is not None:
                    setattr(config, name, _PARSERS[name](key, str(props[key]).strip(), scale))
        return config


def parse_format_version(key: str, value: str) -> int:
    """Message format (magic) from "0"/"1"/"2" or a Kafka release name ("0.10.0", "2.0").

    Release names are read as Kafka 3.x reads them (``MetadataVersion.fromVersionString``):
    only the first three dot-separated parts of a 0.x name and the first two of a later one
    count, so "0.10.0.0" is "0.10.0" and "2.8.1" is "2.8"."""
    if value in ("0", "1", "2"):
        return int(value)
    parts = value.split(".")
    match = _RELEASE.fullmatch(".".join(parts[: 3 if value.startswith("0.") else 2]))
    if not match:
        raise ValueError(
            f"invalid value {value!r} for {key}: expected 0, 1, 2 or a Kafka "
            f"release such as 0.8.2, 0.10.0, 0.11.0, 2.0"
        )
    major, minor = int(match.group(1)), int(match.group(2))
    if major > 0 or minor >= 11:
        return 2
    return 1 if minor == 10 else 0


def _int(low: int, high: int = INT64_MAX, allowed: str = "") -> Callable[[str, str, int], int]:
    """Parser for an integer in ``[low, high]`` (times ``scale`` unless negative)."""

    def parse(key: str, value: str, scale: int) -> int:
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or not low <= number <= high:
            text = allowed or f"an integer in [{low}, {high}]"
            raise ValueError(f"invalid value {value!r} for {key}: expected {text}")
        return number * scale if number >= 0 else number

    return parse


def _timestamp_type(key: str, value: str, scale: int) -> str:
    """CreateTime or LogAppendTime."""
    if value not in TIMESTAMP_TYPES:
        raise ValueError(
            f"invalid value {value!r} for {key}: expected one of {', '.join(TIMESTAMP_TYPES)}"
        )
    return value


def _policy(key: str, value: str, scale: int) -> tuple[str, ...]:
    """cleanup.policy: a comma-separated list of "compact" and "delete" (Kafka accepts both)."""
    parts = tuple(sorted({p.strip() for p in value.split(",") if p.strip()}))
    if not parts or any(p not in CLEANUP_POLICIES for p in parts):
        raise ValueError(
            f"invalid value {value!r} for {key}: expected compact, delete or compact,delete"
        )
    return parts


def _ratio(key: str, value: str, scale: int) -> float:
    """A dirty ratio in [0, 1]."""
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"invalid value {value!r} for {key}: expected a number in [0, 1]")
    return number


def _optional_ms(key: str, value: str, scale: int) -> int | None:
    """A flush interval in ms; Kafka's "never" (Long.MAX_VALUE) becomes None."""
    number = _int(0)(key, value, scale)
    return None if number >= INT64_MAX else number


_HOUR, _MINUTE = 3600 * 1000, 60 * 1000
_KEYS: dict[str, list[tuple[str, int]]] = {
    "segment_bytes": [("log.segment.bytes", 1), ("segment.bytes", 1)],
    "segment_ms": [("log.roll.hours", _HOUR), ("log.roll.ms", 1), ("segment.ms", 1)],
    "flush_interval_messages": [("log.flush.interval.messages", 1), ("flush.messages", 1)],
    "flush_interval_ms": [("log.flush.interval.ms", 1), ("flush.ms", 1)],
    "retention_ms": [
        ("log.retention.hours", _HOUR),
        ("log.retention.minutes", _MINUTE),
        ("log.retention.ms", 1),
        ("retention.ms", 1),
    ],
    "retention_bytes": [("log.retention.bytes", 1), ("retention.bytes", 1)],
    "index_interval_bytes": [("log.index.interval.bytes", 1), ("index.interval.bytes", 1)],
    "message_format_version": [("log.message.format.version", 1), ("message.format.version", 1)],
    "timestamp_type": [("log.message.timestamp.type", 1), ("message.timestamp.type", 1)],
    "max_message_bytes": [("message.max.bytes", 1), ("max.message.bytes", 1)],
    "cleanup_policy": [("log.cleanup.policy", 1), ("cleanup.policy", 1)],
    "delete_retention_ms": [("log.cleaner.delete.retention.ms", 1), ("delete.retention.ms", 1)],
    "min_cleanable_dirty_ratio": [
        ("log.cleaner.min.cleanable.ratio", 1),
        ("min.cleanable.dirty.ratio", 1),
    ],
    "min_compaction_lag_ms": [
        ("log.cleaner.min.compaction.lag.ms", 1),
        ("min.compaction.lag.ms", 1),
    ],
}
_PARSERS: dict[str, Callable[[str, str, int], object]] = {
    "segment_bytes": _int(14, INT32_MAX),
    "segment_ms": _int(1),
    "flush_interval_messages": _int(1),
    "flush_interval_ms": _optional_ms,
    "retention_ms": _int(-1, allowed="-1 (unlimited) or a non-negative integer"),
    "retention_bytes": _int(-1, allowed="-1 (unlimited) or a non-negative integer"),
    "index_interval_bytes": _int(0, INT32_MAX),
    "message_format_version": lambda key, value, scale: parse_format_version(key, value),
    "timestamp_type": _timestamp_type,
    "max_message_bytes": _int(0, INT32_MAX),
    "cleanup_policy": _policy,
    "delete_retention_ms": _int(0),
    "min_cleanable_dirty_ratio": _ratio,
    "min_compaction_lag_ms": _int(0),
}

#: Every property name LogConfig understands.
PROPERTY_NAMES = frozenset(key for keys in _KEYS.values() for key, _ in keys)

__all__ = [
    "LogConfig",
    "parse_format_version",
    "PROPERTY_NAMES",
    "TIMESTAMP_TYPES",
    "CLEANUP_POLICIES",
]
