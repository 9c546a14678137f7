"""kclient's Producer against real Kafka 4.x: sync and async, every codec, read back by kclient
and by Kafka's own console consumer; keyed messages land where the Java producer puts them."""

from __future__ import annotations

import time

import pytest

from kclient import Producer, ProducerData
from kclient.errors import FailedToSendMessageError
from kclient.partitioner import DefaultPartitioner
from kclient.simple import FetchRequest, SimpleConsumer

from .helpers import java_consume, java_produce, leader_address, new_topic, read_partition

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _messages(topic: str, n: int, tag: str) -> list[ProducerData]:
    return [
        ProducerData(topic, f"{tag}-value-{i}".encode() * (1 + i % 7), key=f"key-{i % 37}".encode())
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_codec_is_acknowledged_and_read_back(kafka4, mode, codec):
    topic = new_topic(kafka4, partitions=3)
    sent = _messages(topic, 300, codec)
    reports = []
    conf = {
        "metadata.broker.list": kafka4.bootstrap,
        "producer.type": mode,
        "compression.codec": codec,
        "request.required.acks": -1,
    }
    with Producer(conf, on_report=reports.append) as p:
        p.send(sent[:250])  # a list, batched
        for m in sent[250:]:  # one at a time
            p.send(m)
        p.flush()
    assert all(r.error is None for r in reports), [r.error for r in reports if r.error]
    acked = {}
    for r in reports:
        for i, m in enumerate(r.messages):
            acked[(r.partition, r.base_offset + i)] = (m.key, m.value)
    assert len(acked) == len(sent)
    got = {}
    for partition in range(3):
        for offset, key, value in read_partition(kafka4, topic, partition):
            got[(partition, offset)] = (key, value)
    assert got == acked
    partitioner = DefaultPartitioner()
    assert all(partitioner.partition(k, 3) == p for (p, _), (k, _) in got.items())


def test_java_console_consumer_reads_every_codec(kafka4):
    topic = new_topic(kafka4, partitions=1)
    expected = []
    for codec in CODECS:
        with Producer(
            {
                "metadata.broker.list": kafka4.bootstrap,
                "producer.type": "sync",
                "compression.codec": codec,
            }
        ) as p:
            batch = [
                ProducerData(topic, f"{codec}-{i}".encode(), key=f"k{i}".encode())
                for i in range(40)
            ]
            p.send(batch)
        expected += [f"k{i}\t{codec}-{i}" for i in range(40)]
    assert java_consume(kafka4, topic, len(expected)) == expected


def test_keyed_partition_choice_equals_the_java_producer(kafka4):
    partitions = 7
    java_topic = new_topic(kafka4, partitions, prefix="java")
    ours = new_topic(kafka4, partitions, prefix="kclient")
    keys = [f"user-{i}" for i in range(300)] + ["", "ü-ñ-日本", "a" * 200]
    java_produce(
        kafka4,
        java_topic,
        [f"{k}\t{i}" for i, k in enumerate(keys)],
        "parse.key=true",
        "key.separator=\t",
    )
    with Producer({"metadata.broker.list": kafka4.bootstrap, "producer.type": "sync"}) as p:
        p.send([ProducerData(ours, str(i).encode(), key=k.encode()) for i, k in enumerate(keys)])

    def placement(topic):
        return {
            key: partition
            for partition in range(partitions)
            for _, key, _ in read_partition(kafka4, topic, partition)
        }

    java = placement(java_topic)
    assert len(java) == len(keys) and len(set(java.values())) == partitions
    assert placement(ours) == java


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_producer_finds_the_brokers_in_zookeeper(kafka3_cluster, mode):
    """zookeeper.connect instead of a broker list: the producer reads the registry the Kafka
    3.9 brokers wrote and sends to the leader of every partition (spread over both brokers)."""
    topic = new_topic(kafka3_cluster, partitions=4)
    reports = []
    with Producer(
        {
            "zookeeper.connect": kafka3_cluster.zookeeper_connect,
            "producer.type": mode,
            "request.required.acks": -1,
        },
        on_report=reports.append,
    ) as p:
        p.send([ProducerData(topic, b"%d" % i, key=b"k%d" % i) for i in range(100)])
        p.flush()
    assert all(r.error is None for r in reports)
    got = sorted(v for part in range(4) for _, _, v in read_partition(kafka3_cluster, topic, part))
    assert got == sorted(b"%d" % i for i in range(100))


@pytest.mark.parametrize("acks", [0, 1, -1])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_acks_level(kafka4, mode, acks):
    """acks=0 gets no answer from Kafka (no offsets reported), yet nothing is lost when the
    producer closes right after sending; 1 and -1 report offsets."""
    topic = new_topic(kafka4, partitions=1)
    reports = []
    with Producer(
        {
            "metadata.broker.list": kafka4.bootstrap,
            "producer.type": mode,
            "request.required.acks": acks,
        },
        on_report=reports.append,
    ) as p:
        for i in range(0, 100, 10):
            p.send([ProducerData(topic, b"%d" % j, partition=0) for j in range(i, i + 10)])
    assert all(r.error is None for r in reports)
    assert sum(len(r.messages) for r in reports) == 100
    if acks == 0:
        assert {r.base_offset for r in reports} == {-1}
    else:
        assert sorted(r.base_offset + i for r in reports for i in range(len(r.messages))) == list(
            range(100)
        )
    assert [v for _, _, v in read_partition(kafka4, topic, 0)] == [b"%d" % i for i in range(100)]


def test_log_append_time_and_headers(kafka4):
    """A LogAppendTime topic: the delivery report carries Kafka's append time and the fetched
    messages say so; headers and create timestamps survive, as Kafka's console consumer shows."""
    topic = new_topic(kafka4, 1, config={"message.timestamp.type": "LogAppendTime"})
    plain = new_topic(kafka4, 1)
    before = int(time.time() * 1000)
    reports = []
    with Producer(
        {"metadata.broker.list": kafka4.bootstrap, "producer.type": "sync"},
        on_report=reports.append,
    ) as p:
        p.send([ProducerData(topic, b"v%d" % i, timestamp=1_000_000 + i) for i in range(5)])
        p.send(
            [
                ProducerData(
                    plain,
                    b"h%d" % i,
                    key=b"k",
                    timestamp=2_000_000 + i,
                    headers=[("h", b"x%d" % i), ("empty", b"")],
                )
                for i in range(3)
            ]
        )
    appended = [r for r in reports if r.topic == topic]
    assert appended and all(before <= r.timestamp <= time.time() * 1000 for r in appended)
    host, port = leader_address(kafka4, topic, 0)
    with SimpleConsumer(host, port) as c:
        got = list(c.fetch(FetchRequest(topic, 0, 0)))
        assert {m.message.timestamp_type for m in got} == {1}
        assert {m.message.timestamp for m in got} == {appended[0].timestamp}
        rows = [
            (m.message.timestamp, m.message.timestamp_type, m.message.headers)
            for m in c.fetch(FetchRequest(plain, 0, 0))
        ]
    assert [r[:2] for r in rows] == [(2_000_000 + i, 0) for i in range(3)]
    assert [list(r[2]) for r in rows] == [[("h", b"x%d" % i), ("empty", b"")] for i in range(3)]
    lines = java_consume(
        kafka4,
        plain,
        3,
        "--formatter-property",
        "print.headers=true",
        "--formatter-property",
        "print.timestamp=true",
    )
    assert lines[0].split("\t") == ["CreateTime:2000000", "h:x0,empty:", "k", "h0"]


def test_a_message_over_the_topic_limit_fails_loudly(kafka4):
    """Kafka refuses a batch over the topic's max.message.bytes: the send fails naming the
    error after its retries, nothing is written, later small messages still go through."""
    topic = new_topic(kafka4, 1, config={"max.message.bytes": "10000"})
    with Producer({"metadata.broker.list": kafka4.bootstrap, "producer.type": "sync"}) as p:
        with pytest.raises(FailedToSendMessageError) as info:
            p.send(ProducerData(topic, b"x" * 20_000))
        assert "MESSAGE_TOO_LARGE" in str(info.value) or "RECORD" in str(info.value)
        p.send(ProducerData(topic, b"small"))
    assert [v for _, _, v in read_partition(kafka4, topic, 0)] == [b"small"]
