"""The cleaner's segment rewrite: v0, v1 and v2 entries, every codec, offset gaps, tombstones and
their delete horizon, empty batches, control batches, and index lookups after cleaning."""

from __future__ import annotations

import struct

import pytest

from kclient.broker.log import FileRegion, Log, LogConfig
from kclient.broker.log.cleaning import clean_log, cleanable, group_segments
from kclient.broker.log.compact import (
    DELETE_HORIZON_MASK,
    EntryFilter,
    OffsetMap,
    has_delete_horizon,
)
from kclient.protocol.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    RecordsReader,
    build_batch,
    build_message_set,
    validate_records,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
NOW = 1_700_000_000_000


def _map(pairs: dict[bytes, int], latest: int) -> OffsetMap:
    m = OffsetMap()
    for key, offset in pairs.items():
        m.put(key, offset)
    m.update_latest(latest)
    return m


def _records(data: bytes) -> list[tuple]:
    return [(r.offset, r.key, r.value, r.timestamp) for r in RecordsReader(data)]


def _batches(data: bytes) -> list:
    return list(RecordsReader(data).batches())


# ------------------------------------------------------------------ one entry
@pytest.mark.parametrize("codec", CODECS)
def test_v2_batch_keeps_latest_per_key_offsets_and_codec(codec):
    keys = [b"a", b"b", b"a", b"c", b"b"]
    data = build_batch(
        [b"1", b"2", b"3", b"4", b"5"],
        keys,
        [1000, 1001, 1002, 1003, 1004],
        base_offset=100,
        codec=codec,
        producer_id=7,
        producer_epoch=2,
        base_sequence=40,
        partition_leader_epoch=3,
    )
    filt = EntryFilter(_map({b"a": 102, b"b": 104, b"c": 103}, 104), NOW, 1000, 10_000)
    out = filt.filter(data)
    validate_records(out)  # whole entry, CRC right
    (batch,) = _batches(out)
    assert (batch.base_offset, batch.last_offset, batch.codec) == (100, 104, codec)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 2, 40)
    assert batch.partition_leader_epoch == 3 and batch.record_count == 3
    assert _records(out) == [
        (102, b"a", b"3", 1002),
        (103, b"c", b"4", 1003),
        (104, b"b", b"5", 1004),
    ]
    assert batch.max_timestamp == 1004


def test_v2_batch_all_retained_is_returned_unchanged():
    data = build_batch([b"1", b"2"], [b"a", b"b"], base_offset=5)
    assert EntryFilter(_map({b"a": 5, b"b": 6}, 6), NOW, 1000, 100).filter(data) is data


def test_records_past_the_map_are_kept_and_keyless_dropped():
    data = build_batch([b"x", b"y", b"z"], [None, b"a", b"a"], base_offset=0)
    out = EntryFilter(_map({b"a": 1}, 1), NOW, 1000, 100).filter(data)
    assert [(o, k) for o, k, _, _ in _records(out)] == [(1, b"a"), (2, b"a")]


def test_tombstone_gets_a_delete_horizon_then_goes_after_it():
    data = build_batch([b"v", None], [b"a", b"b"], [5000, 5001], base_offset=0)
    first = EntryFilter(_map({b"a": 0, b"b": 1}, 1), NOW, 60_000, 100).filter(data)
    assert has_delete_horizon(first) and not has_delete_horizon(data)
    (batch,) = _batches(first)
    assert batch.first_timestamp == NOW + 60_000  # baseTimestamp = horizon
    assert _records(first) == [(0, b"a", b"v", 5000), (1, b"b", None, 5001)]  # true stamps
    attrs = struct.unpack_from(">h", first, 21)[0]
    assert attrs & DELETE_HORIZON_MASK
    again = EntryFilter(_map({b"a": 0, b"b": 1}, 1), NOW + 59_999, 60_000, 100).filter(first)
    assert again is first  # horizon not reached
    late = EntryFilter(_map({b"a": 0, b"b": 1}, 1), NOW + 60_000, 60_000, 100).filter(first)
    assert _records(late) == [(0, b"a", b"v", 5000)]
    assert has_delete_horizon(late)  # Kafka keeps the batch's horizon


