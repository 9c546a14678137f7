"""Log compaction in a real broker process: 10,000 records over 100 keys with tombstones, small
segments; after cleaning, kclient's SimpleConsumer and confluent-kafka read exactly the latest
value of every live key, at its original offset.  A kill -9 at several moments of a cleaning
(files written, swap committed, old segments deleted, in the middle of a throttled rewrite)
loses nothing, and the restarted broker completes or discards the interrupted swap."""

from __future__ import annotations

import random
import time

import pytest

from .compaction_support import (
    BrokerProcess,
    active_base,
    checkpoint,
    create_topic,
    latest_per_key,
    leftovers,
    produce,
    read_confluent,
    read_simple,
    wait_cleaned,
    workload,
)

BROKER_CONFIG = {"log.cleaner.backoff.ms": "100"}
UNTHROTTLED = "1.7976931348623157E308"  # Kafka's default: Double.MAX_VALUE


def _expected(written: list[tuple]) -> list[tuple]:
    """The latest record of every live key, in offset order."""
    return sorted((o, k, v) for k, (o, v) in latest_per_key(written).items() if v is not None)


def _settle(broker: BrokerProcess, written: list[tuple], rounds: int = 6) -> list[tuple]:
    """Write single-use keys after delete.retention.ms, each rolling the active segment (past
    segment.ms), until a read shows the latest value per live key (tombstones gone)."""
    for i in range(rounds):
        wait_cleaned(broker)
        if read_simple(broker.bootstrap) == _expected(written):
            return written
        time.sleep(1.1)  # past delete.retention.ms and segment.ms
        written = written + produce(broker.bootstrap, [(b"filler-%d" % i, b"f")])
        deadline = time.monotonic() + 30
        while checkpoint(broker.log_dir) < written[-1][0] and time.monotonic() < deadline:
            time.sleep(0.1)
    return written


def test_compacted_log_reads_latest_value_per_live_key(tmp_path):
    broker = BrokerProcess(tmp_path / "logs", BROKER_CONFIG)
    try:
        broker.start()
        create_topic(broker.bootstrap)
        written = produce(broker.bootstrap, workload(), codec="none")
        assert [o for o, _, _ in written] == list(range(len(written)))
        segments_before = len(list(broker.partition_dir.glob("*.log")))
        bytes_before = sum(p.stat().st_size for p in broker.partition_dir.glob("*.log"))
        written = _settle(broker, written)
        expected = _expected(written)
        assert read_simple(broker.bootstrap) == expected
        got, low, high = read_confluent(broker.bootstrap)
        assert got == expected
        assert (low, high) == (0, len(written))  # earliest and latest unchanged
        bytes_after = sum(p.stat().st_size for p in broker.partition_dir.glob("*.log"))
        print(
            f"compacted {len(written)} records in {segments_before} segments "
            f"({bytes_before} bytes) to {len(expected)} records, {bytes_after} bytes"
        )
        assert bytes_after < bytes_before / 5
        assert len({k for _, k, _ in expected}) == len(expected) > 80
        broker.stop()  # a clean restart keeps it all
        broker.start()
        assert read_simple(broker.bootstrap) == expected
    finally:
        broker.kill9()


