"""Recovery after an unclean shutdown: the log ends at the last valid entry."""

import os
from pathlib import Path

import pytest

from kclient.broker.log import FileRegion, Log, LogConfig
from kclient.broker.log.log import CLEAN_SHUTDOWN
from kclient.protocol.records import RecordsReader, build_batch, build_message_set

CONFIG = dict(segment_bytes=400, index_interval_bytes=64)


def open_log(tmp_path: Path, recovery_point: int = 0, **config) -> Log:
    """The log in ``tmp_path/t-0`` with small segments."""
    return Log(tmp_path / "t-0", LogConfig(**{**CONFIG, **config}), recovery_point=recovery_point)


def fill(log: Log, count: int, magic: int = 2) -> list[int]:
    """Append ``count`` single-record entries; return the segment size after each."""
    for i in range(count):
        value = b"value-%04d" % i
        if magic == 2:
            log.append(build_batch([value], timestamp=1000 + i), magic=2)
        else:
            log.append(build_message_set([value], magic=magic, timestamp=1000 + i), magic=magic)
    return [s.size for s in log.segments]


def values(log: Log) -> list[bytes]:
    """Every record value in the log, in offset order, read segment by segment."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        data = result.read() if isinstance(result, FileRegion) else result
        records = [r for r in RecordsReader(data) if r.offset >= offset]
        out += [r.value for r in records]
        offset = records[-1].offset + 1
    return out


def newest(log: Log) -> Path:
    """Path of the active segment file."""
    return log.segments[-1].log_path


def crash(log: Log) -> None:
    """Simulate a crash: the log is abandoned without close (no clean-shutdown marker)."""
    assert not (log.directory / CLEAN_SHUTDOWN).exists()


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_garbage_block_appended_to_newest_segment_is_cut(tmp_path, magic):
    log = open_log(tmp_path, message_format_version=magic)
    fill(log, 30, magic)
    end, size = log.log_end_offset, newest(log).stat().st_size
    crash(log)
    with open(newest(log), "ab") as f:
        f.write(os.urandom(300))
    again = open_log(tmp_path, message_format_version=magic)
    assert again.log_end_offset == end
    assert newest(again).stat().st_size == size
    assert values(again) == [b"value-%04d" % i for i in range(30)]
    assert (
        again.append(
            build_message_set([b"new"], magic=magic) if magic < 2 else build_batch([b"new"]),
            magic=magic,
        ).first_offset
        == end
    )


def test_zero_filled_block_is_cut(tmp_path):
    log = open_log(tmp_path)
    fill(log, 10)
    size = newest(log).stat().st_size
    with open(newest(log), "ab") as f:
        f.write(b"\0" * 4096)  # inode grew, data blocks never written
    again = open_log(tmp_path)
    assert again.log_end_offset == 10 and newest(again).stat().st_size == size


def test_tail_cut_mid_entry(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)
    end = log.log_end_offset
    path = newest(log)
    crash(log)
    os.truncate(path, path.stat().st_size - 10)
    again = open_log(tmp_path)
    assert again.log_end_offset == end - 1
    assert values(again) == [b"value-%04d" % i for i in range(29)]
    info = again.append(build_batch([b"after"], timestamp=1), magic=2)
    assert info.first_offset == end - 1
    assert values(again)[-1] == b"after"


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_flipped_byte_in_last_entry(tmp_path, magic):
    log = open_log(tmp_path, message_format_version=magic)
    fill(log, 12, magic)
    path = newest(log)
    crash(log)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the last value: only the CRC can notice
    path.write_bytes(bytes(data))
    again = open_log(tmp_path, message_format_version=magic)
    assert again.log_end_offset == 11
    assert values(again) == [b"value-%04d" % i for i in range(11)]


def test_recovery_rebuilds_the_index(tmp_path):
    log = open_log(tmp_path, segment_bytes=10_000, index_interval_bytes=100)
    fill(log, 80)
    seg = log.segments[-1]
    entries = seg.index.entries()
    assert len(entries) > 5
    crash(log)
    seg.index.path.write_bytes(b"\x07" * 13)  # garbage index
    again = open_log(tmp_path, segment_bytes=10_000, index_interval_bytes=100)
    assert again.segments[-1].index.entries() == entries
    assert seg.index.path.stat().st_size == 8 * len(entries)
    for offset in range(80):
        batch = next(RecordsReader(again.read(offset, 200).read()).batches())
        assert batch.base_offset == offset


def test_clean_shutdown_marker_written_on_close_removed_on_open(tmp_path):
    log = open_log(tmp_path)
    fill(log, 5)
    log.close()
    marker = log.directory / CLEAN_SHUTDOWN
    assert marker.exists()
    again = open_log(tmp_path)
    assert not marker.exists() and again.log_end_offset == 5


def test_clean_shutdown_with_broken_index_is_rebuilt(tmp_path):
    log = open_log(tmp_path, index_interval_bytes=32)
    fill(log, 40)
    log.close()
    for index in log.directory.glob("*.index"):
        index.write_bytes(b"\xff" * 20)
    again = open_log(tmp_path, index_interval_bytes=32)
    assert values(again) == [b"value-%04d" % i for i in range(40)]


def test_only_segments_from_the_recovery_point_are_scanned(tmp_path):
    log = open_log(tmp_path)
    fill(log, 40)
    segments = log.segments
    assert len(segments) >= 3
    point = log.recovery_point
    assert point == segments[-1].base_offset  # the rolled segments were flushed
    crash(log)
    old = bytearray(segments[0].log_path.read_bytes())
    old[-3] ^= 0xFF  # corrupt an old, flushed segment: not rescanned (as in Kafka)
    segments[0].log_path.write_bytes(bytes(old))
    again = open_log(tmp_path, recovery_point=point)
    assert again.log_end_offset == 40 and len(again.segments) == len(segments)


def test_without_recovery_point_all_segments_are_checked(tmp_path):
    log = open_log(tmp_path)
    fill(log, 40)
    segments = log.segments
    crash(log)
    middle = segments[1]
    data = bytearray(middle.log_path.read_bytes())
    data[-3] ^= 0xFF
    middle.log_path.write_bytes(bytes(data))
    again = open_log(tmp_path)  # recovery point 0: none checkpointed
    # the corrupt middle entry and everything after it are gone
    assert again.log_end_offset == segments[2].base_offset - 1
    assert [s.base_offset for s in again.segments] == [s.base_offset for s in segments[:2]]
    assert not segments[2].log_path.exists()
    assert values(again) == [b"value-%04d" % i for i in range(again.log_end_offset)]


def test_newest_segment_entirely_garbage(tmp_path):
    log = open_log(tmp_path)
    fill(log, 40)
    segments = log.segments
    crash(log)
    segments[-1].log_path.write_bytes(os.urandom(segments[-1].size))
    again = open_log(tmp_path)
    assert again.log_end_offset == segments[-1].base_offset
    assert again.segments[-1].size == 0
    assert again.append(build_batch([b"x"]), magic=2).first_offset == segments[-1].base_offset


def test_recover_false_trusts_the_files_but_the_last_entry(tmp_path):
    log = open_log(tmp_path)
    fill(log, 8)
    path = newest(log)
    crash(log)
    data = bytearray(path.read_bytes())
    first = len(build_batch([b"value-0000"], timestamp=1000)) - 3  # in the first entry
    data[first] ^= 0xFF
    path.write_bytes(bytes(data))
    trusted = Log(tmp_path / "t-0", LogConfig(**CONFIG), recover=False)
    assert trusted.log_end_offset == 8  # offsets in order, CRCs not checked but the last one's
    data[first] ^= 0xFF
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    trusted = Log(tmp_path / "t-0", LogConfig(**CONFIG), recover=False)
    assert trusted.log_end_offset == 7  # the entry that sets the log end offset is checked
