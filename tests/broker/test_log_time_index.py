"""The ``.timeindex`` of the mini-broker's segments: Kafka's 12-byte entries, written while
appending and on roll, used by ListOffsets by timestamp, checked at load and rebuilt."""

import random
import struct

import pytest

from kclient.broker.log import Log, LogConfig
from kclient.protocol.records import build_batch

CONFIG = {"segment_bytes": 2000, "index_interval_bytes": 300}


def _fill(tmp_path, seed=7):
    """A log of many segments; batch timestamps mostly rise, some step back. All records."""
    rng = random.Random(seed)
    log = Log(tmp_path / "t-0", LogConfig(**CONFIG))
    records, ts = [], 1_000_000
    for _ in range(60):
        stamps = []
        for _ in range(rng.randint(1, 4)):
            ts += rng.randint(0, 50)
            stamps.append(ts - rng.choice([0, 0, 0, 120]))  # some records stamped earlier
        info = log.append(build_batch([b"v" * 40] * len(stamps), timestamps=stamps), magic=2)
        records += [(info.first_offset + i, t) for i, t in enumerate(stamps)]
    return log, records


def _expected(records, target):
    """The first record stamped at or after ``target`` by a full scan, as Kafka answers."""
    return next(((o, t) for o, t in records if t >= target), None)


def _entries(path):
    data = path.read_bytes()
    assert len(data) % 12 == 0
    return list(struct.iter_unpack(">qi", data))


def _answers(log, records):
    lo, hi = records[0][1] - 10, max(t for _, t in records) + 10
    return {target: log.offset_for_timestamp(target) for target in range(lo, hi, 7)}


def test_entries_are_kafkas_format_and_timestamps_strictly_rise(tmp_path):
    log, records = _fill(tmp_path)
    paths = sorted(log.directory.glob("*.timeindex"))
    assert len(paths) == len(log.segments) >= 5
    for seg, path in zip(log.segments[:-1], paths):
        entries = _entries(path)
        assert len(entries) >= 2
        stamps = [t for t, _ in entries]
        assert stamps == sorted(set(stamps))
        # every entry (t, o): no record at or below o is stamped above t; sealed: t is the max
        for t, rel in entries:
            assert max(ts for o, ts in records if o <= seg.base_offset + rel) == t
        in_segment = [ts for o, ts in records if seg.base_offset <= o < seg.next_offset]
        assert stamps[-1] == max(in_segment)
    log.close()


def test_list_offsets_by_timestamp_across_segments_matches_a_full_scan(tmp_path):
    log, records = _fill(tmp_path)
    answers = _answers(log, records)
    assert answers == {t: _expected(records, t) for t in answers}
    assert answers[max(answers)] is None
    log.close()


def test_lookup_starts_after_the_time_index_entry(tmp_path, monkeypatch):
    """The scan begins after the last entry stamped below the target, not at the segment start."""
    log, records = _fill(tmp_path)
    seg = log.segments[1]
    (t, rel) = _entries(seg.time_index.path)[-2]
    starts = []
    walk = type(seg).entries
    monkeypatch.setattr(
        type(seg), "entries", lambda self, start=0: starts.append(start) or walk(self, start)
    )
    assert seg.find_timestamp(t + 1) == _expected(
        [(o, ts) for o, ts in records if o > seg.base_offset + rel], t + 1
    )
    assert starts and starts[-1] > 0
    log.close()


def test_reopened_missing_and_corrupt_time_indexes_answer_the_same(tmp_path, caplog):
    log, records = _fill(tmp_path)
    before = _answers(log, records)
    files = {p.name: p.read_bytes() for p in log.directory.glob("*.timeindex")}
    log.close()
    log = Log(tmp_path / "t-0", LogConfig(**CONFIG))  # clean: loaded and sanity-checked
    assert _answers(log, records) == before
    log.close()
    paths = sorted((tmp_path / "t-0").glob("*.timeindex"))
    paths[1].unlink()  # missing: rebuilt at load
    entries = _entries(paths[2])
    paths[2].write_bytes(b"".join(struct.pack(">qi", *e) for e in reversed(entries)))
    paths[3].write_bytes(paths[3].read_bytes() + b"\0")  # not a multiple of 12
    log = Log(tmp_path / "t-0", LogConfig(**CONFIG))
    assert "corrupt time index" in caplog.text
    assert {p.name: p.read_bytes() for p in paths[:4]} == {p.name: files[p.name] for p in paths[:4]}
    assert _answers(log, records) == before
    log.close()


def test_unclean_restart_rebuilds_the_active_time_index(tmp_path):
    log, records = _fill(tmp_path)
    active = log.segments[-1].time_index.path
    before = _answers(log, records)
    log.flush()
    entries = active.read_bytes()
    active.write_bytes(struct.pack(">qi", 1, 0))  # no clean shutdown marker either
    reopened = Log(tmp_path / "t-0", LogConfig(**CONFIG))
    assert active.read_bytes().startswith(entries)
    assert _answers(reopened, records) == before
    reopened.close()


@pytest.mark.parametrize("stamp", [-1, 0])
def test_no_entry_below_zero(tmp_path, stamp):
    log = Log(tmp_path / "t-0", LogConfig(index_interval_bytes=1))
    for _ in range(3):
        log.append(build_batch([b"x"], timestamps=[stamp]), magic=2)
    log.roll()
    entries = _entries(log.segments[0].time_index.path)
    assert entries == ([] if stamp < 0 else [(0, 0)])
    assert log.offset_for_timestamp(0) == (None if stamp < 0 else (0, 0))
    log.close()


def test_a_cleaned_segment_gets_a_time_index_of_what_it_kept(tmp_path):
    """Compaction swaps in one segment for several: its .timeindex is rebuilt from the
    records kept, the replaced segments' files go, and lookups match a scan of what is left."""
    from kclient.broker.log.cleaner import LogCleaner

    now = 1_700_000_000_000
    log = Log(
        tmp_path / "c-0",
        LogConfig(segment_bytes=1000, index_interval_bytes=100, cleanup_policy=("compact",)),
    )
    for i in range(100):
        key = b"u%d" % i if i % 3 == 0 else b"k%d" % (i % 5)  # every third one survives
        log.append(build_batch([b"v%d" % i], [key], timestamps=[now - 1000 + i]), magic=2)
    sizes = [s.size for s in log.segments]
    assert LogCleaner(lambda: [log], tmp_path).clean_once(now) is not None
    assert [s.size for s in log.segments] != sizes and log.segments[0].size > 0
    names = {p.name for p in log.directory.glob("*.timeindex")}
    assert names == {f"{s.base_offset:020d}.timeindex" for s in log.segments}
    kept = [
        (r.offset, r.timestamp)
        for s in log.segments
        for info in s.entries()
        for r in s._decode(info)
    ]
    cleaned = log.segments[0]
    assert _entries(cleaned.time_index.path)[-1][0] == max(
        t for o, t in kept if o < cleaned.next_offset
    )
    answers = {t: log.offset_for_timestamp(t) for t in range(now - 1001, now - 895, 3)}
    assert answers == {t: _expected(kept, t) for t in answers}
    log.close()
