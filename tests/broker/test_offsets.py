"""OffsetManager: durable commits in a compacted log, replay after reopen, torn tails, cleaning,
expiry, the legacy file import, and a bounded log under 100,000 commits."""

from __future__ import annotations

import json
import os
import struct
import zlib

import pytest

from kclient.broker.offsets import (
    LEGACY_OFFSETS_FILE,
    OFFSETS_LOG,
    OffsetEntry,
    OffsetManager,
    read_log,
)
from kclient.broker.offsets_schema import decode_key, decode_value, encode_key
from tests.consumer.helpers import wait_for


@pytest.fixture
def manager(tmp_path):
    with OffsetManager(tmp_path) as m:
        yield m


def _segments(tmp_path):
    return sorted((tmp_path / OFFSETS_LOG).glob("*.log"))


def test_commit_and_fetch(manager):
    manager.commit("g", {("t", 0): OffsetEntry(5, "meta"), ("t", 1): OffsetEntry(7)})
    got = manager.fetch("g")
    assert got[("t", 0)].offset == 5 and got[("t", 0)].metadata == "meta"
    assert manager.fetch("g", [("t", 1), ("t", 9)]) == {("t", 1): OffsetEntry(7)}
    assert manager.fetch("other") == {}
    assert manager.groups() == ["g"]


def test_records_use_kafkas_offset_commit_schemas(manager):
    manager.commit("grp", {("topic", 3): OffsetEntry(42, "md", 7, 1234)})
    manager.commit("grp", {("topic", 4): OffsetEntry(43, None, -1, 99, 5000)})
    records = list(read_log(manager.log))
    assert records[0].key == b"\x00\x01\x00\x03grp\x00\x05topic\x00\x00\x00\x03"
    assert records[0].value[:2] == b"\x00\x03"  # value v3
    assert decode_value(records[0].value) == (42, "md", 7, 1234, -1)
    assert records[1].value[:2] == b"\x00\x01"  # v1: explicit expiry
    assert decode_value(records[1].value) == (43, None, -1, 99, 5000)
    assert decode_key(encode_key("g", ("t", 9))) == ("g", ("t", 9))


def test_values_survive_reopen(tmp_path):
    with OffsetManager(tmp_path) as m:
        m.commit("g", {("t", 0): OffsetEntry(1, "a", 3, 111, -1)})
        m.commit("g", {("t", 0): OffsetEntry(2, "b", -1, 222, 999)})
        m.commit("h", {("u", 5): OffsetEntry(9, None, 4, 5)})
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g") == {("t", 0): OffsetEntry(2, "b", -1, 222, 999)}
        assert m.fetch("h") == {("u", 5): OffsetEntry(9, None, 4, 5)}


def test_torn_tail_is_cut_by_log_recovery(tmp_path):
    with OffsetManager(tmp_path) as m:
        m.commit("g", {("t", 0): OffsetEntry(1)})
        m.commit("g", {("t", 0): OffsetEntry(2)})
    (segment,) = _segments(tmp_path)
    (tmp_path / OFFSETS_LOG / ".kclient_clean_shutdown").unlink()  # as after a crash
    segment.write_bytes(segment.read_bytes()[:-3])
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g")[("t", 0)].offset == 1
        m.commit("g", {("t", 0): OffsetEntry(3)})
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g")[("t", 0)].offset == 3
        assert [r.offset for r in read_log(m.log)] == [0, 1]


def test_garbage_tail_is_dropped(tmp_path):
    with OffsetManager(tmp_path) as m:
        m.commit("g", {("t", 0): OffsetEntry(1)})
    (segment,) = _segments(tmp_path)
    size = segment.stat().st_size
    (tmp_path / OFFSETS_LOG / ".kclient_clean_shutdown").unlink()
    with open(segment, "ab") as f:
        f.write(os.urandom(100))
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g")[("t", 0)].offset == 1
    assert segment.stat().st_size == size


def test_cleaning_keeps_latest(tmp_path):
    config = {"offsets.topic.segment.bytes": "2000", "log.cleaner.backoff.ms": "20"}
    with OffsetManager(tmp_path, config) as m:
        for i in range(500):
            m.commit("g", {("t", i % 3): OffsetEntry(i, f"m{i}")})
        m.commit("h", {("t", 0): OffsetEntry(1)})
        m.delete("h")
        m.compact()
        assert m.file_bytes < 4000
    with OffsetManager(tmp_path, config) as m:
        got = m.fetch("g")
        assert {tp: e.offset for tp, e in got.items()} == {
            ("t", 0): 498,
            ("t", 1): 499,
            ("t", 2): 497,
        }
        assert got[("t", 1)].metadata == "m499"
        assert m.fetch("h") == {}


def test_explicit_compact(tmp_path):
    with OffsetManager(tmp_path) as m:
        for i in range(20):
            m.commit("g", {("t", 0): OffsetEntry(i)})
        before = m.file_bytes
        m.compact()
        assert m.file_bytes < before
        m.commit("g", {("t", 1): OffsetEntry(100)})
    with OffsetManager(tmp_path) as m:
        assert {tp: e.offset for tp, e in m.fetch("g").items()} == {("t", 0): 19, ("t", 1): 100}


