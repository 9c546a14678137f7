"""Crash safety of cleaning: a cleaning interrupted at each step (``.cleaned`` written, swap
committed, replaced segments deleted, index renamed) is discarded or completed on the next
open, and the log then reads exactly as after an uninterrupted cleaning."""

from __future__ import annotations

import os
import shutil

import pytest

from kclient.broker.log import FileRegion, Log, LogConfig, swap
from kclient.broker.log.cleaner import CleanerCheckpoint, LogCleaner
from kclient.broker.log.cleaning import clean_log, cleanable
from kclient.protocol.records import RecordsReader, build_batch

NOW = 1_700_000_000_000


class Crash(BaseException):
    """Stands for the process dying at a crash point."""


def _config() -> LogConfig:
    return LogConfig(
        segment_bytes=1200,
        index_interval_bytes=100,
        cleanup_policy=("compact",),
        min_cleanable_dirty_ratio=0.0,
    )


def _fill(directory) -> None:
    log = Log(directory, _config())
    for i in range(500):
        value = None if i % 23 == 0 else b"v%d" % i
        log.append(build_batch([value], [b"k%d" % (i % 20)], timestamp=1000 + i), magic=2)
    log.close()


def _read_all(log: Log) -> list[tuple]:
    got, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        region = log.read(offset, 1 << 20)
        data = region.read() if isinstance(region, FileRegion) else region
        batches = list(RecordsReader(data).batches())
        got += [(r.offset, r.key, r.value) for b in batches for r in b.records]
        offset = batches[-1].last_offset + 1
    return got


@pytest.fixture
def reference(tmp_path):
    """(directory with the filled, uncleaned log; records after one full cleaning)."""
    source = tmp_path / "src" / "c-0"
    _fill(source)
    done = tmp_path / "done" / "c-0"
    shutil.copytree(source, done)
    log = Log(done, _config())
    clean_log(cleanable(log, 0, NOW), NOW)
    expected = _read_all(log)
    log.close()
    return source, expected


@pytest.mark.parametrize("step", ["cleaned", "swap", "deleted", "index-renamed"])
def test_interrupted_cleaning_recovers(tmp_path, reference, monkeypatch, step):
    source, expected = reference
    work = tmp_path / "work" / "c-0"
    shutil.copytree(source, work)
    crash_at = "deleted" if step == "index-renamed" else step

    def crash(name: str) -> None:
        if name == crash_at:
            raise Crash(name)

    monkeypatch.setattr(swap, "crash_point", crash)
    monkeypatch.setattr(swap, "discard", lambda *a: None)  # a dead process cleans nothing up
    log = Log(work, _config())
    before = _read_all(log)
    with pytest.raises(Crash):
        clean_log(cleanable(log, 0, NOW), NOW)
    names = os.listdir(work)
    if step == "cleaned":
        assert any(n.endswith(".cleaned") for n in names)
    else:
        assert any(n.endswith(".log.swap") for n in names)
    if step == "index-renamed":
        base = next(int(n[:20]) for n in names if n.endswith(".log.swap"))
        os.replace(*[work / f"{base:020d}.index.swap", work / f"{base:020d}.index"])
    monkeypatch.undo()
    reopened = Log(work, _config())  # no clean-shutdown marker: a crash
    assert not [n for n in os.listdir(work) if n.endswith((".cleaned", ".swap"))]
    got = _read_all(reopened)
    if step == "cleaned":
        assert got == before, "an unfinished cleaning is discarded"
    else:
        first_group_end = reopened.segments[1].base_offset
        assert [g for g in got if g[0] < first_group_end] == [
            e for e in expected if e[0] < first_group_end
        ]
    assert (reopened.log_start_offset, reopened.log_end_offset) == (0, 500)
    clean_log(cleanable(reopened, 0, NOW), NOW)
    assert _read_all(reopened) == expected, "the next round finishes the job"
    reopened.close()


def test_cleaner_thread_cleans_and_checkpoints(tmp_path):
    _fill(tmp_path / "c-0")
    log = Log(tmp_path / "c-0", _config())
    cleaner = LogCleaner(lambda: [log], tmp_path, {"log.cleaner.backoff.ms": "50"})
    assert cleaner.clean_once(NOW) is not None
    point = CleanerCheckpoint(tmp_path / "cleaner-offset-checkpoint").get(("c", 0))
    assert point == log.segments[-1].base_offset
    assert (tmp_path / "cleaner-offset-checkpoint").read_text().startswith("0\n1\nc 0 ")
    assert cleaner.clean_once(NOW) is None, "nothing dirty left"
    keys = {k for _, k, _ in _read_all(log)}
    assert keys == {b"k%d" % i for i in range(20)}
    log.close()


def test_retention_skips_compact_only_logs(tmp_path):
    _fill(tmp_path / "c-0")
    config = _config()
    config.retention_ms = 0
    log = Log(tmp_path / "c-0", config)
    assert log.delete_old_segments(NOW * 2) == 0
    config.cleanup_policy = ("compact", "delete")
    assert log.delete_old_segments(NOW * 2) > 0
    log.close()
