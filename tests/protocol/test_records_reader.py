"""RecordsReader: partial trailing entries, CRC errors naming offsets, mixed formats, options."""
import struct

import pytest

from kclient.protocol import compression as c
from kclient.protocol.errors import CorruptRecordError
from kclient.protocol.records import (
    Batch, Record, RecordBatchBuilder, RecordsReader, build_batch, build_message_set,
    iter_batches, iter_records, read_records, scan_entries,
)

TS = 1_600_000_000_000


def _entries():
    """Three entries per format, at offsets 0.., 10.., 20.. (v0/v1 plain: one message each)."""
    return {
        0: [build_message_set([b"a%d" % i], [b"k"], magic=0, base_offset=10 * i) for i in range(3)],
        1: [build_message_set([b"a%d" % i], None, magic=1, base_offset=10 * i, timestamp=TS)
            for i in range(3)],
        2: [build_batch([b"a%d" % i, b"b%d" % i], timestamp=TS, base_offset=10 * i)
            for i in range(3)],
        "wrapped": [build_message_set([b"a%d" % i, b"b%d" % i], magic=1, codec=c.GZIP,
                                      base_offset=10 * i, timestamp=TS) for i in range(3)],
    }


@pytest.mark.parametrize("fmt", [0, 1, 2, "wrapped"])
def test_partial_trailing_entry_is_tolerated(fmt):
    first, second, _ = _entries()[fmt]
    for cut in range(1, len(second)):
        reader = RecordsReader(first + second[:cut])
        assert [r.offset for r in reader] == [r.offset for r in RecordsReader(first)]
        assert reader.valid_bytes == len(first)
        assert reader.truncated
        assert reader.incomplete_size == (len(second) if cut >= 12 else None)


@pytest.mark.parametrize("fmt", [0, 1, 2, "wrapped"])
def test_first_entry_incomplete_reports_the_size_it_needs(fmt):
    entry = _entries()[fmt][0]
    for cut in (12, 17, len(entry) - 1):
        reader = RecordsReader(entry[:cut])
        assert list(reader) == [] and list(reader.batches()) == []
        assert reader.valid_bytes == 0 and reader.incomplete_size == len(entry)
    empty = RecordsReader(b"")
    assert (empty.valid_bytes, empty.incomplete_size, empty.truncated) == (0, None, False)