def test_emptied_batch_dropped_or_kept_as_header_at_the_upper_bound():
    data = build_batch(
        [b"old", b"old2"],
        [b"a", b"a"],
        base_offset=10,
        producer_id=3,
        base_sequence=9,
        timestamp=4242,
    )
    m = _map({b"a": 50}, 50)
    assert EntryFilter(m, NOW, 1000, upper_bound=100).filter(data) is None
    empty = EntryFilter(m, NOW, 1000, upper_bound=12).filter(data)
    validate_records(empty)
    (batch,) = _batches(empty)
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (10, 11, 0)
    assert (batch.producer_id, batch.base_sequence, batch.max_timestamp) == (3, 9, 4242)
    assert _records(empty) == []
    later = EntryFilter(m, NOW, 1000, upper_bound=100)  # a later round: Kafka drops it
    assert later.filter(empty) is None
    assert EntryFilter(m, NOW, 1000, upper_bound=12).filter(empty) is empty


def test_control_batch_is_kept_as_it_is():
    data = build_batch(
        [b"\x00\x00\x00\x00"],
        [b"\x00\x00\x00\x01"],
        base_offset=3,
        is_control=True,
        is_transactional=True,
        producer_id=1,
    )
    assert EntryFilter(_map({}, 10), NOW, 0, 100).filter(data) is data


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_plain_messages_kept_or_dropped_whole(magic):
    data = build_message_set([b"v"], [b"a"], magic=magic, base_offset=4, timestamp=77)
    assert EntryFilter(_map({b"a": 4}, 9), NOW, 0, 100).filter(data) is data
    assert EntryFilter(_map({b"a": 5}, 9), NOW, 0, 100).filter(data) is None


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_legacy_wrapper_recompressed_with_retained_inner_messages(magic, codec):
    data = build_message_set(
        [b"1", b"2", b"3", b"4"],
        [b"a", b"b", b"a", b"b"],
        [10, 11, 12, 13],
        magic=magic,
        codec=codec,
        base_offset=20,
        timestamp=10,
    )
    out = EntryFilter(_map({b"a": 22, b"b": 23}, 23), NOW, 0, 100).filter(data)
    validate_records(out)
    (batch,) = _batches(out)
    assert batch.magic == magic and batch.codec == codec
    stamps = [12, 13] if magic else [-1, -1]
    assert _records(out) == [(22, b"a", b"3", stamps[0]), (23, b"b", b"4", stamps[1])]


def test_legacy_tombstones_follow_the_segment_horizon():
    data = build_message_set([b"1", None], [b"a", b"b"], magic=1, codec=GZIP, timestamp=5)
    m = _map({b"a": 0, b"b": 1}, 1)
    keep = EntryFilter(m, NOW, 0, 100, retain_legacy_deletes=True).filter(data)
    assert keep is data
    drop = EntryFilter(m, NOW, 0, 100, retain_legacy_deletes=False).filter(data)
    assert _records(drop) == [(0, b"a", b"1", 5)]


# ------------------------------------------------------------------ whole log
def _log(tmp_path, magic=2, **extra) -> Log:
    config = LogConfig(
        segment_bytes=1500,
        index_interval_bytes=64,
        cleanup_policy=("compact",),
        message_format_version=magic,
        min_cleanable_dirty_ratio=0.0,
        **extra,
    )
    return Log(tmp_path / "c-0", config)


def _entry(magic: int, codec: int, values, keys, base: int) -> bytes:
    if magic == 2:
        return build_batch(values, keys, base_offset=base, codec=codec, timestamp=1000)
    return build_message_set(
        values, keys, magic=magic, codec=codec, base_offset=base, timestamp=1000
    )


def _read_all(log: Log) -> list[tuple]:
    got, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        region = log.read(offset, 1 << 20)
        data = region.read() if isinstance(region, FileRegion) else region
        batches = _batches(data)
        got += [(r.offset, r.key, r.value) for b in batches for r in b.records]
        offset = batches[-1].last_offset + 1
    return got


def _latest(written: list[tuple], below: int) -> dict:
    """Key -> (offset, value) of the last record written below offset ``below``."""
    return {k: (o, v) for o, k, v in written if o < below}


def _fill(log: Log, magic: int, codec: int, n: int = 400, keys: int = 13) -> list[tuple]:
    written: list[tuple] = []
    offset = 0
    while offset < n:
        values = [None if (offset + j) % 17 == 0 else b"value-%d" % (offset + j) for j in range(3)]
        klist = [b"key-%d" % ((offset + j) % keys) for j in range(3)]
        log.append(_entry(magic, codec, values, klist, 0), magic=magic)
        written += [(offset + j, klist[j], values[j]) for j in range(3)]
        offset += 3
    return written


