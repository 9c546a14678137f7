"""Broker-side helpers: entry metadata, validation, recovery scan, offset assignment, conversion."""

import struct

import pytest

from kclient.protocol import compression as c
from kclient.protocol.errors import CorruptRecordError, UnsupportedCodecError
from kclient.protocol.records import (
    RecordsReader,
    assign_offsets,
    build_batch,
    build_message_set,
    convert_records,
    iter_batches,
    iter_entries,
    scan_log,
    validate_records,
)
from tests.needs import need_module
from tests.protocol.test_compression import _XXHashShim

TS = 1_650_000_000_000


def _producer_payload():
    """What producers of each era send: offsets 0.. in every entry."""
    return [
        build_batch(
            [b"a", b"b", b"c"],
            [b"k", None, b"k"],
            timestamps=[TS, TS + 2, TS + 1],
            headers=[[("h", b"1")], None, None],
            producer_id=9,
            producer_epoch=1,
            base_sequence=0,
        ),
        build_message_set([b"d"], [b"k"], magic=1, timestamp=TS + 3),
        build_message_set([b"e", b"f", b"g"], magic=1, codec=c.GZIP, timestamps=[TS, TS + 7, TS]),
        build_message_set([b"h"], magic=0),
        build_message_set([b"i", b"j"], [b"x", b"y"], magic=0, codec=c.LZ4),
        build_batch([b"k", b"l"], timestamp=TS + 4, codec=c.ZSTD),
    ]


def test_iter_entries_reports_position_size_offsets_counts():
    parts = _producer_payload()
    buf = b"".join(parts)
    infos = list(iter_entries(buf))
    positions = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    assert [(e.position, e.size, e.magic) for e in infos] == [
        (pos, len(p), m) for pos, p, m in zip(positions, parts, [2, 1, 1, 0, 0, 2])
    ]
    assert [(e.base_offset, e.last_offset, e.record_count) for e in infos] == [
        (0, 2, 3),
        (0, 0, 1),
        (0, 2, 3),
        (0, 0, 1),
        (0, 1, 2),
        (0, 1, 2),
    ]
    assert [e.max_timestamp for e in infos] == [TS + 2, TS + 3, TS + 7, -1, -1, TS + 4]
    assert [e.codec for e in infos] == [0, 0, c.GZIP, 0, c.LZ4, c.ZSTD]


def test_assign_offsets_rewrites_only_offset_fields_where_the_format_allows():
    parts = _producer_payload()
    buf = b"".join(parts)
    result = assign_offsets(buf, 100, partition_leader_epoch=6)
    assert result.next_offset == 100 + 3 + 1 + 3 + 1 + 2 + 2
    recs = list(RecordsReader(result.data))  # CRCs still valid
    assert [r.offset for r in recs] == list(range(100, 112))
    assert [r.value for r in recs] == [bytes([ch]) for ch in b"abcdefghijkl"]
    assert recs[0].headers == [("h", b"1")]
    assert [(e.base_offset, e.last_offset) for e in result.entries] == [
        (100, 102),
        (103, 103),
        (104, 106),
        (107, 107),
        (108, 109),
        (110, 111),
    ]
    # v2: only baseOffset and the leader epoch changed
    v2_out = result.data[: len(parts[0])]
    assert v2_out[8:12] == parts[0][8:12] and v2_out[16:] == parts[0][16:]
    assert struct.unpack_from(">qi", v2_out, 0)[0] == 100
    assert struct.unpack_from(">i", v2_out, 12)[0] == 6
    # v1 plain message and v1 wrapper: only the outer offset changed
    e1, e2 = result.entries[1], result.entries[2]
    assert result.data[e1.position + 8 : e1.position + e1.size] == parts[1][8:]
    assert result.data[e2.position + 8 : e2.position + e2.size] == parts[2][8:]
    assert struct.unpack_from(">q", result.data, e2.position)[0] == 106
    # v0 wrapper: re-encoded with absolute inner offsets
    e4 = result.entries[4]
    (wrapper,) = list(iter_batches(result.data[e4.position : e4.position + e4.size]))
    assert wrapper.magic == 0 and wrapper.codec == c.LZ4
    assert [r.offset for r in wrapper] == [108, 109]
    assert [(e.position, e.size) for e in result.entries] == [
        (e.position, e.size) for e in iter_entries(result.data)
    ]


def test_assign_offsets_with_log_append_time():
    buf = b"".join(_producer_payload())
    result = assign_offsets(buf, 0, log_append_time=TS + 1000)
    recs = list(RecordsReader(result.data))
    assert {(r.timestamp, r.timestamp_type) for r in recs if r.timestamp_type != -1} == {
        (TS + 1000, 1)
    }
    assert [r.timestamp_type for r in recs].count(-1) == 3  # v0 has no timestamps
    assert [e.max_timestamp for e in result.entries] == [TS + 1000] * 3 + [-1, -1, TS + 1000]
    kp = need_module("kafka.record.memory_records")
    for batch in kp.MemoryRecords(result.data):
        assert batch.validate_crc()