def test_delete_partitions_and_group(manager):
    manager.commit("g", {("t", 0): OffsetEntry(1), ("t", 1): OffsetEntry(2)})
    manager.delete("g", [("t", 0)])
    assert list(manager.fetch("g")) == [("t", 1)]
    manager.delete("g")
    assert manager.fetch("g") == {} and manager.groups() == []
    values = [r.value for r in read_log(manager.log)]
    assert values[2:] == [None, None], "deletions are tombstones"


def test_expire_respects_retention_and_active_groups(tmp_path):
    with OffsetManager(tmp_path, {"offsets.retention.minutes": "1"}) as m:
        m.commit("old", {("t", 0): OffsetEntry(1, commit_ms=1000)})
        m.commit("busy", {("t", 0): OffsetEntry(1, commit_ms=1000)})
        m.commit("fresh", {("t", 0): OffsetEntry(1, commit_ms=100_000)})
        m.commit("explicit", {("t", 0): OffsetEntry(1, commit_ms=100_000, expire_ms=100_500)})
        removed = m.expire(lambda g: g == "busy", now_ms=101_000)
        assert removed == 2
        assert sorted(m.groups()) == ["busy", "fresh"]
    with OffsetManager(tmp_path) as m:
        assert sorted(m.groups()) == ["busy", "fresh"]


def test_fsync_setting(tmp_path):
    assert OffsetManager(tmp_path).fsync is True
    assert OffsetManager(tmp_path, {"offsets.commit.required.acks": -1}).fsync is True
    assert OffsetManager(tmp_path, {"offsets.commit.required.acks": "1"}).fsync is False
    assert OffsetManager(tmp_path).store.config.flush_interval_messages == 1


def test_no_cleaning_when_cleaner_disabled(tmp_path):
    config = {"offsets.topic.segment.bytes": "300", "log.cleaner.enable": "false"}
    with OffsetManager(tmp_path, config) as m:
        for i in range(50):
            m.commit("g", {("t", 0): OffsetEntry(i)})
        m.compact()
        assert m.cleaner is None and m.file_bytes > 50 * 40


def test_commit_before_start_raises(tmp_path):
    with pytest.raises(RuntimeError):
        OffsetManager(tmp_path).commit("g", {("t", 0): OffsetEntry(1)})


def _legacy_record(payload: dict) -> bytes:
    data = json.dumps(payload).encode()
    return struct.pack(">II", len(data), zlib.crc32(data)) + data


def test_legacy_file_is_imported_once(tmp_path):
    (tmp_path / LEGACY_OFFSETS_FILE).write_bytes(
        _legacy_record(
            {"g": "g", "c": [["t", 0, 5, -1, "m", 10, -1], ["t", 1, 6, 2, None, 11, -1]]}
        )
        + _legacy_record({"g": "g", "d": [["t", 1]]})
        + _legacy_record({"g": "x", "c": [["t", 0, 1, -1, "", 1, -1]]})
        + b"\x00\x00torn"
    )
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g") == {("t", 0): OffsetEntry(5, "m", -1, 10)}
        assert m.fetch("x") == {("t", 0): OffsetEntry(1, "", -1, 1)}
    assert not (tmp_path / LEGACY_OFFSETS_FILE).exists()
    with OffsetManager(tmp_path) as m:
        assert sorted(m.groups()) == ["g", "x"]


def test_offsets_log_stays_bounded_under_100000_commits(tmp_path):
    """100,000 commits over 50 partitions of 10 groups; the cleaner thread keeps the log near
    two segments plus the live offsets.

    The commits come in bursts of 4,000 with a pause until the cleaner thread has caught up:
    like Kafka's, the cleaner does not promise to keep up with any write rate (a tight commit
    loop writes about twice as fast as it cleans, and shares the GIL with it), only to reclaim
    what it has been given time for. (Waiting for one more round instead hung whenever the
    thread had already cleaned up to the active segment during the burst.)"""
    segment = 256 * 1024
    config = {
        "offsets.topic.segment.bytes": str(segment),
        "log.cleaner.backoff.ms": "10",
        "offsets.commit.required.acks": "1",
    }
    peak = 0
    with OffsetManager(tmp_path, config) as m:
        for i in range(100_000):
            m.commit(f"group-{i % 10}", {("topic", i % 50): OffsetEntry(i, "metadata")})
            if i % 1000 == 0:
                peak = max(peak, m.file_bytes)
            if i % 4000 == 3999:
                wait_for(m.cleaner.caught_up, 60, message="the cleaner to catch up")
        m.log.roll()
        m.cleaner.clean(m.log)
        final = m.file_bytes
        rounds = m.cleaner.rounds
    unbounded = 100_000 * 110
    print(
        f"offsets log: peak {peak} bytes, final {final} bytes, {rounds} cleaning rounds, "
        f"uncleaned it would be ~{unbounded} bytes"
    )
    assert rounds >= 5
    assert peak < 6 * segment, peak
    assert final < 60_000
    with OffsetManager(tmp_path, config) as m:
        assert len(m.groups()) == 10
        assert m.fetch("group-9")[("topic", 49)].offset == 99_999
        assert sum(len(m.fetch(g)) for g in m.groups()) == 50