@pytest.mark.parametrize(
    "magic,codec",
    [
        (0, NONE),
        (0, GZIP),
        (1, NONE),
        (1, SNAPPY),
        (2, NONE),
        (2, GZIP),
        (2, SNAPPY),
        (2, LZ4),
        (2, ZSTD),
    ],
)
def test_clean_log_keeps_latest_per_key_with_original_offsets(tmp_path, magic, codec):
    log = _log(tmp_path, magic)
    written = _fill(log, magic, codec)
    before = log.size
    active = log.segments[-1].base_offset
    end = clean_log(cleanable(log, 0, NOW), NOW)
    assert end == active
    got = _read_all(log)
    expected_clean = sorted((o, k, v) for k, (o, v) in _latest(written, active).items())
    assert [g for g in got if g[0] < active] == expected_clean
    assert log.size < before / 3
    assert (log.log_start_offset, log.log_end_offset) == (0, 402)
    log.close()
    reopened = _log(tmp_path, magic)
    assert _read_all(reopened) == got


def test_index_lookups_and_fetch_into_gaps_after_cleaning(tmp_path):
    log = _log(tmp_path)
    written = _fill(log, 2, NONE, n=600, keys=40)
    clean_log(cleanable(log, 0, NOW), NOW)
    kept = [o for o, _, _ in _read_all(log)]
    assert len(kept) < 300
    assert any(len(s.index) for s in log.segments[:-1]), "cleaned segments are indexed"
    for offset in range(log.log_end_offset):
        region = log.read(offset, 100_000)
        data = region.read() if isinstance(region, FileRegion) else region
        first = next(r.offset for b in _batches(data) for r in b.records if r.offset >= offset)
        assert first == min(o for o in kept if o >= offset)
    for seg in log.segments:
        for o, pos in seg.index.entries():
            assert seg.find_position(o, seg.size) == pos
    assert written[-1][0] == log.log_end_offset - 1


def test_second_round_removes_expired_tombstones(tmp_path):
    log = _log(tmp_path, delete_retention_ms=1000)
    written = _fill(log, 2, NONE)
    active = log.segments[-1].base_offset
    end = clean_log(cleanable(log, 0, NOW), NOW)
    tombstones = [o for o, _, v in _read_all(log) if v is None and o < active]
    assert tombstones, "first round keeps tombstones (horizon set)"
    for i in range(200):
        log.append(build_batch([b"more"], [b"other-%d" % (i % 3)]), magic=2)
    clean_log(cleanable(log, end, NOW + 1000), NOW + 1000)
    dead = {k for k, (_, v) in _latest(written, active).items() if v is None}
    got = _read_all(log)
    assert not [g for g in got if g[2] is None and g[0] < active]
    assert not [g for g in got if g[1] in dead and g[0] < active]


def test_groups_respect_segment_bytes(tmp_path):
    log = _log(tmp_path)
    _fill(log, 2, NONE, n=600, keys=300)
    groups = group_segments(list(log.segments[:-1]), 1500, log.segments[-1].base_offset)
    assert all(sum(s.size for s in g) <= 1500 or len(g) == 1 for g in groups)
    assert [s for g in groups for s in g] == list(log.segments[:-1])


def test_a_full_offset_map_ends_the_round_early(tmp_path):
    log = _log(tmp_path)
    written = _fill(log, 2, NONE, n=300, keys=50)
    target = cleanable(log, 0, NOW)
    end = clean_log(target, NOW, map_slots=30)
    assert 0 < end < target.first_uncleanable, "the round stops where the map filled up"
    got = _read_all(log)
    assert {o for o, _, _ in got} >= {o for o, _, _ in written if o >= end}
    while end < target.first_uncleanable:  # later rounds finish the job
        end = clean_log(cleanable(log, end, NOW), NOW, map_slots=30)
    active = log.segments[-1].base_offset
    assert [g for g in _read_all(log) if g[0] < active] == sorted(
        (o, k, v) for k, (o, v) in _latest(written, active).items()
    )
    with pytest.raises(ValueError, match="dedupe.buffer.size"):
        clean_log(cleanable(log, 0, NOW), NOW, map_slots=0)
