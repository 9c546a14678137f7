"""Cross-implementation tests against kafka-python 3.x's record readers and builders.

What kclient writes, kafka-python reads (MemoryRecords / LegacyRecordBatch / DefaultRecordBatch)
and vice versa, for magic 0, 1, 2 and every codec kafka-python supports for that magic.
"""

import struct

import pytest

from kclient.protocol import compression as c
from kclient.protocol.records import RecordsReader, build_batch, build_message_set
from tests.needs import need_module

kafka_record = need_module("kafka.record")
from kafka import codec as kp_codec  # noqa: E402
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder  # noqa: E402
from kafka.record.memory_records import MemoryRecords  # noqa: E402

from tests.protocol.test_compression import _XXHashShim  # noqa: E402

TS = 1_700_000_000_000
LEGACY_CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4]
V2_CODECS = LEGACY_CODECS + [c.ZSTD]
CASES = [(m, codec) for m in (0, 1) for codec in LEGACY_CODECS] + [
    (2, codec) for codec in V2_CODECS
]


@pytest.fixture(autouse=True)
def _xxhash_for_kafka_python(monkeypatch):
    """kafka-python needs the xxhash package for magic-0 LZ4; give it kclient's xxh32."""
    monkeypatch.setattr(kp_codec, "xxhash", _XXHashShim)


def _columns(n=25):
    values = [b"value-%03d" % i * (i % 4 + 1) for i in range(n)]
    values[3] = None  # a tombstone
    values[4] = b""
    keys = [None if i % 3 == 0 else b"key-%d" % i for i in range(n)]
    timestamps = [TS + (i * 37) % 500 - 100 for i in range(n)]
    headers = [
        [] if i % 2 else [(f"h{j}", None if j == 1 else b"v%d" % i) for j in range(i % 4)]
        for i in range(n)
    ]
    return values, keys, timestamps, headers


def _kp_fields(rec, magic):
    ts = rec.timestamp if rec.timestamp is not None else -1
    ts_type = rec.timestamp_type if rec.timestamp_type is not None else -1
    headers = list(rec.headers) if magic == 2 else []
    return (rec.offset, ts, ts_type, rec.key, rec.value, headers)


def _kc_fields(rec):
    return (rec.offset, rec.timestamp, rec.timestamp_type, rec.key, rec.value, rec.headers)


def _kafka_python_read(data):
    out = []
    for batch in MemoryRecords(bytes(data)):
        assert batch.validate_crc()
        out.extend(_kp_fields(r, batch.magic) for r in batch)
    return out


def _kclient_write(magic, codec, values, keys, timestamps, headers, base_offset):
    if magic == 2:
        return build_batch(
            values,
            keys,
            timestamps,
            headers,
            codec=codec,
            base_offset=base_offset,
            producer_id=4242,
            producer_epoch=3,
            base_sequence=17,
        )
    return build_message_set(
        values, keys, timestamps, magic=magic, codec=codec, base_offset=base_offset
    )


def _kafka_python_write(magic, codec, values, keys, timestamps, headers, base_offset):
    n = len(values)
    if magic == 2:
        b = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=codec,
            is_transactional=False,
            producer_id=4242,
            producer_epoch=3,
            base_sequence=17,
            batch_size=1 << 24,
        )
        for i in range(n):
            b.append(i, timestamp=timestamps[i], key=keys[i], value=values[i], headers=headers[i])
        data = bytearray(b.build())
        struct.pack_into(">q", data, 0, base_offset)  # what a broker does on append
        return bytes(data)
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 24)
    for i in range(n):
        inner = base_offset + i if (magic == 0 or not codec) else i
        b.append(inner, timestamp=timestamps[i], key=keys[i], value=values[i])
    data = bytearray(b.build())
    if codec:  # the wrapper gets the last offset
        struct.pack_into(">q", data, 0, base_offset + n - 1)
    return bytes(data)


def _expected(magic, values, keys, timestamps, headers, base_offset):
    out = []
    for i, (v, k, ts, hs) in enumerate(zip(values, keys, timestamps, headers)):
        out.append(
            (
                base_offset + i,
                ts if magic else -1,
                0 if magic else -1,
                k,
                v,
                list(hs) if magic == 2 else [],
            )
        )
    return out