def test_validate_records_rejects_partial_and_corrupt_input():
    buf = b"".join(_producer_payload())
    assert len(validate_records(buf)) == 6
    with pytest.raises(CorruptRecordError, match="partial"):
        validate_records(buf[:-3])
    assert len(validate_records(buf[:-3], allow_partial=True)) == 5
    bad = bytearray(buf)
    bad[-1] ^= 0x10
    with pytest.raises(CorruptRecordError):
        assign_offsets(bytes(bad), 0)


def test_scan_log_for_recovery():
    parts = _producer_payload()
    log = assign_offsets(b"".join(parts), 0).data
    clean = scan_log(log)
    assert clean.valid_bytes == len(log) and clean.error is None and len(clean.entries) == 6
    lost_tail = scan_log(log[:-5])
    assert lost_tail.valid_bytes == len(log) - len(parts[-1]) and lost_tail.error is None
    assert lost_tail.incomplete_size == len(parts[-1])
    garbage = scan_log(log + b"\x00" * 7 + b"\xff" * 40)
    assert garbage.valid_bytes == len(log) and garbage.error is not None
    third = sum(len(p) for p in parts[:2])
    bad = bytearray(log)
    bad[third + 30] ^= 0xFF  # inside the v1 wrapper (CRC'd)
    broken = scan_log(bytes(bad))
    assert broken.valid_bytes == third and len(broken.entries) == 2
    assert isinstance(broken.error, CorruptRecordError) and broken.error.offset == 6


def _fields(buf, magic):
    out = []
    for r in RecordsReader(buf):
        out.append(
            (
                r.offset,
                r.key,
                r.value,
                r.timestamp if magic else -1,
                r.headers if magic == 2 else [],
            )
        )
    return out


@pytest.mark.parametrize("target", [0, 1, 2])
def test_convert_records_keeps_offsets_keys_values(target, monkeypatch):
    log = assign_offsets(b"".join(_producer_payload()[:-1]), 50).data  # no zstd for v0/v1
    out = convert_records(log, target)
    assert {b.magic for b in iter_batches(out)} == {target}
    src = _fields(log, 2)
    got = _fields(out, target)
    assert [g[:3] for g in got] == [s[:3] for s in src]
    if target == 2:
        assert [g[4] for g in got] == [s[4] for s in src]
    kp = need_module("kafka.record.memory_records")
    monkeypatch.setattr(need_module("kafka.codec"), "xxhash", _XXHashShim)
    assert [r.offset for b in kp.MemoryRecords(out) for r in b] == list(range(50, 60))


def test_up_conversion_groups_plain_messages_into_one_batch():
    plain = b"".join(
        build_message_set([b"m%d" % i], magic=1, base_offset=i, timestamp=TS + i) for i in range(5)
    )
    out = convert_records(plain, 2)
    (batch,) = list(iter_batches(out))
    assert batch.record_count == 5 and batch.base_offset == 0 and batch.last_offset == 4
    assert [r.timestamp for r in batch] == [TS + i for i in range(5)]


def test_down_conversion_drops_control_batches_and_keeps_compression():
    data = build_batch(
        [b"a", b"b"], timestamp=TS, codec=c.SNAPPY, is_transactional=True
    ) + build_batch(
        [b"\x00" * 6],
        [b"\x00\x00\x00\x01"],
        timestamp=TS,
        base_offset=2,
        is_control=True,
        is_transactional=True,
    )
    out = convert_records(data, 1)
    (wrapper,) = list(iter_batches(out))
    assert wrapper.codec == c.SNAPPY and [r.offset for r in wrapper] == [0, 1]
    assert convert_records(data, 1, codec=c.NONE) == build_message_set(
        [b"a", b"b"], magic=1, timestamp=TS
    )


def test_down_converting_zstd_is_refused():
    with pytest.raises(UnsupportedCodecError, match="zstd"):
        convert_records(build_batch([b"a"], codec=c.ZSTD, timestamp=TS), 1)
    assert (
        list(
            iter_batches(
                convert_records(build_batch([b"a"], codec=c.ZSTD, timestamp=TS), 1, codec=c.GZIP)
            )
        )[0].codec
        == c.GZIP
    )


def test_same_magic_entries_are_copied_unchanged():
    data = build_batch([b"a"], timestamp=TS, producer_id=3)
    assert convert_records(data, 2) == data
