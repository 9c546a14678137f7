"""The soak's bookkeeping (``kclient bench soak``): what was acknowledged against what the log
holds and what each consumer group delivered.  Pure functions over message ids, so that the
accounting itself is unit-tested apart from the processes that produce the ids.

Workers write one event per line to their own file (line-buffered, so a kill -9 loses nothing
written before it):

* ``A <id> <latency_ms>``: the producer saw ``<id>`` acknowledged;
* ``F <id>``: the producer saw ``<id>`` fail for good (it may still be in the log);
* ``C <id> <partition> <offset>``: a consumer handed ``<id>`` to the application.

An id is ``<producer>-<sequence>``; a producer sends each id once (retries are its own).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["Events", "audit", "duplicates", "percentile", "read_events", "rss_mb"]


class Events:
    """The events of a set of worker files: acked ids with their latencies, failed ids, and
    consumed ids in delivery order."""

    def __init__(self) -> None:
        self.acked: dict[str, float] = {}
        self.failed: set[str] = set()
        self.consumed: list[str] = []

    def add_line(self, line: str) -> None:
        """Take one event line; a torn or unknown line (a kill -9 mid-write) is skipped."""
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "A":
            try:
                self.acked[parts[1]] = float(parts[2])
            except ValueError:
                return
        elif len(parts) >= 2 and parts[0] == "F":
            self.failed.add(parts[1])
        elif len(parts) >= 4 and parts[0] == "C":
            self.consumed.append(parts[1])


def read_events(paths: Iterable[Path]) -> Events:
    """The events of every file in ``paths`` (missing files count as empty)."""
    events = Events()
    for path in paths:
        if not path.exists():
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.endswith("\n"):  # a last line cut by kill -9 is not an event
                    events.add_line(line)
    return events


def duplicates(ids: Iterable[str]) -> int:
    """How many deliveries repeat an id seen before (n copies of one id count n - 1)."""
    return sum(n - 1 for n in Counter(ids).values() if n > 1)


def _by_producer(ids: Iterable[str]) -> dict[str, int]:
    """Count of ``ids`` per producer (the id's prefix before its last '-')."""
    return dict(Counter(i.rsplit("-", 1)[0] for i in ids))


def audit(
    acked: Iterable[str], stored: Iterable[str], delivered: Mapping[str, Iterable[str]]
) -> dict[str, Any]:
    """Acked ids against the log's ids (``stored``, in log order) and each group's deliveries.

    ``lost`` are acked ids the log does not hold: the soak's one hard failure.  ``missing`` of a
    group are acked ids it never delivered; ``duplicates`` count repeated ids (in the log:
    retried writes; in a group: redelivery after a crash or rebalance, at least once)."""
    acked_set = set(acked)
    stored_list = list(stored)
    stored_set = set(stored_list)
    lost = sorted(acked_set - stored_set)
    log_dups = Counter(stored_list)
    report: dict[str, Any] = {
        "acked": len(acked_set),
        "stored": len(stored_list),
        "lost": len(lost),
        "lost_examples": lost[:10],
        "stored_unacked": len(stored_set - acked_set),
        "log_duplicates": sum(n - 1 for n in log_dups.values() if n > 1),
        "log_duplicates_by_producer": _by_producer(
            i for i, n in log_dups.items() for _ in range(n - 1)
        ),
        "groups": {},
    }
    for group, ids in delivered.items():
        got = list(ids)
        got_set = set(got)
        report["groups"][group] = {
            "delivered": len(got),
            "unique": len(got_set),
            "missing": len(acked_set - got_set),
            "duplicates": duplicates(got),
            "not_in_log": len(got_set - stored_set),
        }
    return report


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100, nearest rank) of ``values``; None when empty."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def rss_mb(pid: int) -> float | None:
    """Resident set size of process ``pid`` in MB (Linux /proc), None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None
