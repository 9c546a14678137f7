"""RecordsReader: partial trailing entries, CRC errors naming offsets, mixed formats, options."""

import struct

import pytest

from kclient.protocol import compression as c
from kclient.protocol.errors import CorruptRecordError
from kclient.protocol.records import (
    Batch,
    BatchInfo,
    Record,
    RecordBatchBuilder,
    RecordsReader,
    build_batch,
    build_message_set,
    check_crcs,
    decode_entries,
    entry_next_offset,
    iter_batches,
    iter_records,
    read_records,
    scan_entries,
)

TS = 1_600_000_000_000


def _entries():
    """Three entries per format, at offsets 0.., 10.., 20.. (v0/v1 plain: one message each)."""
    return {
        0: [build_message_set([b"a%d" % i], [b"k"], magic=0, base_offset=10 * i) for i in range(3)],
        1: [
            build_message_set([b"a%d" % i], None, magic=1, base_offset=10 * i, timestamp=TS)
            for i in range(3)
        ],
        2: [
            build_batch([b"a%d" % i, b"b%d" % i], timestamp=TS, base_offset=10 * i)
            for i in range(3)
        ],
        "wrapped": [
            build_message_set(
                [b"a%d" % i, b"b%d" % i], magic=1, codec=c.GZIP, base_offset=10 * i, timestamp=TS
            )
            for i in range(3)
        ],
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
        expected = 11 if fmt == "wrapped" else 10  # a wrapper carries its last inner offset
        assert info.value.offset == expected
        assert info.value.errno == 2 and f"offset {expected}" in str(info.value)
        assert seen == [r.offset for r in RecordsReader(entries[0])]


def test_crc_validation_can_be_turned_off():
    data = bytearray(build_batch([b"value"], timestamp=TS))
    data[-2] ^= 0xFF  # corrupt the value, not the structure
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
    data = build_batch(
        [b"a", b"b", b"c"],
        [b"k", None, b"k"],
        timestamps=[TS + 5, TS, TS + 9],
        base_offset=40,
        codec=c.LZ4,
        producer_id=77,
        producer_epoch=2,
        base_sequence=9,
        is_transactional=True,
        partition_leader_epoch=4,
    )
    (batch,) = list(iter_batches(data))
    assert isinstance(batch, Batch)
    assert (
        batch.magic,
        batch.position,
        batch.size,
        batch.base_offset,
        batch.last_offset,
        batch.next_offset,
        batch.codec,
        batch.timestamp_type,
        batch.is_transactional,
        batch.is_control,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.last_sequence,
        batch.partition_leader_epoch,
        batch.first_timestamp,
        batch.max_timestamp,
        batch.record_count,
    ) == (2, 0, len(data), 40, 42, 43, c.LZ4, 0, True, False, 77, 2, 9, 11, 4, TS + 5, TS + 9, 3)
    assert [(r.offset, r.timestamp, r.key) for r in batch] == [
        (40, TS + 5, b"k"),
        (41, TS, None),
        (42, TS + 9, b"k"),
    ]


def test_control_batches_are_skipped_unless_asked_for():
    marker = build_batch(
        [b"\x00\x00\x00\x00\x00\x00"],
        [b"\x00\x00\x00\x01"],
        timestamp=TS,
        base_offset=3,
        is_control=True,
        is_transactional=True,
        producer_id=5,
    )
    data = (
        build_batch([b"a", b"b", b"c"], timestamp=TS, is_transactional=True, producer_id=5) + marker
    )
    assert [r.offset for r in RecordsReader(data)] == [0, 1, 2]
    assert [r.offset for r in RecordsReader(data).records(skip_control=False)] == [0, 1, 2, 3]
    assert [b.is_control for b in iter_batches(data)] == [False, True]


def test_start_offset_drops_earlier_records_of_a_v0_wrapper():
    data = build_message_set([b"a", b"b", b"c", b"d"], magic=0, codec=c.SNAPPY, base_offset=20)
    assert [r.offset for r in iter_records(data, start_offset=22)] == [22, 23]


def test_headers_and_records_api():
    data = build_batch(
        [b"v"], [b"k"], headers=[[("trace", b"1"), ("empty", None), ("", b"")]], timestamp=TS
    )
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
        (0, len(data) // 2, 2, 0),
        (len(data) // 2, len(data) // 2, 2, 1),
    ]


def test_builder_class_matches_columnar_build():
    b = RecordBatchBuilder(codec=c.GZIP, base_offset=3, timestamp=TS)
    b.append(b"a")
    b.append(b"b", key=b"k", timestamp=TS + 1, headers=[("h", b"v")])
    assert len(b) == 2
    built = b.build()
    assert built == build_batch(
        [b"a", b"b"],
        [None, b"k"],
        [None, TS + 1],
        [None, [("h", b"v")]],
        codec=c.GZIP,
        base_offset=3,
        timestamp=TS,
    )
    assert [(r.offset, r.timestamp, r.key, r.headers) for r in RecordsReader(built)] == [
        (3, TS, None, []),
        (4, TS + 1, b"k", [("h", b"v")]),
    ]


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
    for build in (
        lambda: build_batch([b"a"], codec="lz4", timestamp=TS),
        lambda: build_message_set([b"a"], magic=1, codec="snappy", timestamp=TS),
    ):
        (batch,) = list(iter_batches(build()))
        assert batch.codec in (c.LZ4, c.SNAPPY) and [r.value for r in batch] == [b"a"]


# ----------------------------------------------------------------------------- column decoding
def _as_written(values, keys=None, timestamps=None, headers=None, base=0, deltas=None):
    n = len(values)
    return [
        (
            base + (i if deltas is None else deltas[i]),
            TS if timestamps is None else timestamps[i],
            0,
            None if keys is None else keys[i],
            values[i],
            [] if headers is None else headers[i],
        )
        for i in range(n)
    ]


def _read(data, **options):
    return [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)
        for r in RecordsReader(data).records(**options)
    ]


@pytest.mark.parametrize("n", [63, 64, 65, 8191, 8193])
def test_record_shapes_changing_inside_a_batch_decode_as_written(n):
    # value lengths cross the 1/2-byte varint bound, timestamp deltas do too, offset deltas
    # cross 64 (and 8192): the cached layouts change record by record
    values = [b"v" * ((i * 7) % 90) for i in range(n)]
    stamps = [TS + (i % 3) * 40 for i in range(n)]
    data = build_batch(values, timestamps=stamps, base_offset=5)
    assert _read(data) == _as_written(values, timestamps=stamps, base=5)
    # the same shapes again: now from the cache
    assert _read(data) == _as_written(values, timestamps=stamps, base=5)


@pytest.mark.parametrize("odd", ["header", "null value", "key", "long value", "gap"])
@pytest.mark.parametrize("where", [0, 70, 199])
def test_one_unusual_record_among_plain_ones(odd, where):
    n = 200
    values = [b"x%d" % i for i in range(n)]
    keys, headers, deltas = None, None, None
    if odd == "header":
        headers = [[("h", b"1")] if i == where else [] for i in range(n)]
    elif odd == "null value":
        values[where] = None
    elif odd == "key":
        keys = [b"k" if i == where else None for i in range(n)]
    elif odd == "long value":
        values[where] = bytes(100_000)
    else:
        deltas = [i + (i >= where) for i in range(n)]
    data = build_batch(values, keys, headers=headers, timestamp=TS, offset_deltas=deltas)
    assert _read(data) == _as_written(values, keys, headers=headers, deltas=deltas)
    start = 100
    assert _read(data, start_offset=start) == [
        r for r in _as_written(values, keys, headers=headers, deltas=deltas) if r[0] >= start
    ]


def test_decode_entries_hands_columns_to_any_factory():
    def rows(offsets, timestamps, types, keys, values, headers, infos):
        none = [None] * len(values)
        return zip(
            offsets,
            none if keys is None else keys,
            values,
            timestamps,
            types,
            none if headers is None else headers,
            infos,
        )

    data = (
        build_message_set([b"a", b"b"], magic=0)
        + build_message_set(
            [b"c", b"d"], [b"k", None], magic=1, codec=c.GZIP, base_offset=2, timestamp=TS
        )
        + build_batch(
            [b"e"],
            [b"k"],
            headers=[[("h", None)]],
            timestamp=TS + 1,
            base_offset=4,
            producer_id=9,
            is_transactional=True,
        )
        + build_batch(
            [b"\x00" * 6],
            [b"\x00" * 4],
            base_offset=5,
            is_control=True,
            is_transactional=True,
            producer_id=9,
        )
        + build_batch([b"f", b"g"], timestamps=[1, 2], timestamp_type=1, base_offset=6)
    )
    got = list(decode_entries(data, scan_entries(data).entries, rows))
    assert [(o, k, v, t, tt, h) for o, k, v, t, tt, h, _ in got] == [
        (0, None, b"a", -1, -1, None),
        (1, None, b"b", -1, -1, None),
        (2, b"k", b"c", TS, 0, None),
        (3, None, b"d", TS, 0, None),
        (4, b"k", b"e", TS + 1, 0, [("h", None)]),
        (6, None, b"f", 2, 1, None),
        (7, None, b"g", 2, 1, None),
    ]
    infos = [info for *_, info in got]
    assert infos[0] == BatchInfo(0) and infos[2] == BatchInfo(1, c.GZIP)
    assert infos[4] == BatchInfo(2, 0, True, 9) and infos[5].magic == 2
    assert [
        r[0]
        for r in decode_entries(
            data, scan_entries(data).entries, rows, start_offset=3, skip_control=False
        )
    ] == [3, 4, 5, 6, 7]
    # the default factory is the Record one that RecordsReader uses
    assert [r.offset for r in decode_entries(data, scan_entries(data).entries)] == [
        r.offset for r in RecordsReader(data)
    ]


def test_check_crcs_and_entry_next_offset():
    good = build_batch([b"a", b"b"], timestamp=TS) + build_message_set(
        [b"c"], magic=1, base_offset=2
    )
    bad = bytearray(build_batch([b"d"], timestamp=TS, base_offset=3))
    bad[-1] ^= 1
    data = good + bytes(bad)
    spans = scan_entries(data).entries
    count, error = check_crcs(data, spans)
    assert count == 2 and error.offset == 3 and "CRC-32C" in str(error)
    assert [entry_next_offset(data, s) for s in spans] == [2, 3, 4]


def test_null_key_and_value_in_a_long_varint_still_read_as_null():
    data = bytearray(build_batch([b"v"], timestamp=TS))
    record = data[61:]
    assert record == b"\x0e\x00\x00\x00\x01\x02v\x00"
    # the same record, key length -1 written in two bytes (0x81 0x00), then a null value too
    for new in (b"\x10\x00\x00\x00\x81\x00\x02v\x00", b"\x10\x00\x00\x00\x81\x00\x81\x00\x00"):
        patched = data[:61] + new
        struct.pack_into(">i", patched, 8, len(patched) - 12)
        (rec,) = list(RecordsReader(bytes(patched), validate_crc=False))
        assert rec.key is None and rec.value == (b"v" if b"v" in new else None)
