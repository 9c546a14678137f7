"""OffsetManager: durable commits, replay after reopen, torn tails, compaction, expiry."""
from __future__ import annotations

import os

import pytest

from kclient.broker.offsets import OFFSETS_FILE, OffsetEntry, OffsetManager, decode_records


@pytest.fixture
def manager(tmp_path):
    with OffsetManager(tmp_path) as m:
        yield m


def test_commit_and_fetch(manager):
    manager.commit("g", {("t", 0): OffsetEntry(5, "meta"), ("t", 1): OffsetEntry(7)})
    got = manager.fetch("g")
    assert got[("t", 0)].offset == 5 and got[("t", 0)].metadata == "meta"
    assert manager.fetch("g", [("t", 1), ("t", 9)]) == {("t", 1): OffsetEntry(7)}
    assert manager.fetch("other") == {}
    assert manager.groups() == ["g"]


def test_values_survive_reopen(tmp_path):
    with OffsetManager(tmp_path) as m:
        m.commit("g", {("t", 0): OffsetEntry(1, "a", 3, 111, -1)})
        m.commit("g", {("t", 0): OffsetEntry(2, "b", 4, 222, 999)})
        m.commit("h", {("u", 5): OffsetEntry(9)})
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g") == {("t", 0): OffsetEntry(2, "b", 4, 222, 999)}
        assert m.fetch("h") == {("u", 5): OffsetEntry(9)}


def test_torn_tail_is_ignored_and_cut(tmp_path):
    with OffsetManager(tmp_path) as m:
        m.commit("g", {("t", 0): OffsetEntry(1)})
        m.commit("g", {("t", 0): OffsetEntry(2)})
    path = tmp_path / OFFSETS_FILE
    data = path.read_bytes()
    path.write_bytes(data[:-3])  # the last record is torn
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g")[("t", 0)].offset == 1
        m.commit("g", {("t", 0): OffsetEntry(3)})
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g")[("t", 0)].offset == 3
    records, valid = decode_records(path.read_bytes())
    assert valid == path.stat().st_size and len(records) == 2


def test_corrupt_record_and_garbage_tail_are_dropped(tmp_path):
    with OffsetManager(tmp_path) as m:
        m.commit("g", {("t", 0): OffsetEntry(1)})
    path = tmp_path / OFFSETS_FILE
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(os.urandom(100))
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g")[("t", 0)].offset == 1
    assert path.stat().st_size == size
    raw = bytearray(path.read_bytes())
    raw[-2] ^= 0xFF  # flip a payload byte: the CRC no longer matches
    path.write_bytes(bytes(raw))
    with OffsetManager(tmp_path) as m:
        assert m.fetch("g") == {}


def test_compaction_keeps_latest(tmp_path):
    config = {"offsets.topic.segment.bytes": "2000", "log.cleaner.min.cleanable.ratio": "0.5"}
    with OffsetManager(tmp_path, config) as m:
        for i in range(500):
            m.commit("g", {("t", i % 3): OffsetEntry(i, f"m{i}")})
        m.commit("h", {("t", 0): OffsetEntry(1)})
        m.delete("h")
        assert m.file_bytes < 4000
    with OffsetManager(tmp_path, config) as m:
        got = m.fetch("g")
        assert {tp: e.offset for tp, e in got.items()} == {
            ("t", 0): 498, ("t", 1): 499, ("t", 2): 497}
        assert got[("t", 1)].metadata == "m499"
        assert m.fetch("h") == {}


def test_explicit_compact_and_no_leftover_tmp(tmp_path):
    with OffsetManager(tmp_path) as m:
        for i in range(20):
            m.commit("g", {("t", 0): OffsetEntry(i)})
        before = m.file_bytes
        m.compact()
        assert m.file_bytes < before
        m.commit("g", {("t", 1): OffsetEntry(100)})
    assert [p.name for p in tmp_path.iterdir()] == [OFFSETS_FILE]
    with OffsetManager(tmp_path) as m:
        assert {tp: e.offset for tp, e in m.fetch("g").items()} == {("t", 0): 19, ("t", 1): 100}


def test_delete_partitions_and_group(manager):
    manager.commit("g", {("t", 0): OffsetEntry(1), ("t", 1): OffsetEntry(2)})
    manager.delete("g", [("t", 0)])
    assert list(manager.fetch("g")) == [("t", 1)]
    manager.delete("g")
    assert manager.fetch("g") == {} and manager.groups() == []


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


def test_no_automatic_compaction_when_cleaner_disabled(tmp_path):
    config = {"offsets.topic.segment.bytes": "100", "log.cleaner.enable": "false"}
    with OffsetManager(tmp_path, config) as m:
        for i in range(50):
            m.commit("g", {("t", 0): OffsetEntry(i)})
        assert m.file_bytes > 50 * 40


def test_commit_before_start_raises(tmp_path):
    with pytest.raises(RuntimeError):
        OffsetManager(tmp_path).commit("g", {("t", 0): OffsetEntry(1)})
