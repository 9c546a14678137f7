"""Fetch and ListOffsets on a compacted partition over the wire: a fetch at an offset that was
compacted away returns the next batch (every Fetch version, down-converted for the old ones),
and the earliest / latest offsets stay where they were."""

from __future__ import annotations

import pytest

from kclient.protocol.apis import FETCH, LIST_OFFSETS, PRODUCE
from kclient.protocol.records import RecordsReader, build_batch
from tests.needs import need_module

TOPIC = "cfetch"


def _produce(client, records) -> None:
    body = {
        "acks": -1,
        "timeout_ms": 5000,
        "transactional_id": None,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}],
    }
    assert client.request(PRODUCE, 3, body).responses[0].partition_responses[0].error_code == 0


def _confluent_read(bootstrap: str, with_timestamps: bool = False) -> list[tuple]:
    """confluent-kafka's view of the partition from offset 0 to its end."""
    confluent_kafka = need_module("confluent_kafka")
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "check", "enable.partition.eof": True}
    )
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
    got = []
    while True:
        msg = consumer.poll(10)
        assert msg is not None
        if msg.error():
            break
        row = (msg.offset(), msg.key(), msg.value())
        got.append(row + (msg.timestamp()[1],) if with_timestamps else row)
    consumer.close()
    return got


def _fetch(client, offset: int, version: int):
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }
    return client.request(FETCH, version, body).responses[0].partitions[0]


@pytest.fixture
def compacted(mini_broker, raw_client):
    """A partition whose offsets 0..59 were written as 20 batches over 4 keys, then cleaned."""
    mini_broker.create_topic(TOPIC, config={"cleanup.policy": "compact", "segment.bytes": "600"})
    client = raw_client(mini_broker.bootstrap)
    for i in range(20):
        _produce(
            client,
            build_batch(
                [b"v%d" % (3 * i + j) for j in range(3)],
                [b"k%d" % ((3 * i + j) % 4) for j in range(3)],
            ),
        )
    log = mini_broker.log_manager.get_log(TOPIC, 0)
    log.roll()
    assert mini_broker.log_manager.cleaner.clean(log) is not None
    return client, log


@pytest.mark.parametrize("version", [0, 2, 4, 11])
def test_fetch_at_a_compacted_offset_returns_the_next_batch(compacted, version):
    client, log = compacted
    part = _fetch(client, 0, version)
    records = list(RecordsReader(bytes(part.records)))
    assert [(r.offset, r.key) for r in records] == [
        (56, b"k0"),
        (57, b"k1"),
        (58, b"k2"),
        (59, b"k3"),
    ]
    assert part.high_watermark == 60
    for gap in (1, 30, 55):
        records = list(RecordsReader(bytes(_fetch(client, gap, version).records)))
        assert records[0].offset == 56
    assert bytes(_fetch(client, 60, version).records) == b""


def test_list_offsets_earliest_and_latest_unchanged(compacted):
    client, log = compacted

    def v1(ts):
        body = {
            "replica_id": -1,
            "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": ts}]}],
        }
        return client.request(LIST_OFFSETS, 1, body).topics[0].partitions[0].offset

    def v0(ts):
        body = {
            "replica_id": -1,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [{"partition_index": 0, "timestamp": ts, "max_num_offsets": 1}],
                }
            ],
        }
        return client.request(LIST_OFFSETS, 0, body).topics[0].partitions[0].old_style_offsets

    assert (v1(-2), v1(-1)) == (0, 60)
    assert (v0(-2), v0(-1)) == ([0], [60])
    assert (log.log_start_offset, log.log_end_offset) == (0, 60)


def test_peer_clients_read_batches_with_a_delete_horizon(mini_broker, raw_client):
    """A cleaned batch keeping a tombstone carries its delete horizon in baseTimestamp; record
    timestamps (deltas from it) still read right in kclient and confluent-kafka."""
    mini_broker.create_topic(TOPIC, config={"cleanup.policy": "compact"})
    client = raw_client(mini_broker.bootstrap)
    _produce(
        client,
        build_batch([b"a", None, b"c"], [b"k1", b"k2", b"k3"], [1_000_000, 1_000_500, 1_000_900]),
    )
    _produce(client, build_batch([b"newer"], [b"k1"], [2_000_000]))
    log = mini_broker.log_manager.get_log(TOPIC, 0)
    log.roll()
    assert mini_broker.log_manager.cleaner.clean(log) is not None
    data = bytes(_fetch(client, 0, 11).records)
    first = next(RecordsReader(data).batches())
    assert first.first_timestamp > 1_700_000_000_000  # now + delete.retention.ms
    expected = [
        (1, b"k2", None, 1_000_500),
        (2, b"k3", b"c", 1_000_900),
        (3, b"k1", b"newer", 2_000_000),
    ]
    assert [(r.offset, r.key, r.value, r.timestamp) for r in RecordsReader(data)] == expected
    got = _confluent_read(mini_broker.bootstrap, with_timestamps=True)
    assert got == expected


@pytest.mark.parametrize("fmt", ["0.8.2", "0.10.0", "2.0"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_old_message_formats_compact_end_to_end(mini_broker, fmt, codec):
    """confluent-kafka writes, the broker stores format v0 / v1 / v2 (converting), cleans it,
    and confluent-kafka reads the latest value per key back at its offset."""
    confluent_kafka = need_module("confluent_kafka")
    mini_broker.create_topic(
        TOPIC, config={"cleanup.policy": "compact", "message.format.version": fmt}
    )
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": mini_broker.bootstrap, "compression.type": codec, "linger.ms": 20}
    )
    latest = {}
    for i in range(300):
        key = b"k%d" % (i % 11)
        producer.produce(TOPIC, key=key, value=b"v%d" % i)
        latest[key] = (i, b"v%d" % i)
    assert producer.flush(15) == 0
    log = mini_broker.log_manager.get_log(TOPIC, 0)
    log.roll()
    assert mini_broker.log_manager.cleaner.clean(log) is not None
    got = _confluent_read(mini_broker.bootstrap)
    assert got == sorted((o, k, v) for k, (o, v) in latest.items())
