"""The cleaner's choices: cleanup.policy and the cleaner settings parsed as Kafka names them,
min.cleanable.dirty.ratio, min.compaction.lag.ms, segment.ms making the active segment
cleanable, and the LogManager's cleaner thread (including a topic deleted while it cleans)."""

from __future__ import annotations

import sys
import time

import pytest

from kclient.broker import MiniBroker
from kclient.broker.config import BrokerConfig
from kclient.broker.log import Log, LogConfig, LogManager, cleaning
from kclient.broker.log import log as log_module
from kclient.broker.log.cleaner import LogCleaner
from kclient.broker.log.cleaning import cleanable
from kclient.protocol.records import build_batch

NOW = 1_700_000_000_000


def test_cleanup_policy_and_cleaner_settings_parse():
    config = LogConfig.from_properties(
        {
            "log.cleanup.policy": "compact",
            "log.cleaner.min.cleanable.ratio": "0.2",
            "delete.retention.ms": "5",
            "min.compaction.lag.ms": "7",
        }
    )
    assert config.compact and not config.delete
    assert (
        config.min_cleanable_dirty_ratio,
        config.delete_retention_ms,
        config.min_compaction_lag_ms,
    ) == (0.2, 5, 7)
    both = LogConfig.from_properties({"cleanup.policy": "delete, compact"})
    assert both.compact and both.delete and LogConfig().delete and not LogConfig().compact
    for bad in (
        {"cleanup.policy": "shred"},
        {"cleanup.policy": ""},
        {"min.cleanable.dirty.ratio": "1.5"},
        {"delete.retention.ms": "-2"},
    ):
        with pytest.raises(ValueError):
            LogConfig.from_properties(bad)
    broker = BrokerConfig(
        {
            "log.cleaner.backoff.ms": "10",
            "log.cleaner.enable": "false",
            "log.cleaner.io.max.bytes.per.second": "1000",
        }
    )
    assert broker["log.cleaner.min.cleanable.ratio"] == "0.5"
    with pytest.raises(ValueError):
        BrokerConfig({"log.cleaner.backoff.ms": "soon"})


def _log(tmp_path, keys: int = 5, **extra) -> Log:
    config = LogConfig(segment_bytes=1000, cleanup_policy=("compact",), **extra)
    log = Log(tmp_path / "c-0", config)
    for i in range(100):
        log.append(
            build_batch([b"v%d" % i], [b"k%d" % (i % keys)], timestamp=NOW - 1000 + i), magic=2
        )
    return log


def test_dirty_ratio_threshold(tmp_path):
    log = _log(tmp_path, keys=100, min_cleanable_dirty_ratio=0.5)
    cleaner = LogCleaner(lambda: [log], tmp_path)
    target = cleaner.filthiest(NOW)
    assert target is not None and target.ratio == 1.0 and target.clean_bytes == 0
    assert cleaner.clean_once(NOW) == target
    for i in range(5):  # a little more dirt: below 0.5
        log.append(build_batch([b"w"], [b"k%d" % i], timestamp=NOW), magic=2)
    log.roll()
    target = cleanable(log, cleaner.checkpoint.get(("c", 0)), NOW)
    assert 0 < target.ratio < 0.5
    assert cleaner.filthiest(NOW) is None
    log.config.min_cleanable_dirty_ratio = 0.1
    assert cleaner.filthiest(NOW) is not None
    log.close()


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path):
    log = _log(tmp_path, min_compaction_lag_ms=950)  # records stamped NOW-1000 .. NOW-901
    active = log.segments[-1].base_offset
    young = next(s.base_offset for s in log.segments if s.known_max_timestamp() > NOW - 950)
    assert 0 < young < active
    assert cleanable(log, 0, NOW).first_uncleanable == young
    assert cleanable(log, 0, NOW + 10_000).first_uncleanable == active
    log.close()


def test_segment_ms_rolls_the_active_segment(tmp_path, monkeypatch):
    log = Log(tmp_path / "c-0", LogConfig(segment_ms=100, cleanup_policy=("compact",)))
    clock = [NOW]
    monkeypatch.setattr(log_module, "now_ms", lambda: clock[0])
    log.append(build_batch([b"a"], [b"k"]), magic=2)
    log.append(build_batch([b"b"], [b"k"]), magic=2)
    assert cleanable(log, 0, NOW).dirty_bytes == 0  # all in the active segment
    clock[0] += 100
    log.append(build_batch([b"c"], [b"k"]), magic=2)
    assert len(log.segments) == 2 and cleanable(log, 0, NOW).dirty_bytes > 0
    log.close()


