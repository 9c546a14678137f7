"""Every codec in every message format the producer writes, read back by confluent-kafka."""

from __future__ import annotations

import time

import pytest

from kclient.cluster import Cluster
from kclient.errors import FailedToSendMessageError
from kclient.producer import Producer, ProducerData
from kclient.producer.event_handler import DefaultEventHandler
from kclient.protocol.apis import FETCH, PRODUCE
from kclient.protocol.records import RecordsReader
from tests.needs import need_module

confluent_kafka = need_module("confluent_kafka")

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
# how the producer is told which Produce version the broker speaks -> message format written
FORMATS = {
    "v2": {},  # Produce v3+: batches
    "magic1": {"api.version.request": False, "broker.version.fallback": "0.10.0"},  # v2
    "magic0": {"api.version.request": False, "broker.version.fallback": "0.8.2"},  # v0
}


def consume(bootstrap, topic, partition, count, timeout=20.0):
    """(key, value) pairs read by librdkafka from offset 0."""
    c = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "kclient-test", "enable.auto.commit": False}
    )
    try:
        c.assign([confluent_kafka.TopicPartition(topic, partition, 0)])
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            out.append((msg.key(), msg.value()))
        return out
    finally:
        c.close()


def _magic_used(p):
    handler = p.event_handler
    assert isinstance(handler, DefaultEventHandler)
    conn = next(iter(handler._conns.values()))
    v = conn.version(PRODUCE)
    return 2 if v >= 3 else (1 if v == 2 else 0)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("codec", CODECS)
def test_codec_round_trip(mini_broker, codec, fmt):
    topic = f"codec-{codec}-{fmt}"
    mini_broker.create_topic(topic, 1)
    values = [b"value-%04d-" % i + b"abc" * (i % 40) for i in range(300)]
    keys = [None if i % 3 else b"key-%d" % i for i in range(300)]
    cfg = {
        "metadata.broker.list": mini_broker.bootstrap,
        "compression.codec": codec,
        **FORMATS[fmt],
    }
    with Producer(cfg) as p:
        data = [ProducerData(topic, v, key=k, partition=0) for v, k in zip(values, keys)]
        if codec == "zstd" and fmt != "v2":
            with pytest.raises(FailedToSendMessageError, match="zstd"):
                p.send(data)
            return
        reports = p.send(data[:150])
        p.send(data[150:])
        assert _magic_used(p) == {"v2": 2, "magic1": 1, "magic0": 0}[fmt]
        assert reports[0].base_offset == 0
    got = consume(mini_broker.bootstrap, topic, 0, 300)
    assert got == list(zip(keys, values))


def test_compressed_topics_only(mini_broker):
    mini_broker.create_topic("ct-yes", 1)
    mini_broker.create_topic("ct-no", 1)
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "compression.codec": "gzip",
            "compressed.topics": "ct-yes",
        }
    ) as p:
        handler = p.event_handler
        p.send([ProducerData("ct-yes", b"a" * 100), ProducerData("ct-no", b"b" * 100)])
        assert handler.codec == 1 and handler.compressed_topics == {"ct-yes"}
    for topic, codec in (("ct-yes", 1), ("ct-no", 0)):
        with Cluster(mini_broker.bootstrap) as c:
            c.refresh([topic])
            conn = c.connection(c.leader_for(topic, 0).node_id)
            resp = conn.request(
                FETCH,
                {
                    "max_wait_ms": 10,
                    "min_bytes": 1,
                    "topics": [
                        {
                            "topic": topic,
                            "partitions": [
                                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                            ],
                        }
                    ],
                },
            )
            records = resp.responses[0].partitions[0].records
        batches = list(RecordsReader(records).batches())
        assert [b.codec for b in batches] == [codec]
    assert consume(mini_broker.bootstrap, "ct-yes", 0, 1) == [(None, b"a" * 100)]
