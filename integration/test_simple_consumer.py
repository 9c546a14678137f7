"""SimpleConsumer against real Kafka: 3.x (ZooKeeper mode) at the old API versions over topics
kept in message format v0, v1 and v2 (down-conversion), and 4.x at its own versions."""

from __future__ import annotations

import time

import pytest

from kclient import Producer, ProducerData
from kclient.errors import KafkaError, OffsetOutOfRangeError, UnsupportedCompressionTypeError
from kclient.protocol.apis import FETCH, LIST_OFFSETS, PRODUCE
from kclient.simple import FetchRequest, OffsetRequest, SimpleConsumer
from tests.waiting import next_millisecond

from .helpers import fetch_all, leader_address, new_topic

#: topic config message.format.version per on-disk format (3.x below IBP 3.0 honours it)
FORMATS = {"v0": "0.8.2", "v1": "0.10.0", "v2": "2.8"}
#: what a 0.8.2 client speaks: Produce v0, Fetch v0, ListOffsets v0, no ApiVersions
OLD_CLIENT = {"api_version_request": False, "broker_version_fallback": "0.8.2"}
OLD_PRODUCER = {"api.version.request": False, "broker.version.fallback": "0.8.2"}


def produce(
    server, topic: str, n: int, codec: str = "none", extra: dict | None = None, partitions: int = 2
) -> dict[int, list[tuple[int, bytes, bytes]]]:
    """Send n keyed messages (partition = i % partitions); the acknowledged (offset, key, value)
    of each partition."""
    reports = []
    conf = {
        "metadata.broker.list": server.bootstrap,
        "producer.type": "sync",
        "compression.codec": codec,
        **(extra or {}),
    }
    data = [
        ProducerData(
            topic, b"value-%d-" % i + b"x" * (i % 50), key=b"k%d" % i, partition=i % partitions
        )
        for i in range(n)
    ]
    with Producer(conf, on_report=reports.append) as p:
        p.send(data[: n // 2])
        p.send(data[n // 2 :])
    acked: dict[int, list] = {p: [] for p in range(partitions)}
    for r in reports:
        assert r.error is None, r.error
        acked[r.partition] += [
            (r.base_offset + i, m.key, m.value) for i, m in enumerate(r.messages)
        ]
    return {p: sorted(v) for p, v in acked.items()}


def check_offsets(c: SimpleConsumer, topic: str, partition: int, end: int, old: bool) -> None:
    assert c.get_offsets_before(topic, partition, OffsetRequest.LATEST_TIME, 1) == [end]
    assert c.get_offsets_before(topic, partition, OffsetRequest.EARLIEST_TIME, 1) == [0]
    if old:  # ListOffsets v0: the log end, then each segment's base offset, newest first
        assert c.get_offsets_before(topic, partition, OffsetRequest.LATEST_TIME, 10) == [end, 0]
        future = int(time.time() * 1000) + 60_000
        assert c.get_offsets_before(topic, partition, future, 10) == [end, 0]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("fmt", ["v0", "v1", "v2"])
def test_kafka3_old_api_versions_read_every_format(kafka3, fmt, codec):
    topic = new_topic(kafka3, 2, config={"message.format.version": FORMATS[fmt]})
    acked = produce(kafka3, topic, 400, codec)
    host, port = leader_address(kafka3, topic, 0)
    with SimpleConsumer(host, port, so_timeout=15000, **OLD_CLIENT) as c:
        assert c.connection.version(FETCH) == 0 and c.connection.version(LIST_OFFSETS) == 0
        for partition in (0, 1):
            assert fetch_all(c, topic, partition, max_size=4096) == acked[partition]
            check_offsets(c, topic, partition, len(acked[partition]), old=True)
        sets = c.multifetch(
            [FetchRequest(topic, 1, 7, 1 << 16), FetchRequest(topic, 0, 0, 1 << 16)]
        )
        assert [(ms.topic, ms.partition) for ms in sets] == [(topic, 1), (topic, 0)]
        assert [(mo.offset, mo.message.key) for mo in sets[0] if mo.offset >= 7][0] == acked[1][7][
            :2
        ]
        first = [mo.message.value for mo in sets[1]]
        assert first and first == [v for _, _, v in acked[0]][: len(first)]
        with pytest.raises(OffsetOutOfRangeError):
            c.fetch(FetchRequest(topic, 0, 10_000, 4096))
    with SimpleConsumer(host, port, so_timeout=15000) as modern:  # Fetch v4+ over old formats
        assert modern.connection.version(FETCH) >= 4
        for partition in (0, 1):
            assert fetch_all(modern, topic, partition) == acked[partition]
            check_offsets(modern, topic, partition, len(acked[partition]), old=False)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("fmt", ["v0", "v1", "v2"])
def test_kafka3_old_producer_into_every_format(kafka3, fmt, codec):
    """Produce v0 (message format v0: xerial snappy, lz4 with the KAFKA-3160 header checksum) is
    accepted and converted on write; every reader sees the same data."""
    topic = new_topic(kafka3, 2, config={"message.format.version": FORMATS[fmt]})
    acked = produce(kafka3, topic, 200, codec, OLD_PRODUCER)
    host, port = leader_address(kafka3, topic, 0)
    for options in (OLD_CLIENT, {}):
        with SimpleConsumer(host, port, so_timeout=15000, **options) as c:
            for partition in (0, 1):
                assert fetch_all(c, topic, partition) == acked[partition]


def test_kafka3_zstd_cannot_go_down_to_fetch_v0(kafka3):
    """zstd exists only in v2 batches: Kafka refuses to down-convert it, kclient says so."""
    topic = new_topic(kafka3, 1, config={"message.format.version": FORMATS["v2"]})
    produce(kafka3, topic, 10, "zstd", partitions=1)
    host, port = leader_address(kafka3, topic, 0)
    with SimpleConsumer(host, port, so_timeout=15000, **OLD_CLIENT) as c:
        with pytest.raises(UnsupportedCompressionTypeError):
            list(c.fetch(FetchRequest(topic, 0, 0)))


def test_kafka3_produce_v0_is_what_an_old_producer_sends(kafka3):
    topic = new_topic(kafka3, 1, config={"message.format.version": FORMATS["v0"]})
    with Producer(
        {"metadata.broker.list": kafka3.bootstrap, "producer.type": "sync", **OLD_PRODUCER}
    ) as p:
        p.send(ProducerData(topic, b"x", partition=0))
        conn = p.context.cluster.any_connection()
        assert conn.version(PRODUCE) == 0


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kafka4_fetch_multifetch_and_offsets(kafka4, codec):
    topic = new_topic(kafka4, 2)
    acked = produce(kafka4, topic, 400, codec)
    host, port = leader_address(kafka4, topic, 0)
    with SimpleConsumer(host, port, so_timeout=15000) as c:
        for partition in (0, 1):
            assert fetch_all(c, topic, partition, max_size=4096) == acked[partition]
            check_offsets(c, topic, partition, len(acked[partition]), old=False)
        sets = c.multifetch([FetchRequest(topic, 1, 0), FetchRequest(topic, 0, 0)])
        assert [mo.message.value for mo in sets[0]] == [v for _, _, v in acked[1]]
        assert [mo.message.value for mo in sets[1]] == [v for _, _, v in acked[0]]
        with pytest.raises(OffsetOutOfRangeError):
            c.fetch(FetchRequest(topic, 0, 10_000, 4096))


def test_kafka4_offsets_commit_and_fetch(kafka4):
    topic = new_topic(kafka4, 2)
    produce(kafka4, topic, 10)
    host, port = leader_address(kafka4, topic, 0)
    group = f"simple-{topic}"
    with SimpleConsumer(host, port, so_timeout=15000) as c:
        c.commit_offsets(group, {(topic, 0): 3, (topic, 1): (5, "meta")})
        got = c.fetch_offsets(group, [(topic, 0), (topic, 1)])
    assert got[(topic, 0)].offset == 3
    assert tuple(got[(topic, 1)]) == (5, "meta")


def test_kafka4_refuses_the_old_versions_clearly(kafka4):
    """Kafka 4 removed Fetch v0-v3 (KIP-896): a 0.8.2-style client gets an error, not garbage."""
    topic = new_topic(kafka4, 1)
    produce(kafka4, topic, 5, partitions=1)
    host, port = leader_address(kafka4, topic, 0)
    with SimpleConsumer(host, port, so_timeout=5000, **OLD_CLIENT) as c:
        with pytest.raises(KafkaError):
            list(c.fetch(FetchRequest(topic, 0, 0)))


def test_kafka4_offsets_by_timestamp(kafka4):
    """ListOffsets by time: the first offset whose timestamp is at or after the time."""
    topic = new_topic(kafka4, 1)
    produce(kafka4, topic, 30, partitions=1)
    middle = next_millisecond()  # after every earlier record's timestamp ...
    next_millisecond(middle)  # ... and before every later one's
    produce(kafka4, topic, 20, partitions=1)
    host, port = leader_address(kafka4, topic, 0)
    with SimpleConsumer(host, port, so_timeout=15000) as c:
        assert c.get_offsets_before(topic, 0, middle, 1) == [30]
        assert c.get_offsets_before(topic, 0, 0, 1) == [0]
        assert c.get_offsets_before(topic, 0, middle + 3_600_000, 1) in ([], [50])


@pytest.mark.parametrize("options", [OLD_CLIENT, {}], ids=["0.8.2-versions", "negotiated"])
def test_kafka3_offsets_commit_and_fetch(kafka3, options):
    topic = new_topic(kafka3, 2)
    produce(kafka3, topic, 10)
    host, port = leader_address(kafka3, topic, 0)
    group = f"simple-{topic}"
    with SimpleConsumer(host, port, so_timeout=15000, **options) as c:
        c.commit_offsets(group, {(topic, 0): 4, (topic, 1): (6, "m")})
        got = c.fetch_offsets(group, [(topic, 0), (topic, 1)])
    assert got[(topic, 0)].offset == 4 and tuple(got[(topic, 1)]) == (6, "m")
