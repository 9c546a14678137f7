"""Property tests: random records round-trip through every magic and codec; decoders fed
random, truncated or length-lying bytes raise only kclient protocol errors and allocate little."""

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kclient.protocol import compression as c
from kclient.protocol.errors import CorruptRecordError, ProtocolDecodeError, UnsupportedCodecError
from kclient.protocol.records import (
    RecordsReader,
    assign_offsets,
    build_batch,
    build_message_set,
    convert_records,
    iter_entries,
    scan_log,
)
from kclient.protocol.varint import encode_varint
from tests.needs import need_module
from tests.protocol.test_compression import _XXHashShim

ALLOWED = (ProtocolDecodeError, CorruptRecordError, UnsupportedCodecError)
FORMATS = [(m, codec) for m in (0, 1) for codec in (c.NONE, c.GZIP, c.SNAPPY, c.LZ4)] + [
    (2, codec) for codec in (c.NONE, c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD)
]
LIMIT = 1 << 16

maybe_bytes = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.text(max_size=8), maybe_bytes)
record = st.tuples(
    maybe_bytes,
    maybe_bytes,
    st.integers(min_value=0, max_value=1 << 42),
    st.lists(header, max_size=3),
)


def _build(magic, codec, records, base_offset):
    keys = [r[0] for r in records]
    values = [r[1] for r in records]
    stamps = [r[2] for r in records]
    if magic == 2:
        return build_batch(
            values, keys, stamps, [r[3] for r in records], codec=codec, base_offset=base_offset
        )
    return build_message_set(
        values, keys, stamps, magic=magic, codec=codec, base_offset=base_offset
    )


def _expected(magic, records, base_offset):
    return [
        (
            base_offset + i,
            r[2] if magic else -1,
            0 if magic else -1,
            r[0],
            r[1],
            list(r[3]) if magic == 2 else [],
        )
        for i, r in enumerate(records)
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(FORMATS),
    st.lists(record, min_size=1, max_size=20),
    st.integers(min_value=0, max_value=1 << 40),
)
def test_round_trip_every_magic_and_codec(fmt, records, base_offset):
    magic, codec = fmt
    data = _build(magic, codec, records, base_offset)
    got = [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)
        for r in RecordsReader(data)
    ]
    assert got == _expected(magic, records, base_offset)
    infos = list(iter_entries(data))
    assert sum(i.size for i in infos) == len(data) and {i.magic for i in infos} == {magic}
    assert sum(i.record_count for i in infos) == len(records)
    assert len(infos) == (len(records) if magic < 2 and not codec else 1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(FORMATS), st.lists(record, min_size=1, max_size=5)),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from([0, 1, 2]),
)
def test_mixed_buffers_assign_and_convert(groups, target):
    buf = b"".join(_build(m, codec, recs, 0) for (m, codec), recs in groups)
    flat = [r for _, recs in groups for r in recs]
    assigned = assign_offsets(buf, 7)
    assert [r.offset for r in RecordsReader(assigned.data)] == list(range(7, 7 + len(flat)))
    assert assigned.next_offset == 7 + len(flat)
    keep_codec = target == 2 or all(codec != c.ZSTD for (_, codec), _ in groups)
    out = convert_records(assigned.data, target, codec=None if keep_codec else c.GZIP)
    converted = list(RecordsReader(out))
    assert [(r.offset, r.key, r.value) for r in converted] == [
        (7 + i, r[0], r[1]) for i, r in enumerate(flat)
    ]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(FORMATS), st.lists(record, min_size=1, max_size=10))
def test_kafka_python_reads_random_records(fmt, records):
    kp = need_module("kafka.record.memory_records")
    codec_mod = need_module("kafka.codec")
    magic, codec = fmt
    saved = codec_mod.xxhash
    codec_mod.xxhash = _XXHashShim
    try:
        data = _build(magic, codec, records, 0)
        got = []
        for batch in kp.MemoryRecords(data):
            assert batch.validate_crc()
            got.extend((r.offset, r.key, r.value) for r in batch)
    finally:
        codec_mod.xxhash = saved
    if magic == 1 and codec:  # kafka-python only rebases non-negative relative offsets
        assert [g[1:] for g in got] == [(r[0], r[1]) for r in records]
    else:
        assert got == [(i, r[0], r[1]) for i, r in enumerate(records)]


# ------------------------------------------------------------------------------------ fuzzing
def _consume(buf, validate_crc):
    reader = RecordsReader(buf, validate_crc=validate_crc, max_decompressed=LIMIT)
    for batch in reader.batches():
        for rec in batch:
            _ = rec.offset, rec.key, rec.value, rec.headers
    list(RecordsReader(buf, validate_crc=validate_crc, max_decompressed=LIMIT))


