"""Log compaction, the mini-broker beside real Apache Kafka (3.x, KRaft: small segments allowed).

The same record batches (keyed, tombstones, and keyless ones in the tail, written while the
topic's policy is still "delete") go to both; the same segments roll; the policy becomes
"compact" and each broker runs one cleaning round; after delete.retention.ms more batches roll
the active segment and each runs a second round, which removes the tombstones.  After each
round the segment files must hold the same batches: base and last offsets kept, the same
records retained, an empty batch where Kafka keeps one, the delete-horizon attribute where
Kafka sets it.  A keyless record is refused alike (INVALID_RECORD
with the same per-record errors)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from kclient.broker import MiniBroker
from kclient.broker.log.compact import DELETE_HORIZON_MASK
from kclient.connection import BrokerConnection
from kclient.protocol.apis import PRODUCE
from kclient.protocol.records import RecordsReader, build_batch
from tests.needs import need_module

from .conftest import OLD_FORMATS, _server

confluent_admin = need_module("confluent_kafka.admin")

RETENTION_MS = 3000
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "2000",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": str(RETENTION_MS),
}


@pytest.fixture(scope="module")
def kafka_cleaning():
    """Kafka 3.x (KRaft) whose cleaner looks for work every 100 ms."""
    with _server("3", config={"log.cleaner.backoff.ms": "100"}) as server:
        yield server


@pytest.fixture(scope="module")
def kafka_cleaning_old_formats():
    """Kafka 3.x in ZooKeeper mode able to keep message formats v0/v1, cleaning every 100 ms."""
    with _server(
        "3", mode="zookeeper", config={**OLD_FORMATS, "log.cleaner.backoff.ms": "100"}
    ) as server:
        yield server


def _batches(codec: int = 0, keyless_tail: bool = True) -> list[bytes]:
    """Keyed batches with tombstones, then (``keyless_tail``) keyless ones: a compacted log
    drops them, and the v2 batch ending a cleaning round stays as an empty batch.  (Kafka
    3.9.2 fails on that case in the v0/v1 formats - "Empty batches are only supported for
    magic v2 and above" - and marks the partition uncleanable; the mini-broker drops the
    message.  The old formats are therefore compared without the keyless tail.)"""
    now = int(time.time() * 1000)
    out, n = [], 0
    for i in range(100):
        size = 1 + i % 4
        keyless = keyless_tail and i >= 60
        keys = [None if keyless else b"key-%d" % ((n + j) * 7 % 9) for j in range(size)]
        values = [
            None if (n + j) % 11 == 5 else b"value-%d-" % (n + j) + b"x" * (n % 13)
            for j in range(size)
        ]
        out.append(build_batch(values, keys, timestamp=now + n, codec=codec))
        n += size
    return out


#: a topic just created may not have its leader in place yet: nothing was written, ask again
_NOT_READY = {3, 6}  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER


def _produce(bootstrap: str, topic: str, records: bytes) -> object:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = BrokerConnection(host, int(port)).connect()
    try:
        body = {
            "acks": -1,
            "timeout_ms": 10000,
            "transactional_id": None,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
        }
        deadline = time.monotonic() + 15
        while True:
            part = conn.request(PRODUCE, body).responses[0].partition_responses[0]
            if part.error_code not in _NOT_READY or time.monotonic() > deadline:
                return part
            time.sleep(0.1)
    finally:
        conn.close()


def _shape(directory: Path) -> list[tuple]:
    """Per segment file below the active one: its name and each batch's offsets, record count,
    attributes (delete-horizon bit apart) and records; timestamps only where meaningful."""
    files = sorted(directory.glob("*.log"))[:-1]
    out = []
    for path in files:
        batches = []
        for b in RecordsReader(path.read_bytes()).batches():
            horizon = b.first_timestamp if _attrs(path, b) & DELETE_HORIZON_MASK else None
            batches.append(
                (
                    b.base_offset,
                    b.last_offset,
                    b.record_count,
                    b.codec,
                    horizon is not None,
                    [(r.offset, r.key, r.value, r.timestamp) for r in b.records],
                )
            )
        out.append((path.name, batches))
    return out


def _attrs(path: Path, batch) -> int:
    with open(path, "rb") as f:
        f.seek(batch.position + 21)
        return int.from_bytes(f.read(2), "big")


def _wait_kafka_cleaned(data: Path, topic: str, active: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    point = data / "cleaner-offset-checkpoint"
    while time.monotonic() < deadline:
        if point.exists() and f"{topic} 0 {active}" in point.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"Kafka did not clean {topic} up to {active}")


@pytest.mark.parametrize(
    "fmt,codec", [("2.8", 0), ("2.8", 1), ("2.8", 3), ("2.8", 4), ("0.10.0", 0), ("0.8.2", 0)]
)
def test_cleaned_segments_match_kafkas(request, tmp_path, fmt, codec):
    server = "kafka_cleaning" if fmt == "2.8" else "kafka_cleaning_old_formats"
    kafka_cleaning = request.getfixturevalue(server)
    topic = f"compact-{uuid.uuid4().hex[:8]}"
    admin = confluent_admin.AdminClient({"bootstrap.servers": kafka_cleaning.bootstrap})
    held = {
        **TOPIC_CONFIG,
        "cleanup.policy": "delete",  # keyless taken, no cleaning
        "message.format.version": fmt,
    }
    admin.create_topics([confluent_admin.NewTopic(topic, 1, 1, config=held)])[topic].result(30)
    batches = _batches(codec, keyless_tail=fmt == "2.8")
    with MiniBroker(log_dir=tmp_path / "mini") as mini:
        mini.create_topic(topic, config=held)
        for batch in batches:
            assert _produce(kafka_cleaning.bootstrap, topic, batch).error_code == 0
            assert _produce(mini.bootstrap, topic, batch).error_code == 0
        kafka_dir = kafka_cleaning.nodes[0].data / f"{topic}-0"
        mini_log = mini.log_manager.get_log(topic, 0)
        kafka_files = sorted(p.name for p in kafka_dir.glob("*.log"))
        assert kafka_files == sorted(p.name for p in mini_log.directory.glob("*.log"))
        assert len(kafka_files) > 4
        before = _shape(kafka_dir)
        assert before == _shape(mini_log.directory), "same segments before cleaning"
        _set_policy(admin, topic, mini_log, "compact")
        kafka_after = _clean_both(kafka_cleaning, topic, mini, mini_log)
        assert kafka_after != before, "Kafka cleaned"
        flat = [b for _, bs in kafka_after for b in bs]
        if fmt == "2.8":
            assert any(b[2] == 0 for b in flat), "the round ends with an emptied batch"
            assert any(b[4] for b in flat), "tombstones kept under a delete horizon"
            assert any(r[2] is None for b in flat for r in b[5])
        time.sleep(RETENTION_MS / 1000 + 0.5)
        _set_policy(admin, topic, mini_log, "delete")  # no cleaning while we write
        for batch in _batches(codec, keyless_tail=False)[:40]:
            assert _produce(kafka_cleaning.bootstrap, topic, batch).error_code == 0
            assert _produce(mini.bootstrap, topic, batch).error_code == 0
        assert sorted(p.name for p in kafka_dir.glob("*.log")) == sorted(
            p.name for p in mini_log.directory.glob("*.log")
        )
        _set_policy(admin, topic, mini_log, "compact")
        second = _clean_both(kafka_cleaning, topic, mini, mini_log)
    old_tombstones = [
        r
        for _, bs in second
        for b in bs
        for r in b[5]
        if r[2] is None and r[0] < int(kafka_files[-1][:20])
    ]
    assert not old_tombstones, "the second round removes the first round's tombstones"


def _set_policy(admin, topic: str, mini_log, policy: str) -> None:
    """cleanup.policy of the topic on Kafka (AlterConfigs) and of the mini-broker's log."""
    resource = confluent_admin.ConfigResource(
        confluent_admin.ResourceType.TOPIC,
        topic,
        incremental_configs=[
            confluent_admin.ConfigEntry(
                "cleanup.policy",
                policy,
                incremental_operation=confluent_admin.AlterConfigOpType.SET,
            )
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)
    mini_log.config.cleanup_policy = (policy,)


def _clean_both(kafka, topic: str, mini: MiniBroker, mini_log) -> list[tuple]:
    """Let Kafka clean up to its active segment, clean the mini-broker's log once, compare the
    segment files; Kafka's shape."""
    kafka_dir = kafka.nodes[0].data / f"{topic}-0"
    kafka_files = sorted(p.name for p in kafka_dir.glob("*.log"))
    _wait_kafka_cleaned(kafka.nodes[0].data, topic, int(kafka_files[-1][:20]))
    assert mini.log_manager.cleaner.clean(mini_log) is not None
    kafka_shape = _shape(kafka_dir)
    assert _shape(mini_log.directory) == kafka_shape
    return kafka_shape


@pytest.mark.parametrize("version", [3, 8, 9])
def test_keyless_refusal_matches_kafka(kafka_cleaning, tmp_path, version):
    topic = f"keyless-{uuid.uuid4().hex[:8]}"
    admin = confluent_admin.AdminClient({"bootstrap.servers": kafka_cleaning.bootstrap})
    admin.create_topics([confluent_admin.NewTopic(topic, 1, 1, config=TOPIC_CONFIG)])[topic].result(
        30
    )
    batch = build_batch([b"a", b"b", b"c"], [b"k", None, None])
    answers = []
    with MiniBroker(log_dir=tmp_path / "mini") as mini:
        mini.create_topic(topic, config=TOPIC_CONFIG)
        for bootstrap in (kafka_cleaning.bootstrap, mini.bootstrap):
            h, p = bootstrap.split(",")[0].rsplit(":", 1)
            conn = BrokerConnection(h, int(p)).connect()
            body = {
                "acks": -1,
                "timeout_ms": 10000,
                "transactional_id": None,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
            }
            part = conn.request(PRODUCE, body, version=version).responses[0].partition_responses[0]
            conn.close()
            answers.append(
                (
                    part.error_code,
                    [(e.batch_index, e.batch_index_error_message) for e in part.record_errors]
                    if version >= 8
                    else None,
                    part.error_message if version >= 8 else None,
                )
            )
    assert answers[0][0] == 87
    assert answers[1] == answers[0]
