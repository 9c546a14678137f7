"""The offsets log of a real broker process stays bounded: 100,000 partition commits over the
wire (10,000 OffsetCommit requests of 10 partitions), its size measured on disk as they go;
after a kill -9 and a restart every group's last commit is still there."""

from __future__ import annotations

import time
from pathlib import Path

from kclient.simple import SimpleConsumer

from .compaction_support import BrokerProcess, confluent_admin

SEGMENT = 64 * 1024


def _disk_bytes(directory: Path) -> int:
    """Bytes of the segments on disk now; the cleaner may delete one between listing and stat."""
    total = 0
    for p in directory.glob("*.log"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            continue
    return total


def test_offsets_log_bounded_under_100000_commits(tmp_path):
    broker = BrokerProcess(
        tmp_path / "logs",
        {
            "offsets.topic.segment.bytes": str(SEGMENT),
            "log.cleaner.backoff.ms": "50",
            "offsets.commit.required.acks": "1",
        },
    )
    offsets_dir = tmp_path / "logs" / "__group_coordinator" / "__consumer_offsets-0"
    try:
        broker.start()
        admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([confluent_admin.NewTopic("events", 10, 1)])["events"].result(15)
        del admin
        peak, started = 0, time.monotonic()
        with SimpleConsumer("127.0.0.1", broker.port, so_timeout=10000) as consumer:
            for i in range(10_000):
                group = f"group-{i % 20}"
                consumer.commit_offsets(group, {("events", p): (i, "m") for p in range(10)})
                if i % 500 == 0:
                    peak = max(peak, _disk_bytes(offsets_dir))
            elapsed = time.monotonic() - started
            final = _disk_bytes(offsets_dir)
            got = consumer.fetch_offsets("group-19", [("events", p) for p in range(10)])
        uncleaned = 100_000 * 40
        print(
            f"100,000 commits in {elapsed:.1f}s: offsets log peak {peak} bytes, final {final}"
            f" bytes on disk (~{uncleaned} bytes uncleaned)"
        )
        assert peak < 5 * SEGMENT, peak
        assert {tp: v[0] for tp, v in got.items()} == {("events", p): 9_999 for p in range(10)}
        broker.kill9()
        broker.start()
        with SimpleConsumer("127.0.0.1", broker.port, so_timeout=10000) as consumer:
            for g in range(20):
                got = consumer.fetch_offsets(f"group-{g}", [("events", 0)])
                assert got[("events", 0)][0] == 9_980 + g
    finally:
        broker.kill9()