def _crc_covered_positions(fmt, entry):
    start = 21 if fmt == 2 else 16
    return [12 if fmt != 2 else 17, start, start + 1, len(entry) // 2, len(entry) - 1]


@pytest.mark.parametrize("fmt", [0, 1, 2, "wrapped"])
def test_flipped_byte_raises_corrupt_record_naming_the_offset(fmt):
    entries = _entries()[fmt]
    for pos in _crc_covered_positions(fmt, entries[1]):
        bad = bytearray(entries[1])
        bad[pos] ^= 0x01
        reader = RecordsReader(entries[0] + bytes(bad) + entries[2])
        seen = []
        with pytest.raises(CorruptRecordError) as info:
            for rec in reader:
                seen.append(rec.offset)
        expected = 11 if fmt == "wrapped" else 10   # a wrapper carries its last inner offset
        assert info.value.offset == expected
        assert info.value.errno == 2 and "offset %d" % expected in str(info.value)
        assert seen == [r.offset for r in RecordsReader(entries[0])]


def test_crc_validation_can_be_turned_off():
    data = bytearray(build_batch([b"value"], timestamp=TS))
    data[-2] ^= 0xFF                                   # corrupt the value, not the structure
    assert [r.value for r in RecordsReader(bytes(data), validate_crc=False)] != [b"value"]
    with pytest.raises(CorruptRecordError):
        list(RecordsReader(bytes(data)))


@pytest.mark.parametrize("size", [-1, 0, 13])
def test_impossible_entry_size_is_corrupt_after_the_good_entries(size):
    good = build_batch([b"x"], timestamp=TS)
    bad = struct.pack(">qi", 7, size) + b"\x00" * 30
    reader = RecordsReader(good + bad)
    assert reader.valid_bytes == len(good)
    it = iter(reader)
    assert next(it).value == b"x"
    with pytest.raises(CorruptRecordError) as info:
        next(it)
    assert info.value.offset == 7


def test_unknown_magic_is_corrupt():
    data = bytearray(build_batch([b"x"], timestamp=TS))
    data[16] = 3
    with pytest.raises(CorruptRecordError, match="magic"):
        list(RecordsReader(bytes(data)))


def test_v2_declared_size_must_match_the_records():
    good = build_batch([b"x", b"y"], timestamp=TS)
    bad = bytearray(good + b"\x00\x00")
    struct.pack_into(">i", bad, 8, len(good) - 12 + 2)
    with pytest.raises(CorruptRecordError, match="left"):
        list(RecordsReader(bytes(bad), validate_crc=False))


def test_batches_expose_metadata():
    data = build_batch([b"a", b"b", b"c"], [b"k", None, b"k"], timestamps=[TS + 5, TS, TS + 9],
                       base_offset=40, codec=c.LZ4, producer_id=77, producer_epoch=2,
                       base_sequence=9, is_transactional=True, partition_leader_epoch=4)
    (batch,) = list(iter_batches(data))
    assert isinstance(batch, Batch)
    assert (batch.magic, batch.position, batch.size, batch.base_offset, batch.last_offset,
            batch.next_offset, batch.codec, batch.timestamp_type, batch.is_transactional,
            batch.is_control, batch.producer_id, batch.producer_epoch, batch.base_sequence,
            batch.last_sequence, batch.partition_leader_epoch, batch.first_timestamp,
            batch.max_timestamp, batch.record_count) == (
        2, 0, len(data), 40, 42, 43, c.LZ4, 0, True, False, 77, 2, 9, 11, 4, TS + 5, TS + 9, 3)
    assert [(r.offset, r.timestamp, r.key) for r in batch] == [
        (40, TS + 5, b"k"), (41, TS, None), (42, TS + 9, b"k")]


def test_control_batches_are_skipped_unless_asked_for():
    marker = build_batch([b"\x00\x00\x00\x00\x00\x00"], [b"\x00\x00\x00\x01"], timestamp=TS,
                         base_offset=3, is_control=True, is_transactional=True, producer_id=5)
    data = build_batch([b"a", b"b", b"c"], timestamp=TS, is_transactional=True,
                       producer_id=5) + marker
    assert [r.offset for r in RecordsReader(data)] == [0, 1, 2]
    assert [r.offset for r in RecordsReader(data).records(skip_control=False)] == [0, 1, 2, 3]
    assert [b.is_control for b in iter_batches(data)] == [False, True]


def test_start_offset_drops_earlier_records_of_a_v0_wrapper():
    data = build_message_set([b"a", b"b", b"c", b"d"], magic=0, codec=c.SNAPPY, base_offset=20)
    assert [r.offset for r in iter_records(data, start_offset=22)] == [22, 23]


def test_headers_and_records_api():
    data = build_batch([b"v"], [b"k"], headers=[[("trace", b"1"), ("empty", None), ("", b"")]],
                       timestamp=TS)
    (rec,) = list(RecordsReader(data))
    assert rec.headers == [("trace", b"1"), ("empty", None), ("", b"")]
    offset, ts, ts_type, key, value, headers = rec
    assert (offset, ts, ts_type, key, value) == (0, TS, 0, b"k", b"v")
    assert rec == Record(0, TS, 0, b"k", b"v", list(headers))
    assert rec.replace(offset=5).offset == 5 and "trace" in repr(rec)
    plain = next(iter(RecordsReader(build_batch([b"v"], timestamp=TS))))
    assert plain.headers == [] and plain.headers is plain.headers


def test_read_records_helper_and_scan_entries():
    data = build_batch([b"a"], timestamp=TS) + build_batch([b"b"], timestamp=TS, base_offset=1)
    records, valid, needed = read_records(data + data[:20])
    assert [r.value for r in records] == [b"a", b"b"]
    assert (valid, needed) == (len(data), len(data) // 2)
    scan = scan_entries(data)
    assert [(e.position, e.size, e.magic, e.offset) for e in scan.entries] == [
        (0, len(data) // 2, 2, 0), (len(data) // 2, len(data) // 2, 2, 1)]


def test_builder_class_matches_columnar_build():
    b = RecordBatchBuilder(codec=c.GZIP, base_offset=3, timestamp=TS)
    b.append(b"a")
    b.append(b"b", key=b"k", timestamp=TS + 1, headers=[("h", b"v")])
    assert len(b) == 2
    built = b.build()
    assert built == build_batch([b"a", b"b"], [None, b"k"], [None, TS + 1], [None, [("h", b"v")]],
                                codec=c.GZIP, base_offset=3, timestamp=TS)
    assert [(r.offset, r.timestamp, r.key, r.headers) for r in RecordsReader(built)] == [
        (3, TS, None, []), (4, TS + 1, b"k", [("h", b"v")])]


def test_large_values_and_offset_deltas_use_long_varints():
    big = b"x" * 100_000
    n = 20_000
    data = build_batch([big, b"y"], timestamp=TS, offset_deltas=[0, n])
    recs = list(RecordsReader(data))
    assert [(r.offset, len(r.value)) for r in recs] == [(0, len(big)), (n, 1)]
    many = build_batch([b"v"] * n, timestamps=[TS - i for i in range(n)])
    recs = list(RecordsReader(many))
    assert recs[-1].offset == n - 1 and recs[-1].timestamp == TS - n + 1


def test_builders_reject_bad_input():
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([b"a"], keys=[b"k", b"l"])
    with pytest.raises(ValueError):
        build_message_set([b"a"], magic=2)


def test_codecs_can_be_named():
    for build in (lambda: build_batch([b"a"], codec="lz4", timestamp=TS),
                  lambda: build_message_set([b"a"], magic=1, codec="snappy", timestamp=TS)):
        (batch,) = list(iter_batches(build()))
        assert batch.codec in (c.LZ4, c.SNAPPY) and [r.value for r in batch] == [b"a"]
