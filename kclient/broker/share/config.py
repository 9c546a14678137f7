"""Share-group settings: the broker's ``group.share.*`` keys and a group's dynamic ``share.*``
configuration (IncrementalAlterConfigs on a GROUP resource), as Kafka names them.

A group's key overrides the broker's within the broker's bounds (the lock duration within
``group.share.min/max.record.lock.duration.ms``, the session timeout within
``group.share.min/max.session.timeout.ms``); an unknown key or a bad value is a ValueError
naming it (INVALID_CONFIG on the wire).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from .partition import SharePartition

__all__ = ["GROUP_CONFIG_KEYS", "GroupSettings", "ShareSettings"]

AUTO_RESETS = ("latest", "earliest")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")

#: group-level key -> its default's broker key (None: a fixed default)
GROUP_CONFIG_KEYS: dict[str, str | None] = {
    "share.auto.offset.reset": None,
    "share.isolation.level": None,
    "share.record.lock.duration.ms": "group.share.record.lock.duration.ms",
    "share.session.timeout.ms": "group.share.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    "share.delivery.count.limit": "group.share.delivery.count.limit",
    "share.partition.max.record.locks": "group.share.partition.max.record.locks",
}


@dataclass(frozen=True)
class GroupSettings:
    """What one share group runs with."""

    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"
    lock_ms: int = 30_000
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    delivery_limit: int = 5
    max_locks: int = 2000

    @property
    def read_committed(self) -> bool:
        """Whether only committed transactional records are handed out."""
        return self.isolation_level == "read_committed"

    def apply(self, sp: SharePartition) -> None:
        """Give a share partition these limits."""
        sp.lock_ms, sp.delivery_limit, sp.max_locks = (
            self.lock_ms,
            self.delivery_limit,
            self.max_locks,
        )


def _int(key: str, value: object, low: int, high: int) -> int:
    """An integer setting within [low, high]."""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{key}: {value!r} is not an integer") from None
    if not low <= number <= high:
        raise ValueError(f"{key}: {number} is outside [{low}, {high}]")
    return number


@dataclass(frozen=True)
class ShareSettings:
    """The broker's share-group settings and bounds."""

    defaults: GroupSettings
    min_lock_ms: int
    max_lock_ms: int
    min_session_ms: int
    max_session_ms: int
    max_size: int

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ShareSettings:
        """Read the ``group.share.*`` keys (Kafka's defaults when absent)."""

        def get(key: str, default: int) -> int:
            return _int(key, config.get(key, default), 1, 2**31 - 1)

        defaults = GroupSettings(
            lock_ms=get("group.share.record.lock.duration.ms", 30_000),
            session_timeout_ms=get("group.share.session.timeout.ms", 45_000),
            heartbeat_interval_ms=get("group.share.heartbeat.interval.ms", 5_000),
            delivery_limit=get("group.share.delivery.count.limit", 5),
            max_locks=get("group.share.partition.max.record.locks", 2000),
        )
        return cls(
            defaults,
            get("group.share.min.record.lock.duration.ms", 15_000),
            get("group.share.max.record.lock.duration.ms", 60_000),
            get("group.share.min.session.timeout.ms", 45_000),
            get("group.share.max.session.timeout.ms", 60_000),
            get("group.share.max.size", 200),
        )

    def for_group(self, config: Mapping[str, str]) -> GroupSettings:
        """The defaults with a group's keys applied (ValueError for a bad one)."""
        out = self.defaults
        for key, value in config.items():
            if key not in GROUP_CONFIG_KEYS:
                raise ValueError(
                    f"unknown group config {key!r} (share groups take "
                    f"{', '.join(GROUP_CONFIG_KEYS)})"
                )
            text = str(value).strip().lower()
            if key == "share.auto.offset.reset":
                if text not in AUTO_RESETS:
                    raise ValueError(f"{key}: {value!r} is not one of {', '.join(AUTO_RESETS)}")
                out = replace(out, auto_offset_reset=text)
            elif key == "share.isolation.level":
                if text not in ISOLATION_LEVELS:
                    raise ValueError(
                        f"{key}: {value!r} is not one of {', '.join(ISOLATION_LEVELS)}"
                    )
                out = replace(out, isolation_level=text)
            elif key == "share.record.lock.duration.ms":
                out = replace(out, lock_ms=_int(key, value, self.min_lock_ms, self.max_lock_ms))
            elif key == "share.session.timeout.ms":
                out = replace(
                    out,
                    session_timeout_ms=_int(key, value, self.min_session_ms, self.max_session_ms),
                )
            elif key == "share.heartbeat.interval.ms":
                out = replace(out, heartbeat_interval_ms=_int(key, value, 1, 2**31 - 1))
            elif key == "share.delivery.count.limit":
                out = replace(out, delivery_limit=_int(key, value, 2, 10))
            else:
                out = replace(out, max_locks=_int(key, value, 100, 10_000))
        return out