@pytest.mark.parametrize("magic,codec", CASES)
@pytest.mark.parametrize("base_offset", [0, 1000])
def test_kafka_python_reads_what_kclient_writes(magic, codec, base_offset):
    cols = _columns()
    data = _kclient_write(magic, codec, *cols, base_offset)
    assert _kafka_python_read(data) == _expected(magic, *cols, base_offset)


@pytest.mark.parametrize("magic,codec", CASES)
@pytest.mark.parametrize("base_offset", [0, 1000])
def test_kclient_reads_what_kafka_python_writes(magic, codec, base_offset):
    cols = _columns()
    data = _kafka_python_write(magic, codec, *cols, base_offset)
    got = [_kc_fields(r) for r in RecordsReader(data)]
    assert got == _expected(magic, *cols, base_offset)
    assert got == _kafka_python_read(data)


def test_v2_batch_metadata_matches_kafka_python():
    cols = _columns()
    for writer in (_kclient_write, _kafka_python_write):
        data = writer(2, c.LZ4, *cols, 500)
        ours = next(RecordsReader(data).batches())
        theirs = DefaultRecordBatch(bytearray(data))
        assert theirs.validate_crc()
        assert (
            ours.base_offset,
            ours.last_offset,
            ours.codec,
            ours.producer_id,
            ours.producer_epoch,
            ours.base_sequence,
            ours.max_timestamp,
            ours.first_timestamp,
            ours.record_count,
            ours.crc,
            ours.is_transactional,
            ours.is_control,
            ours.size,
        ) == (
            theirs.base_offset,
            theirs.last_offset,
            theirs.compression_type,
            theirs.producer_id,
            theirs.producer_epoch,
            theirs.base_sequence,
            theirs.max_timestamp,
            theirs.first_timestamp,
            theirs.records_count,
            theirs.crc,
            theirs.is_transactional,
            theirs.is_control_batch,
            theirs.size_in_bytes,
        )


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_wrapper_metadata_and_crc_match_kafka_python(magic):
    cols = _columns()[:3]
    data = build_message_set(*cols, magic=magic, codec=c.GZIP, base_offset=10)
    theirs = LegacyRecordBatch(bytearray(data), magic)
    assert theirs.validate_crc()
    ours = next(RecordsReader(data).batches())
    assert (ours.base_offset, ours.last_offset, ours.codec, ours.crc) == (
        10,
        34,
        c.GZIP,
        theirs._crc,
    )
    assert [r.offset for r in theirs] == list(range(10, 35))


def test_v1_log_append_time_wrapper_both_ways():
    values = [b"a", b"b", b"c"]
    data = build_message_set(
        values, magic=1, codec=c.SNAPPY, timestamps=[1, 2, 3], timestamp=99, timestamp_type=1
    )
    theirs = [
        (r.offset, r.timestamp, r.timestamp_type) for r in LegacyRecordBatch(bytearray(data), 1)
    ]
    ours = [(r.offset, r.timestamp, r.timestamp_type) for r in RecordsReader(data)]
    assert ours == theirs == [(0, 99, 1), (1, 99, 1), (2, 99, 1)]


def test_v2_log_append_time_batch_both_ways():
    data = build_batch([b"a", b"b"], timestamps=[5, 7], timestamp_type=1)
    theirs = [(r.timestamp, r.timestamp_type) for r in DefaultRecordBatch(bytearray(data))]
    ours = [(r.timestamp, r.timestamp_type) for r in RecordsReader(data)]
    assert ours == theirs == [(7, 1), (7, 1)]


def test_mixed_formats_from_both_libraries_in_one_buffer():
    cols = _columns(5)
    parts = [
        _kafka_python_write(0, c.GZIP, *cols, 0),
        _kclient_write(1, c.NONE, *cols, 5),
        _kafka_python_write(1, c.LZ4, *cols, 10),
        _kclient_write(2, c.ZSTD, *cols, 15),
        _kafka_python_write(2, c.SNAPPY, *cols, 20),
    ]
    buf = b"".join(parts)
    reader = RecordsReader(memoryview(buf))
    assert [r.offset for r in reader] == list(range(25))
    assert [b.magic for b in reader.batches()] == [0, 1, 1, 1, 1, 1, 1, 2, 2]
    assert [r[0] for r in _kafka_python_read(buf)] == list(range(25))
