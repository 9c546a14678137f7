"""Retention, flush policy and offsets by time."""

import os
import threading
import time
from pathlib import Path

import pytest

from kclient.broker.log import FileRegion, Log, LogConfig
from kclient.protocol.errors import OffsetOutOfRangeError
from kclient.protocol.records import GZIP, RecordsReader, build_batch, build_message_set

DAY_MS = 24 * 3600 * 1000


def open_log(tmp_path: Path, **config) -> Log:
    """The log in ``tmp_path/t-0`` with 400-byte segments unless told otherwise."""
    return Log(tmp_path / "t-0", LogConfig(**{"segment_bytes": 400, **config}))


def fill(log: Log, count: int) -> None:
    """Append ``count`` single-record batches (timestamps 1000 + i)."""
    for i in range(count):
        log.append(build_batch([b"value-%04d" % i], timestamp=1000 + i), magic=2)


def age(log: Log, segment_index: int, mtime_s: float) -> None:
    """Set a segment's modification time."""
    os.utime(log.segments[segment_index].log_path, (mtime_s, mtime_s))


# ------------------------------------------------------------------ retention
def test_retention_by_time_deletes_old_segments_while_a_reader_holds_one(tmp_path):
    log = open_log(tmp_path, retention_ms=DAY_MS)
    fill(log, 40)
    segments = log.segments
    assert len(segments) >= 4
    old = time.time() - 3 * 24 * 3600
    age(log, 0, old)
    age(log, 1, old)
    held = log.read(0, 1 << 20)
    expected = segments[0].log_path.read_bytes()[: len(held)]
    deleted = log.delete_old_segments(int(time.time() * 1000))
    assert deleted == 2
    assert log.log_start_offset == segments[2].base_offset
    assert not segments[0].log_path.exists() and not segments[1].log_path.exists()
    assert held.read() == expected  # the unlinked file is still readable through the region
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert log.offsets_before(-2, 1) == [segments[2].base_offset]


def test_retention_by_time_stops_at_the_first_young_segment(tmp_path):
    log = open_log(tmp_path, retention_ms=DAY_MS)
    fill(log, 40)
    age(log, 1, time.time() - 3 * 24 * 3600)  # segment 0 is young: nothing goes
    assert log.delete_old_segments(int(time.time() * 1000)) == 0


def test_retention_of_everything_rolls_an_empty_active_segment(tmp_path):
    log = open_log(tmp_path, retention_ms=1000)
    fill(log, 25)
    end = log.log_end_offset
    deleted = log.delete_old_segments(int(time.time() * 1000) + 10_000)
    assert deleted >= 2
    assert log.log_start_offset == log.log_end_offset == end
    assert [s.base_offset for s in log.segments] == [end] and log.segments[0].size == 0
    assert log.read(end, 100) == b""
    assert log.append(build_batch([b"more"]), magic=2).first_offset == end
    assert log.delete_old_segments(int(time.time() * 1000)) == 0


def test_retention_by_size(tmp_path):
    log = open_log(tmp_path, retention_bytes=900, retention_ms=-1)
    fill(log, 40)
    sizes = [s.size for s in log.segments]
    total = sum(sizes)
    expect, excess = 0, total - 900
    for size in sizes:
        if excess - size < 0:
            break
        excess -= size
        expect += 1
    assert expect >= 1
    first_kept = log.segments[expect].base_offset
    assert log.delete_old_segments(int(time.time() * 1000)) == expect
    assert log.size <= 900 + sizes[expect] and log.log_start_offset == first_kept
    assert log.delete_old_segments(int(time.time() * 1000)) == 0


def test_unlimited_retention_keeps_everything(tmp_path):
    log = open_log(tmp_path, retention_ms=-1, retention_bytes=-1)
    fill(log, 30)
    age(log, 0, 0)
    assert log.delete_old_segments(int(time.time() * 1000)) == 0


def test_reads_and_retention_race_with_appends(tmp_path):
    log = open_log(tmp_path, segment_bytes=300, retention_bytes=1200, retention_ms=-1)
    stop, errors = threading.Event(), []

    def reader():
        while not stop.is_set():
            start = log.log_start_offset
            try:
                result = log.read(start, 600)
            except OffsetOutOfRangeError:
                continue  # retention moved the start: fine
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)
                return
            data = result.read() if isinstance(result, FileRegion) else result
            for rec in RecordsReader(data):
                if rec.value != b"value-%04d" % rec.offset:
                    errors.append(AssertionError(rec))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(200):
        log.append(build_batch([b"value-%04d" % i], timestamp=1), magic=2)
        if i % 20 == 0:
            log.delete_old_segments(int(time.time() * 1000))
    stop.set()
    for t in threads:
        t.join()
    assert not errors and log.log_end_offset == 200 and log.log_start_offset > 0