# "mid-rewrite" kills 0.56 s into a throttled rewrite (only a .cleaned file exists then); the
# early moments of a rewrite (0.12, 0.18, 0.27 s) are test_repeated_kills_during_cleaning_...'s
@pytest.mark.parametrize("step", ["cleaned", "swap", "deleted", "mid-rewrite"])
def test_kill9_during_cleaning_loses_nothing(tmp_path, step):
    config = dict(BROKER_CONFIG)
    env = {}
    if step.startswith("mid-rewrite"):
        config["log.cleaner.io.max.bytes.per.second"] = "20000"
    else:
        env["KCLIENT_CLEANER_CRASH_AT"] = step
    broker = BrokerProcess(tmp_path / "logs", config, env)
    try:
        broker.start(env={}, extra={"log.cleaner.enable": "false"})
        create_topic(broker.bootstrap)
        written = produce(broker.bootstrap, workload(seed=len(step)))
        broker.stop()
        if step.startswith("mid-rewrite"):
            broker.start()  # now the cleaner runs
            _kill_while_rewriting(broker, random.Random(step).uniform(0.05, 0.7))
        else:
            try:
                broker.start()  # now the cleaner runs
            except RuntimeError:
                pass  # the crash hook may fire before the port opens (a fast cleaner)
            broker.proc.wait(60)  # the crash hook killed it
        assert broker.proc.returncode == -9
        left = leftovers(broker.partition_dir)
        assert left, "the kill must interrupt a cleaning"
        # recovery runs at load: look at the files with the cleaner off, so that a new cleaning
        # round started right away cannot be taken for a leftover
        broker.start(env={}, extra={"log.cleaner.enable": "false"})
        assert not leftovers(broker.partition_dir), "recovery completes or discards the swap"
        log_text = broker.out.read_text(errors="replace")
        if any(n.endswith(".swap") for n in left):
            assert "completed the interrupted swap" in log_text
        else:
            assert "of an interrupted cleaning" in log_text
        broker.stop()
        broker.start(env={}, extra={"log.cleaner.io.max.bytes.per.second": UNTHROTTLED})
        wait_cleaned(broker)
        got = read_simple(broker.bootstrap)
        _assert_nothing_lost(written, got, active_base(broker.partition_dir))
        confluent_got, low, high = read_confluent(broker.bootstrap)
        assert confluent_got == got and (low, high) == (0, len(written))
    finally:
        broker.kill9()


def _kill_while_rewriting(broker: BrokerProcess, delay: float) -> None:
    """kill -9 ``delay`` seconds after a ``.cleaned`` file appears."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(n.endswith(".cleaned") for n in leftovers(broker.partition_dir)):
            time.sleep(delay)
            broker.kill9()
            return
        time.sleep(0.005)
    raise AssertionError("the cleaner never started rewriting")


def _assert_nothing_lost(written: list[tuple], got: list[tuple], active: int) -> None:
    """Every key's last record is there at its offset (a deleted key may be gone); below the
    active segment each key appears once; the active segment is as written."""
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(set(offsets))
    last_read = latest_per_key(got)
    for key, (offset, value) in latest_per_key(written).items():
        if value is None and key not in last_read:
            continue
        assert last_read[key] == (offset, value), key
    below = [k for o, k, _ in got if o < active]
    assert len(below) == len(set(below)), "one record per key in the cleaned segments"
    assert [g for g in got if g[0] >= active] == [w for w in written if w[0] >= active]
    assert set(got) <= set(written), "nothing invented"


def test_repeated_kills_during_cleaning_then_a_clean_finish(tmp_path):
    """Three kill -9s in a row, each in the middle of a throttled cleaning that starts from
    whatever the previous recovery left; then an unthrottled run finishes the job."""
    broker = BrokerProcess(tmp_path / "logs", dict(BROKER_CONFIG))
    try:
        broker.start(extra={"log.cleaner.enable": "false"})
        create_topic(broker.bootstrap)
        written = produce(broker.bootstrap, workload(seed=99))
        broker.stop()
        rng = random.Random(3)
        for _ in range(3):
            broker.start(extra={"log.cleaner.io.max.bytes.per.second": "20000"})
            _kill_while_rewriting(broker, rng.uniform(0.0, 0.5))
        broker.start(extra={"log.cleaner.io.max.bytes.per.second": UNTHROTTLED})
        wait_cleaned(broker)
        got = read_simple(broker.bootstrap)
        _assert_nothing_lost(written, got, active_base(broker.partition_dir))
        assert read_confluent(broker.bootstrap)[0] == got
    finally:
        broker.kill9()
