"""kclient's Producer against real Kafka 4.x: sync and async, every codec, read back by kclient
and by Kafka's own console consumer; keyed messages land where the Java producer puts them."""
from __future__ import annotations

import pytest

from kclient import Producer, ProducerData
from kclient.partitioner import DefaultPartitioner

from .helpers import java_consume, java_produce, new_topic, read_partition

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _messages(topic: str, n: int, tag: str) -> list[ProducerData]:
    return [ProducerData(topic, f"{tag}-value-{i}".encode() * (1 + i % 7),
                         key=f"key-{i % 37}".encode()) for i in range(n)]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_codec_is_acknowledged_and_read_back(kafka4, mode, codec):
    topic = new_topic(kafka4, partitions=3)
    sent = _messages(topic, 300, codec)
    reports = []
    conf = {"metadata.broker.list": kafka4.bootstrap, "producer.type": mode,
            "compression.codec": codec, "request.required.acks": -1}
    with Producer(conf, on_delivery=reports.append) as p:
        p.send(sent[:250])                                # a list, batched
        for m in sent[250:]:                              # one at a time
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
        with Producer({"metadata.broker.list": kafka4.bootstrap, "producer.type": "sync",
                       "compression.codec": codec}) as p:
            batch = [ProducerData(topic, f"{codec}-{i}".encode(), key=f"k{i}".encode())
                     for i in range(40)]
            p.send(batch)
        expected += [f"k{i}\t{codec}-{i}" for i in range(40)]
    assert java_consume(kafka4, topic, len(expected)) == expected


def test_keyed_partition_choice_equals_the_java_producer(kafka4):
    partitions = 7
    java_topic = new_topic(kafka4, partitions, prefix="java")
    ours = new_topic(kafka4, partitions, prefix="kclient")
    keys = [f"user-{i}" for i in range(300)] + ["", "ü-ñ-日本", "a" * 200]
    java_produce(kafka4, java_topic, [f"{k}\t{i}" for i, k in enumerate(keys)],
                 "parse.key=true", "key.separator=\t")
    with Producer({"metadata.broker.list": kafka4.bootstrap, "producer.type": "sync"}) as p:
        p.send([ProducerData(ours, str(i).encode(), key=k.encode()) for i, k in enumerate(keys)])

    def placement(topic):
        return {key: partition for partition in range(partitions)
                for _, key, _ in read_partition(kafka4, topic, partition)}
    java = placement(java_topic)
    assert len(java) == len(keys) and len(set(java.values())) == partitions
    assert placement(ours) == java


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_producer_finds_the_brokers_in_zookeeper(kafka3_cluster, mode):
    """zookeeper.connect instead of a broker list: the producer reads the registry the Kafka
    3.9 brokers wrote and sends to the leader of every partition (spread over both brokers)."""
    topic = new_topic(kafka3_cluster, partitions=4)
    reports = []
    with Producer({"zookeeper.connect": kafka3_cluster.zookeeper_connect, "producer.type": mode,
                   "request.required.acks": -1}, on_delivery=reports.append) as p:
        p.send([ProducerData(topic, b"%d" % i, key=b"k%d" % i) for i in range(100)])
        p.flush()
    assert all(r.error is None for r in reports)
    got = sorted(v for part in range(4) for _, _, v in read_partition(kafka3_cluster, topic, part))
    assert got == sorted(b"%d" % i for i in range(100))