def _all_decoders(buf, validate_crc):
    for fn in (
        lambda: _consume(buf, validate_crc),
        lambda: list(iter_entries(buf, validate_crc=validate_crc, max_decompressed=LIMIT)),
        lambda: scan_log(buf, validate_crc=validate_crc, max_decompressed=LIMIT),
        lambda: assign_offsets(buf, 3, max_decompressed=LIMIT),
        lambda: convert_records(buf, 0, codec=c.GZIP, max_decompressed=LIMIT),
        lambda: convert_records(buf, 2, max_decompressed=LIMIT),
    ):
        try:
            fn()
        except ALLOWED:
            pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.booleans())
def test_random_bytes_raise_only_protocol_errors(data, validate_crc):
    _all_decoders(data, validate_crc)


def _valid_buffer(draw):
    groups = draw.draw(
        st.lists(
            st.tuples(st.sampled_from(FORMATS), st.lists(record, min_size=1, max_size=4)),
            min_size=1,
            max_size=3,
        )
    )
    return b"".join(_build(m, codec, recs, 0) for (m, codec), recs in groups)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_truncated_valid_buffers_read_cleanly(draw):
    buf = _valid_buffer(draw)
    cut = draw.draw(st.integers(min_value=0, max_value=len(buf)))
    reader = RecordsReader(buf[:cut])
    assert reader.valid_bytes <= cut
    full = [(r.offset, r.value) for r in RecordsReader(buf)]
    part = [(r.offset, r.value) for r in reader]
    assert part == full[: len(part)]
    assert (reader.valid_bytes == cut) == (not reader.truncated)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_and_length_lying_buffers_raise_only_protocol_errors(draw):
    buf = bytearray(_valid_buffer(draw))
    for _ in range(draw.draw(st.integers(min_value=1, max_value=4))):
        pos = draw.draw(st.integers(min_value=0, max_value=len(buf) - 1))
        kind = draw.draw(st.sampled_from(["byte", "int32", "varint"]))
        if kind == "byte":
            buf[pos] = draw.draw(st.integers(min_value=0, max_value=255))
        elif kind == "int32" and pos + 4 <= len(buf):
            struct.pack_into(">i", buf, pos, draw.draw(st.integers(-(1 << 31), (1 << 31) - 1)))
        else:
            lie = encode_varint(draw.draw(st.integers(-(1 << 40), 1 << 40)))
            buf[pos : pos + len(lie)] = lie
    _all_decoders(bytes(buf), validate_crc=False)
    _all_decoders(bytes(buf), validate_crc=True)


def _peak_allocation(fn):
    tracemalloc.start()
    try:
        fn()
    except ALLOWED:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize(
    "lie",
    [
        "records_count",
        "record_length",
        "key_length",
        "value_length",
        "header_count",
        "batch_length",
    ],
)
def test_lying_lengths_do_not_allocate(lie):
    data = bytearray(
        build_batch([b"v" * 50] * 3, [b"key"] * 3, timestamp=1, headers=[[("h", b"x")]] * 3)
    )
    rec = 61  # first record
    if lie == "records_count":
        struct.pack_into(">i", data, 57, (1 << 31) - 1)
    elif lie == "record_length":
        data[rec : rec + 1] = encode_varint((1 << 31) - 1)
    elif lie == "key_length":
        data[rec + 4 : rec + 5] = encode_varint(1 << 30)
    elif lie == "value_length":
        data[rec + 8 : rec + 9] = encode_varint((1 << 31) - 1)
    elif lie == "header_count":
        data[rec + 60 : rec + 61] = encode_varint(1 << 30)
    else:
        struct.pack_into(">i", data, 8, (1 << 31) - 1)
    payload = bytes(data)
    peak = _peak_allocation(lambda: list(RecordsReader(payload, validate_crc=False)))
    assert peak < 64 * 1024
    reader = RecordsReader(payload, validate_crc=False)
    if lie == "batch_length":  # indistinguishable from a batch cut short by the fetch
        assert list(reader) == [] and reader.truncated
        assert reader.incomplete_size == 12 + (1 << 31) - 1
    else:
        with pytest.raises(ALLOWED):
            list(reader)


@pytest.mark.parametrize("magic", [0, 1])
def test_lying_legacy_lengths_do_not_allocate(magic):
    data = bytearray(build_message_set([b"v" * 50], [b"key"], magic=magic))
    key_len_at = 18 if magic == 0 else 26
    struct.pack_into(">i", data, key_len_at, (1 << 31) - 1)
    payload = bytes(data)
    peak = _peak_allocation(lambda: list(RecordsReader(payload, validate_crc=False)))
    assert peak < 64 * 1024
    with pytest.raises(CorruptRecordError):
        list(RecordsReader(payload, validate_crc=False))


def test_compressed_bomb_in_a_batch_is_bounded():
    data = build_batch([bytes(1 << 20)] * 8, timestamp=1, codec=c.ZSTD)
    assert len(data) < 4096
    with pytest.raises(CorruptRecordError, match="more than"):
        list(RecordsReader(data, max_decompressed=1 << 20))