def _wait(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_manager_cleaner_thread_and_topic_deletion(tmp_path):
    manager = LogManager(
        tmp_path,
        LogConfig(),
        cleaner_config={
            "log.cleaner.backoff.ms": "20",
            "log.cleaner.io.max.bytes.per.second": "20000",
        },
    )
    manager.start()
    try:
        config = {
            "cleanup.policy": "compact",
            "segment.bytes": "2000",
            "min.cleanable.dirty.ratio": "0.01",
        }
        logs = [manager.create_log(name, 0, config) for name in ("keep", "doomed")]
        for log in logs:
            for i in range(300):
                log.append(build_batch([b"value-%d" % i], [b"k%d" % (i % 7)]), magic=2)
        assert _wait(
            lambda: (
                any(p.name.endswith(".cleaned") for p in (tmp_path / "doomed-0").iterdir())
                or manager.cleaner.rounds > 0
            )
        )
        manager.delete_topic("doomed")
        keep = manager.get_log("keep", 0)
        assert _wait(
            lambda: manager.cleaner.checkpoint.get(("keep", 0)) == keep.segments[-1].base_offset
        )
        assert not (tmp_path / "doomed-0").exists()
        text = (tmp_path / "cleaner-offset-checkpoint").read_text()
        assert "keep 0" in text and "doomed" not in text
        manager.delete_topic("keep")
        assert manager.cleaner.checkpoint.get(("keep", 0)) == 0
        assert "keep" not in (tmp_path / "cleaner-offset-checkpoint").read_text()
    finally:
        manager.close()


def test_broker_without_cleaner(tmp_path):
    with MiniBroker(log_dir=tmp_path, config={"log.cleaner.enable": "false"}) as broker:
        assert broker.log_manager.cleaner is None
        assert broker.coordinator.offsets.cleaner is None


def test_failed_cleaning_marks_the_log_uncleanable(tmp_path, monkeypatch):
    log = _log(tmp_path, min_cleanable_dirty_ratio=0.0)
    before = [(s.base_offset, s.size) for s in log.segments]
    cleaner = LogCleaner(lambda: [log], tmp_path)

    def broken(data):
        raise ValueError("unreadable entry")

    monkeypatch.setattr(cleaning, "entry_keys", broken)
    with pytest.raises(ValueError):
        cleaner.clean_once(NOW)
    assert cleaner.uncleanable == {("c", 0)}
    assert cleaner.clean_once(NOW) is None, "skipped from now on"
    assert [(s.base_offset, s.size) for s in log.segments] == before
    assert not list(log.directory.glob("*.cleaned"))
    log.close()


def test_reads_and_appends_during_cleaning_stay_consistent(tmp_path):
    """A writer appends, the cleaner thread cleans, a reader reads from the start over and over:
    every read shows increasing offsets, records that were written, and each key's latest
    record below the point the read started at."""
    import threading

    from kclient.broker.log import FileRegion
    from kclient.protocol.records import RecordsReader

    log = Log(
        tmp_path / "c-0",
        LogConfig(segment_bytes=2048, cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0),
    )
    cleaner = LogCleaner(lambda: [log], tmp_path, {"log.cleaner.backoff.ms": "1"})
    written: dict[int, tuple] = {}
    stop = threading.Event()
    failures: list[str] = []
    passes = [0]

    def write():
        i = 0
        while not stop.is_set() and i < 4000:
            key, value = b"k%d" % (i % 37), b"v%d" % i
            written[i] = (key, value)  # one writer: record i gets offset i
            assert log.append(build_batch([value], [key]), magic=2).first_offset == i
            i += 1

    def read():
        while not stop.is_set():
            end = log.log_end_offset
            latest = {}
            for o in range(end):
                if o in written:
                    latest[written[o][0]] = o
            got, offset = [], 0
            while offset < end:
                region = log.read(offset, 1 << 16)
                data = region.read() if isinstance(region, FileRegion) else region
                batches = list(RecordsReader(data).batches())
                if not batches:
                    break
                got += [(r.offset, r.key, r.value) for b in batches for r in b.records]
                offset = batches[-1].last_offset + 1
            offsets = [g[0] for g in got]
            if offsets != sorted(set(offsets)):
                failures.append("offsets out of order")
            if any(written.get(o) != (k, v) for o, k, v in got):
                failures.append("a record that was never written")
            seen = {k: o for o, k, _ in got if o < end}
            if any(seen.get(k) != o for k, o in latest.items()):
                failures.append("a key's latest record is missing")
            passes[0] += 1

    # the writer releases the GIL at every append (file I/O) and then waited a whole switch
    # interval (5 ms) for the busy reader or cleaner to hand it back: 4000 appends took 20-30 s
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        cleaner.start()
        threads = [threading.Thread(target=write), threading.Thread(target=read)]
        for t in threads:
            t.start()
        threads[0].join(60)
        stop.set()
        threads[1].join(60)
        cleaner.close()
    finally:
        sys.setswitchinterval(switch)
    assert not failures, failures[:3]
    print(f"{passes[0]} reads, {cleaner.rounds} cleaning rounds")
    assert passes[0] > 1, "the reader must read while the writer appends"
    assert cleaner.rounds > 0 and log.size < 4000 * 60
    log.close()
