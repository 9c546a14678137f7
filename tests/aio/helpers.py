"""Helpers for the asyncio client tests: read a topic back with the sync consumer."""

from __future__ import annotations

from kclient import Consumer
from kclient.structs import TopicPartition


def read_back(
    bootstrap: str, topic: str, partitions: int, expect: int, timeout_ms: int = 20000
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value) of the records of ``topic``: at least ``expect``, then
    whatever else arrives before a poll comes back empty."""
    import time

    c = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        out: list[tuple[int, int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            got = c.poll(300)
            if not got and len(out) >= expect:
                break
            for records in got.values():
                out += [(r.partition, r.offset, r.key, r.value) for r in records]
        return out
    finally:
        c.close()
