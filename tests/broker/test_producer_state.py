"""Idempotent producer state of a partition: duplicates answered with the original offsets,
gaps and old epochs refused, state kept in Kafka-format ``.snapshot`` files and rebuilt from the
log after a crash."""

import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from kclient.broker import MiniBroker
from kclient.broker.log import Log, LogConfig
from kclient.broker.log.producer_state import read_snapshot
from kclient.connection import BrokerConnection
from kclient.protocol.apis import FETCH, PRODUCE
from kclient.protocol.error_codes import (
    InvalidProducerEpochError,
    OutOfOrderSequenceNumberError,
)
from kclient.protocol.records import RecordsReader, build_batch
from tests.needs import need_module

PID = 4242
OUT_OF_ORDER, INVALID_EPOCH = 45, 47


def batch(seq: int, n: int = 2, epoch: int = 0, pid: int = PID, tag: str = "v") -> bytes:
    """An idempotent batch of ``n`` records starting at sequence ``seq``."""
    values = [f"{tag}{seq + i}".encode() for i in range(n)]
    return build_batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def values_of(log: Log) -> list[bytes]:
    """Every record value in the log, in offset order."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        region = log.read(offset, 1 << 20)
        raw = region.read() if hasattr(region, "read") else region
        records = list(RecordsReader(raw))
        out += [r.value for r in records if r.offset >= offset]
        offset = records[-1].offset + 1
    return out


def v2_log(path: Path, **config) -> Log:
    return Log(path / "t-0", LogConfig(**config))


# ------------------------------------------------------------------ the log
def test_duplicate_batch_gets_original_offsets_and_is_not_stored(tmp_path):
    log = v2_log(tmp_path)
    first = log.append(batch(0), magic=2)
    second = log.append(batch(2), magic=2)
    again = log.append(batch(0), magic=2)
    assert (again.first_offset, again.last_offset, again.duplicate) == (0, 1, True)
    assert log.append(batch(2), magic=2).first_offset == second.first_offset == 2
    assert first.duplicate is False and log.log_end_offset == 4
    assert values_of(log) == [b"v0", b"v1", b"v2", b"v3"]


def test_only_the_last_five_batches_are_recognised(tmp_path):
    log = v2_log(tmp_path)
    for seq in range(0, 12, 2):
        log.append(batch(seq), magic=2)
    assert log.append(batch(2), magic=2).first_offset == 2  # 5th newest: duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(batch(0), magic=2)  # 6th newest: forgotten


def test_gap_is_out_of_order_and_nothing_is_written(tmp_path):
    log = v2_log(tmp_path)
    log.append(batch(0), magic=2)
    with pytest.raises(OutOfOrderSequenceNumberError, match="3 \\(incoming seq. number\\), 1"):
        log.append(batch(3), magic=2)
    assert log.log_end_offset == 2
    assert log.append(batch(2), magic=2).first_offset == 2


def test_epochs_fence_and_a_new_epoch_starts_at_zero(tmp_path):
    log = v2_log(tmp_path)
    log.append(batch(0, epoch=1), magic=2)
    with pytest.raises(InvalidProducerEpochError, match="smaller than the last seen epoch 1"):
        log.append(batch(2, epoch=0), magic=2)
    with pytest.raises(OutOfOrderSequenceNumberError, match="new epoch"):
        log.append(batch(5, epoch=2), magic=2)
    assert log.append(batch(0, epoch=2), magic=2).first_offset == 2
    assert log.append(batch(2, epoch=2), magic=2).first_offset == 4


def test_unknown_producer_may_start_at_any_sequence_and_wraps(tmp_path):
    """As Kafka 2.5+: no state for the producer (new, or removed by retention) accepts any
    sequence; sequences wrap from 2**31-1 to 0."""
    log = v2_log(tmp_path)
    log.append(batch(0x7FFFFFFF, n=1), magic=2)
    assert log.append(batch(0, n=1), magic=2).first_offset == 1


def test_producers_are_independent(tmp_path):
    log = v2_log(tmp_path)
    log.append(batch(0, pid=1), magic=2)
    log.append(batch(0, pid=2), magic=2)
    assert log.append(batch(0, pid=1), magic=2).duplicate
    assert not log.append(batch(2, pid=2), magic=2).duplicate


def test_plain_batches_are_not_tracked(tmp_path):
    log = v2_log(tmp_path)
    log.append(build_batch([b"a"]), magic=2)
    log.append(build_batch([b"a"]), magic=2)
    assert log.log_end_offset == 2 and log.producer_state.producers == {}


# ------------------------------------------------------------------ snapshots and recovery
def test_clean_shutdown_writes_a_kafka_format_snapshot(tmp_path):
    log = v2_log(tmp_path)
    log.append(batch(0, n=3, epoch=7), magic=2)
    log.close()
    path = tmp_path / "t-0" / f"{3:020d}.snapshot"
    data = path.read_bytes()
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count, crc) == (1, 1, crc32c(data[6:]))
    entry = struct.unpack_from(">qhiqiqiq", data, 10)
    assert entry[:5] == (PID, 7, 2, 2, 2) and entry[6:] == (-1, -1)
    assert len(data) == 10 + 46
    [loaded] = read_snapshot(path)
    assert (loaded.producer_id, loaded.epoch, loaded.last_seq) == (PID, 7, 2)


def test_state_survives_a_clean_restart(tmp_path):
    log = v2_log(tmp_path)
    log.append(batch(0, epoch=3), magic=2)
    log.close()
    log = v2_log(tmp_path)
    assert log.append(batch(0, epoch=3), magic=2).duplicate
    with pytest.raises(InvalidProducerEpochError):
        log.append(batch(2, epoch=2), magic=2)
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(batch(4, epoch=3), magic=2)


def test_roll_writes_a_snapshot_at_the_new_base_offset(tmp_path):
    log = v2_log(tmp_path, segment_bytes=200)
    for seq in range(0, 16, 2):
        log.append(batch(seq), magic=2)
    snaps = sorted(p.name for p in (tmp_path / "t-0").glob("*.snapshot"))
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 2 and snaps == [f"{b:020d}.snapshot" for b in bases[-2:]]


def test_crash_rebuilds_state_from_the_log(tmp_path):
    """No clean shutdown, no snapshot: the state comes from the batch headers in the log."""
    log = v2_log(tmp_path, segment_bytes=200)
    for seq in range(0, 10, 2):
        log.append(batch(seq, epoch=1), magic=2)
    log.flush()
    for snap in (tmp_path / "t-0").glob("*.snapshot"):
        snap.unlink()
    crashed = v2_log(tmp_path, segment_bytes=200)  # the first Log was never closed
    assert crashed.append(batch(8, epoch=1), magic=2).first_offset == 8
    with pytest.raises(OutOfOrderSequenceNumberError):
        crashed.append(batch(11, epoch=1), magic=2)
    assert crashed.append(batch(10, epoch=1), magic=2).first_offset == 10


def test_snapshot_beyond_a_truncated_log_is_ignored(tmp_path):
    """A crash that cut the log below a snapshot's offset: the snapshot is deleted, the state
    replayed from what the log still holds."""
    log = v2_log(tmp_path)
    log.append(batch(0), magic=2)
    log.append(batch(2), magic=2)
    log.close()
    seg = tmp_path / "t-0" / f"{0:020d}.log"
    size_one = len(batch(0))
    with open(seg, "r+b") as f:
        f.truncate(size_one + 5)  # second batch partial
    (tmp_path / "t-0" / ".kclient_clean_shutdown").unlink()
    log = v2_log(tmp_path)
    assert log.log_end_offset == 2
    assert not list((tmp_path / "t-0").glob(f"{4:020d}.snapshot"))
    assert log.append(batch(2), magic=2).first_offset == 2  # not a duplicate any more
    assert not log.append(batch(4), magic=2).duplicate


def test_corrupt_snapshot_falls_back_to_the_log(tmp_path):
    log = v2_log(tmp_path)
    log.append(batch(0), magic=2)
    log.close()
    snap = tmp_path / "t-0" / f"{2:020d}.snapshot"
    snap.write_bytes(snap.read_bytes()[:-1] + b"\x00")
    log = v2_log(tmp_path)
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(batch(5), magic=2)
    assert log.append(batch(2), magic=2).first_offset == 2


# ------------------------------------------------------------------ over the wire
def _produce(conn, records: bytes) -> tuple[int, int]:
    body = {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    }
    part = conn.request(PRODUCE, body, 9).responses[0].partition_responses[0]
    return part.error_code, part.base_offset


def _fetch_values(conn) -> list[bytes]:
    body = {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "topics": [
            {
                "topic": "t",
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
    }
    part = conn.request(FETCH, body, 11).responses[0].partitions[0]
    return [r.value for r in RecordsReader(bytes(part.records))]


def test_wire_duplicates_gaps_and_fencing(tmp_path):
    with MiniBroker(log_dir=tmp_path / "b") as b:
        b.create_topic("t", partitions=1)
        host, port = b.bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port)).connect() as conn:
            assert _produce(conn, batch(0, epoch=1)) == (0, 0)
            assert _produce(conn, batch(2, epoch=1)) == (0, 2)
            assert _produce(conn, batch(0, epoch=1)) == (0, 0)  # duplicate: success
            assert _produce(conn, batch(9, epoch=1)) == (OUT_OF_ORDER, -1)
            assert _produce(conn, batch(4, epoch=0)) == (INVALID_EPOCH, -1)
            assert _fetch_values(conn) == [b"v0", b"v1", b"v2", b"v3"]
    with MiniBroker(log_dir=tmp_path / "b") as b:  # restarted: state from snapshot
        host, port = b.bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port)).connect() as conn:
            assert _produce(conn, batch(2, epoch=1)) == (0, 2)
            assert _produce(conn, batch(4, epoch=1)) == (0, 4)


def test_kafka_python_producer_with_defaults(tmp_path):
    """kafka-python 3 turns idempotence on by default: every send succeeds, once each."""
    kafka = need_module("kafka")
    with MiniBroker(log_dir=tmp_path / "b") as b:
        b.create_topic("t", partitions=1)
        producer = kafka.KafkaProducer(bootstrap_servers=b.bootstrap)
        assert producer.config["enable_idempotence"] is True
        futures = [producer.send("t", f"m{i}".encode()) for i in range(200)]
        producer.flush()
        offsets = [f.get(timeout=10).offset for f in futures]
        producer.close()
        assert offsets == list(range(200))
        log, _ = b.partition_log("t", 0)
        assert log is not None and list(log.producer_state.producers)
        host, port = b.bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port)).connect() as conn:
            assert _fetch_values(conn)[:3] == [b"m0", b"m1", b"m2"]
