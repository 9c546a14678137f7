"""Log basics: golden on-disk bytes, offset assignment, rolling, index lookups, reads."""

import struct
from pathlib import Path

import pytest

from kclient.broker.log import FileRegion, Log, LogConfig
from kclient.protocol.errors import (
    CorruptRecordError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from kclient.protocol.records import GZIP, RecordsReader, build_batch, build_message_set


def segment_files(log: Log) -> list[Path]:
    """The log's segment files, oldest first."""
    return sorted(log.directory.glob("*.log"))


def data_of(result) -> bytes:
    """Bytes of a read result (FileRegion or bytes)."""
    return result.read() if isinstance(result, FileRegion) else result


def first_entry(result):
    """The first complete entry (a Batch) of a read result."""
    return next(RecordsReader(data_of(result)).batches())


def v2_log(tmp_path: Path, **config) -> Log:
    """A format-2 log in ``tmp_path/t-0``."""
    return Log(tmp_path / "t-0", LogConfig(**config))


# ------------------------------------------------------------------ golden on-disk facts
def test_golden_format0_message_is_34_bytes_with_known_crc(tmp_path):
    log = Log(tmp_path / "t-0", LogConfig(message_format_version=0))
    info = log.append(build_message_set([b"value"], [b"key"], magic=0), magic=0)
    data = segment_files(log)[0].read_bytes()
    assert len(data) == 34 == info.bytes
    assert struct.unpack(">qiI", data[:16]) == (0, 22, 592888119)
    assert (info.first_offset, info.last_offset, info.max_timestamp) == (0, 0, -1)


def test_golden_format1_message_is_42_bytes(tmp_path):
    log = Log(tmp_path / "t-0", LogConfig(message_format_version=1))
    log.append(build_message_set([b"value"], [b"key"], magic=1, timestamp=1000), magic=1)
    assert segment_files(log)[0].stat().st_size == 42


def test_golden_format2_batch_is_76_bytes_and_ten_values_add_191(tmp_path):
    log = v2_log(tmp_path)
    log.append(build_batch([b"value"], [b"key"], timestamp=1000), magic=2)
    path = segment_files(log)[0]
    assert path.stat().st_size == 76
    batch = build_batch([b"abcdef"] * 10, timestamp=1000)
    info = log.append(batch, magic=2)
    assert path.stat().st_size == 76 + 191 and info.bytes == 191
    assert (info.first_offset, info.last_offset) == (1, 10)
    stored = path.read_bytes()[76:]
    assert struct.unpack(">q", stored[:8]) == (1,)
    assert stored[8:] == batch[8:]  # only baseOffset changed: CRC and records untouched


def test_segment_file_names_are_20_digit_base_offsets(tmp_path):
    log = v2_log(tmp_path, segment_bytes=150)
    for _ in range(3):
        log.append(build_batch([b"v"] * 5, timestamp=1), magic=2)
    names = [p.name for p in segment_files(log)]
    assert names == [
        "00000000000000000000.log",
        "00000000000000000005.log",
        "00000000000000000010.log",
    ]
    assert all((log.directory / n.replace(".log", ".index")).exists() for n in names)


# ------------------------------------------------------------------ offsets
def test_offsets_are_assigned_across_appends_and_formats(tmp_path):
    log = Log(tmp_path / "t-0", LogConfig(message_format_version=1))
    a = log.append(build_message_set([b"a", b"b"], magic=1, timestamp=5), magic=1)
    b = log.append(build_message_set([b"c", b"d", b"e"], magic=1, codec=GZIP, timestamp=6), magic=1)
    c = log.append(build_message_set([b"f"], magic=1, timestamp=7), magic=1)
    assert [(i.first_offset, i.last_offset) for i in (a, b, c)] == [(0, 1), (2, 4), (5, 5)]
    assert log.log_end_offset == 6
    records = list(RecordsReader(data_of(log.read(0, 1 << 20))))
    assert [(r.offset, r.value) for r in records] == list(
        enumerate([b"a", b"b", b"c", b"d", b"e", b"f"])
    )


def test_v0_compressed_wrapper_gets_absolute_inner_offsets(tmp_path):
    log = Log(tmp_path / "t-0", LogConfig(message_format_version=0))
    log.append(build_message_set([b"a", b"b"], magic=0), magic=0)
    info = log.append(
        build_message_set([b"c", b"d", b"e"], magic=0, codec=GZIP, base_offset=77), magic=0
    )
    assert (info.first_offset, info.last_offset) == (2, 4)
    batch = first_entry(log.read(3, 1 << 20))  # the wrapper starts before offset 3
    assert [r.offset for r in batch.records] == [2, 3, 4]


def test_log_append_time_is_stamped(tmp_path):
    log = v2_log(tmp_path)
    info = log.append(build_batch([b"x", b"y"], timestamp=10), magic=2, log_append_time=5000)
    assert info.log_append_time == 5000 and info.max_timestamp == 5000
    records = list(RecordsReader(data_of(log.read(0, 1000))))
    assert [(r.timestamp, r.timestamp_type) for r in records] == [(5000, 1), (5000, 1)]
    plain = log.append(build_batch([b"z"], timestamp=10), magic=2)
    assert plain.log_append_time == -1 and plain.max_timestamp == 10


def test_append_rejects_bad_input(tmp_path):
    log = v2_log(tmp_path, max_message_bytes=100, segment_bytes=1000)
    with pytest.raises(CorruptRecordError):
        log.append(build_batch([b"x"], timestamp=1)[:-3], magic=2)
    with pytest.raises(CorruptRecordError):
        log.append(b"", magic=2)
    with pytest.raises(MessageSizeTooLargeError):
        log.append(build_batch([b"x" * 200], timestamp=1), magic=2)
    with pytest.raises(RecordListTooLargeError):
        log.append(b"".join(build_batch([b"x" * 30], timestamp=1) for _ in range(20)), magic=2)
    with pytest.raises(ValueError):
        log.append(build_message_set([b"x"], magic=1), magic=2)
    assert log.log_end_offset == 0 and log.size == 0


# ------------------------------------------------------------------ rolling and index
def fill_mixed(log: Log, batches: int) -> list[tuple[int, int]]:
    """Append v2 batches of 1..4 records; return each batch's (first, last) offset."""
    spans = []
    for i in range(batches):
        n = i % 4 + 1
        info = log.append(build_batch([b"value-%03d" % i] * n, timestamp=1000 + i), magic=2)
        spans.append((info.first_offset, info.last_offset))
    return spans


def test_roll_at_segment_bytes(tmp_path):
    log = v2_log(tmp_path, segment_bytes=300, index_interval_bytes=64)
    spans = fill_mixed(log, 30)
    segments = log.segments
    assert len(segments) > 5
    assert all(0 < s.size <= 300 for s in segments)
    bases = [s.base_offset for s in segments]
    assert bases[0] == 0 and set(bases) <= {first for first, _ in spans}
    assert sum(s.size for s in segments) == sum(p.stat().st_size for p in segment_files(log))


def test_segment_roll_by_age(tmp_path, monkeypatch):
    import kclient.broker.log.log as log_module

    clock = [1_000_000]
    monkeypatch.setattr(log_module, "now_ms", lambda: clock[0])
    log = v2_log(tmp_path, segment_ms=1000)
    log.append(build_batch([b"a"], timestamp=1), magic=2)
    clock[0] += 999
    log.append(build_batch([b"b"], timestamp=1), magic=2)
    assert len(log.segments) == 1
    clock[0] += 1
    log.append(build_batch([b"c"], timestamp=1), magic=2)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_read_at_every_offset_returns_the_entry_containing_it(tmp_path):
    log = v2_log(tmp_path, segment_bytes=300, index_interval_bytes=64)
    spans = fill_mixed(log, 40)
    assert any(len(s.index) for s in log.segments)
    for first, last in spans:
        for offset in range(first, last + 1):
            batch = first_entry(log.read(offset, 10_000))
            assert (batch.base_offset, batch.last_offset) == (first, last), offset


def test_read_stays_in_one_segment_and_crosses_boundaries(tmp_path):
    log = v2_log(tmp_path, segment_bytes=300, index_interval_bytes=1)
    fill_mixed(log, 20)
    segments = log.segments
    for prev, seg in zip(segments, segments[1:]):
        boundary = seg.base_offset
        before = log.read(boundary - 1, 1 << 20)
        assert isinstance(before, FileRegion)
        assert before.position + len(before) == prev.size  # ends with its segment
        after = log.read(boundary, 1 << 20)
        assert after.position == 0 and first_entry(after).base_offset == boundary


def test_reopen_gives_same_reads(tmp_path):
    log = v2_log(tmp_path, segment_bytes=300, index_interval_bytes=64)
    spans = fill_mixed(log, 25)
    expected = {o: data_of(log.read(o, 500)) for f, last in spans for o in range(f, last + 1)}
    log.close()
    again = v2_log(tmp_path, segment_bytes=300, index_interval_bytes=64)
    assert (again.log_start_offset, again.log_end_offset) == (0, spans[-1][1] + 1)
    assert {o: data_of(again.read(o, 500)) for o in expected} == expected
    info = again.append(build_batch([b"next"], timestamp=1), magic=2)
    assert info.first_offset == spans[-1][1] + 1


# ------------------------------------------------------------------ reads: limits and range
def test_read_max_bytes_cuts_an_entry(tmp_path):
    log = v2_log(tmp_path)
    for _ in range(3):
        log.append(build_batch([b"value"], [b"key"], timestamp=1), magic=2)  # 76 bytes each
    whole = segment_files(log)[0].read_bytes()
    part = log.read(0, 114)
    assert len(part) == 114 and part.read() == whole[:114]
    reader = RecordsReader(part.read())
    assert reader.valid_bytes == 76 and reader.incomplete_size == 76
    small = log.read(1, 50)  # smaller than the first entry: exactly max_bytes of it
    assert len(small) == 50 and small.read() == whole[76:126]
    assert data_of(log.read(0, 0)) == b""


def test_read_at_end_is_empty_and_outside_is_out_of_range(tmp_path):
    log = v2_log(tmp_path)
    assert data_of(log.read(0, 100)) == b""  # empty log: 0 == log end offset
    log.append(build_batch([b"a", b"b"], timestamp=1), magic=2)
    assert data_of(log.read(2, 100)) == b""
    for bad in (3, 100, -1):
        with pytest.raises(OffsetOutOfRangeError) as err:
            log.read(bad, 100)
        assert f"offset {bad}" in str(err.value) and "[0, 2]" in str(err.value)


def test_file_region_fields(tmp_path):
    log = v2_log(tmp_path)
    log.append(build_batch([b"a"], timestamp=1), magic=2)
    region = log.read(0, 1000)
    assert isinstance(region.file, int) and region.position == 0 and len(region) == region.size
    assert region.fileno() == region.file
