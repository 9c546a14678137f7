"""Offset ranges: Spark's offset JSON, and splitting ranges into read tasks.

A streaming query checkpoints its position as Spark's Kafka connector does,
``{"topic": {"0": 123, "1": 456}}`` (the next offset to read per partition), so the JSON in a
checkpoint reads the same either way.  Ranges are split the way Spark's
``KafkaOffsetRangeCalculator`` splits them: first by ``maxRecordsPerPartition``, then the large
ranges into pieces until there are ``minPartitions``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "OffsetRange",
    "TopicPartition",
    "to_json_dict",
    "from_json_dict",
    "to_json",
    "from_json",
    "split_ranges",
    "rate_limit",
]

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class OffsetRange:
    """Read ``topic``/``partition`` from ``start`` up to (not including) ``end``; ``leader``
    is the broker ("host:port") that led it when planned."""

    topic: str
    partition: int
    start: int
    end: int
    leader: str = ""

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{(t, 0): 5}`` as Spark's offset JSON object ``{"t": {"0": 5}}`` (sorted)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_json_dict(obj: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """Spark's offset JSON object back to ``{(topic, partition): offset}``."""
    return {(str(t), int(p)): int(o) for t, parts in obj.items() for p, o in parts.items()}


def to_json(offsets: Mapping[TopicPartition, int]) -> str:
    return json.dumps(to_json_dict(offsets), separators=(",", ":"))


def from_json(text: str) -> dict[TopicPartition, int]:
    return from_json_dict(json.loads(text))


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` as ``parts`` consecutive ranges of near-equal size."""
    parts = max(1, min(parts, r.size))
    bounds = [r.start + r.size * i // parts for i in range(parts)] + [r.end]
    return [OffsetRange(r.topic, r.partition, a, b, r.leader) for a, b in zip(bounds, bounds[1:])]


def split_ranges(
    ranges: list[OffsetRange],
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """Non-empty ranges split into read tasks (Spark's KafkaOffsetRangeCalculator rules)."""
    out = [r for r in ranges if r.size > 0]
    if max_records_per_partition:
        out = [
            piece for r in out for piece in _split(r, math.ceil(r.size / max_records_per_partition))
        ]
    if not min_partitions or len(out) >= min_partitions:
        return out
    total = sum(r.size for r in out)
    result = []
    for r in out:
        share = r.size / total * min_partitions if total else 1
        result += _split(r, max(1, round(share))) if share > 1 else [r]
    return result


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], limit: int
) -> dict[TopicPartition, int]:
    """End offsets reading at most ``limit`` records in all, shared out by each partition's
    backlog (as Spark's Kafka source does for maxOffsetsPerTrigger)."""
    backlog = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(backlog.values())
    if total <= limit:
        return dict(latest)
    out = {}
    remaining = limit
    for tp in sorted(latest):
        take = min(backlog[tp], int(limit * backlog[tp] / total))
        out[tp] = start.get(tp, latest[tp]) + take
        remaining -= take
    for tp in sorted(latest):  # rounding left a few: give them to partitions with backlog
        if remaining <= 0:
            break
        extra = min(remaining, latest[tp] - out[tp])
        out[tp] += extra
        remaining -= extra
    return out