# ------------------------------------------------------------------ flush policy
@pytest.fixture
def fsyncs(monkeypatch):
    """Record the path of every fsynced file descriptor."""
    calls: list[str] = []
    real = os.fsync

    def counting(fd):
        calls.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def log_fsyncs(calls: list[str]) -> int:
    """How many fsyncs hit a segment (.log) file."""
    return sum(1 for path in calls if path.endswith(".log"))


def test_flush_every_m_messages(tmp_path, fsyncs):
    log = open_log(tmp_path, segment_bytes=1 << 20, flush_interval_messages=3)
    fill(log, 2)
    assert log_fsyncs(fsyncs) == 0
    fill(log, 1)
    assert log_fsyncs(fsyncs) == 1
    fill(log, 4)
    assert log_fsyncs(fsyncs) == 2
    log.append(build_batch([b"x"] * 5, timestamp=1), magic=2)  # five messages at once
    assert log_fsyncs(fsyncs) == 3
    log.flush()
    assert log_fsyncs(fsyncs) == 3  # nothing new was written since
    fill(log, 1)
    log.flush()
    assert log_fsyncs(fsyncs) == 4


def test_default_policy_leaves_flushing_to_the_os(tmp_path, fsyncs):
    log = open_log(tmp_path, segment_bytes=1 << 20)
    fill(log, 50)
    assert log_fsyncs(fsyncs) == 0
    log.close()
    assert log_fsyncs(fsyncs) == 1  # close flushes


def test_flush_every_s_ms(tmp_path, fsyncs):
    log = open_log(tmp_path, segment_bytes=1 << 20, flush_interval_ms=1000)
    now = int(time.time() * 1000)
    assert not log.maybe_flush(now + 5000)  # nothing pending
    fill(log, 3)
    assert not log.maybe_flush(now)
    assert log.maybe_flush(now + 5000) and log_fsyncs(fsyncs) == 1
    assert not log.maybe_flush(now + 10_000)


def test_roll_flushes_the_finished_segment(tmp_path, fsyncs):
    log = open_log(tmp_path, segment_bytes=300)
    fill(log, 5)
    first = log.segments[0].log_path
    fill(log, 10)
    assert str(first) in fsyncs


# ------------------------------------------------------------------ offsets by time
def test_offsets_before(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    for i in range(len(bases) - 1):
        age(log, i, 1000 * (i + 1))  # segment i last modified at (i + 1) * 1000 s
    end = log.log_end_offset
    assert log.offsets_before(-1, 100) == [end] + bases[::-1]
    assert log.offsets_before(-1, 2) == [end, bases[-1]]
    assert log.offsets_before(-2, 100) == [0]
    assert log.offsets_before(1_500_000, 100) == [0]
    assert log.offsets_before(2_000_000, 100) == [bases[1], 0]
    assert log.offsets_before(999_999, 100) == []
    assert log.offsets_before(-1, 0) == []


def test_offsets_before_with_empty_active_segment(tmp_path):
    log = open_log(tmp_path)
    assert log.offsets_before(-1, 10) == [0] and log.offsets_before(-2, 10) == [0]


def test_offset_for_timestamp(tmp_path):
    log = open_log(tmp_path)
    log.append(build_batch([b"a", b"b", b"c"], timestamps=[100, 300, 200]), magic=2)
    fill(log, 30)  # timestamps 1000..1029, several segments
    assert log.offset_for_timestamp(-1) == (log.log_end_offset, -1)
    assert log.offset_for_timestamp(-2) == (0, -1)
    assert log.offset_for_timestamp(0) == (0, 100)
    assert log.offset_for_timestamp(150) == (1, 300)  # first record stamped >= 150
    assert log.offset_for_timestamp(301) == (3, 1000)
    assert log.offset_for_timestamp(1017) == (20, 1017)
    assert log.offset_for_timestamp(1029) == (32, 1029)
    assert log.offset_for_timestamp(1030) is None
    log.close()
    again = open_log(tmp_path)  # max timestamps recomputed lazily
    assert again.offset_for_timestamp(1017) == (20, 1017)


def test_offset_for_timestamp_in_v1_wrappers_and_log_append_time(tmp_path):
    log = open_log(tmp_path, message_format_version=1)
    log.append(build_message_set([b"a", b"b"], timestamps=[10, 20], magic=1, codec=GZIP), magic=1)
    log.append(build_message_set([b"c"], timestamps=[30], magic=1), magic=1, log_append_time=5000)
    assert log.offset_for_timestamp(15) == (1, 20)
    assert log.offset_for_timestamp(31) == (2, 5000)


def test_offset_for_timestamp_on_format_0_finds_nothing(tmp_path):
    log = open_log(tmp_path, message_format_version=0)
    log.append(build_message_set([b"a"], magic=0), magic=0)
    assert log.offset_for_timestamp(0) is None
