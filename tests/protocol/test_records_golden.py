"""Golden byte-level facts from the seeds (message format article, DumpLogSegments output)."""

import struct
import zlib

from crc32c import crc32c

from kclient.protocol.records import (
    BATCH_HEADER_SIZE,
    RecordsReader,
    build_batch,
    build_message_set,
    encode_message,
)

TS_V2 = 1524709879130  # "CreateTime: 1524709879130" in the seed's dump
TS_TEN = 1524712213771


def test_v0_key_value_message_is_34_bytes_with_crc_592888119():
    data = build_message_set([b"value"], [b"key"], magic=0)
    assert len(data) == 34 == 12 + 14 + 3 + 5
    offset, size, crc, magic, attrs, klen = struct.unpack_from(">qiIbbi", data)
    assert (offset, size, magic, attrs, klen) == (0, 22, 0, 0, 3)
    assert crc == 592888119 == zlib.crc32(data[16:])
    assert data[22:25] == b"key"
    assert struct.unpack_from(">i", data, 25)[0] == 5 and data[29:] == b"value"
    assert encode_message(0, 0, -1, b"key", b"value") == data


def test_v0_null_key_message_is_31_bytes():
    data = build_message_set([b"value"], [None], magic=0)
    assert len(data) == 31
    assert struct.unpack_from(">i", data, 18)[0] == -1


def test_v1_key_value_message_is_42_bytes():
    data = build_message_set([b"value"], [b"key"], magic=1, timestamp=TS_V2)
    assert len(data) == 42 == 12 + 22 + 3 + 5
    offset, size, crc, magic, attrs, ts, klen = struct.unpack_from(">qiIbbqi", data)
    assert (offset, size, magic, attrs, ts, klen) == (0, 30, 1, 0, TS_V2, 3)
    assert crc == zlib.crc32(data[16:])
    assert data[-5:] == b"value"


def _v2_header(data):
    return struct.unpack_from(">qiibIhiqqqhii", data)


def test_v2_one_record_batch_is_76_bytes_with_the_dumped_crc():
    data = build_batch([b"value"], [b"key"], timestamp=TS_V2, partition_leader_epoch=0)
    assert len(data) == 76 and BATCH_HEADER_SIZE == 61
    (
        base,
        length,
        epoch,
        magic,
        crc,
        attrs,
        last_delta,
        first_ts,
        max_ts,
        pid,
        pepoch,
        seq,
        count,
    ) = _v2_header(data)
    assert (base, length, epoch, magic, attrs, last_delta) == (0, 64, 0, 2, 0, 0)
    assert (first_ts, max_ts, pid, pepoch, seq, count) == (TS_V2, TS_V2, -1, -1, -1, 1)
    # "crc: 2857248333" in the seed's DumpLogSegments output, CRC-32C of attributes..end
    assert crc == 2857248333 == crc32c(data[21:])
    # the record: length 14 (1 byte), attributes 0, ts delta 0, offset delta 0,
    # key length 3, "key", value length 5, "value", header count 0
    assert data[61:] == b"\x1c\x00\x00\x00\x06key\x0avalue\x00"


def test_v2_null_key_record_batch_is_73_bytes():
    assert len(build_batch([b"value"], [None], timestamp=TS_V2)) == 73


def test_v2_ten_six_byte_values_are_191_bytes():
    values = [b"%06d" % i for i in range(10)]
    data = build_batch(values, timestamp=TS_TEN, base_offset=2, partition_leader_epoch=0)
    assert len(data) == 191
    (base, length, _, magic, crc, attrs, last_delta, first_ts, max_ts, _, _, _, count) = _v2_header(
        data
    )
    assert (base, length, magic, attrs, last_delta, count) == (2, 179, 2, 0, 9, 10)
    assert first_ts == max_ts == TS_TEN
    assert crc == crc32c(data[21:])
    # every record is 13 bytes: length varint (12) + 12 bytes of body
    assert (len(data) - 61) == 10 * 13
    assert data[61:74] == b"\x18\x00\x00\x00\x01\x0c000000\x00"
    records = list(RecordsReader(data))
    assert [r.offset for r in records] == list(range(2, 12))
    assert [r.value for r in records] == values and {r.key for r in records} == {None}


def test_seed_sizes_for_ten_messages_in_v0_and_v1():
    """The seed: those ten messages take 320 bytes in v0 and 400 in v1 (uncompressed)."""
    values = [b"123456"] * 10
    assert len(build_message_set(values, magic=0)) == 320 == 10 * (12 + 14 + 6)
    assert len(build_message_set(values, magic=1, timestamp=TS_TEN)) == 400 == 10 * (12 + 22 + 6)


def test_read_back_golden_entries_as_one_mixed_buffer():
    buf = (
        build_message_set([b"value"], [b"key"], magic=0)
        + build_message_set([b"value"], [b"key"], magic=1, timestamp=TS_V2, base_offset=1)
        + build_batch([b"value"], [b"key"], timestamp=TS_V2, base_offset=2)
    )
    reader = RecordsReader(buf)
    recs = list(reader)
    assert [(r.offset, r.key, r.value) for r in recs] == [(i, b"key", b"value") for i in range(3)]
    assert [r.timestamp for r in recs] == [-1, TS_V2, TS_V2]
    assert [r.timestamp_type for r in recs] == [-1, 0, 0]
    assert reader.valid_bytes == 34 + 42 + 76 and reader.incomplete_size is None
    assert [(b.magic, b.position, b.size) for b in reader.batches()] == [
        (0, 0, 34),
        (1, 34, 42),
        (2, 76, 76),
    ]
