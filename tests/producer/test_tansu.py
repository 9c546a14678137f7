"""The producer against tansu, a Kafka-compatible broker kclient did not write."""

from __future__ import annotations

import pytest

from kclient.cluster import Cluster
from kclient.producer import Producer, ProducerData

from .conftest import assert_reports_match_log
from .test_codecs import consume

pytestmark = pytest.mark.tansu


def _topic(tansu, name, partitions=3):
    with Cluster(tansu.bootstrap) as c:
        c.create_topic(name, partitions)
    return name


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_send_and_read_back(tansu, mode):
    topic = _topic(tansu, f"tansu-{mode}")
    reports = []
    sent = [ProducerData(topic, b"value-%d" % i, key=b"k%d" % (i % 17)) for i in range(3000)]
    with Producer(
        {"metadata.broker.list": tansu.bootstrap, "producer.type": mode}, on_report=reports.append
    ) as p:
        p.send(sent[:10])
        for m in sent[10:100]:
            p.send(m)
        p.send(sent[100:])
        p.flush()
    assert sum(len(r) for r in reports) == 3000 and all(r.ok for r in reports)
    assert assert_reports_match_log(tansu.bootstrap, reports) == 3000


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_codecs_read_back_by_confluent(tansu, codec):
    topic = _topic(tansu, f"tansu-codec-{codec}", 1)
    values = [b"v%d-" % i + b"x" * (i % 50) for i in range(500)]
    with Producer({"metadata.broker.list": tansu.bootstrap, "compression.codec": codec}) as p:
        p.send([ProducerData(topic, v) for v in values])
    assert [v for _, v in consume(tansu.bootstrap, topic, 0, 500)] == values


def test_acks_all_and_none(tansu):
    topic = _topic(tansu, "tansu-acks", 1)
    with Producer({"metadata.broker.list": tansu.bootstrap, "acks": "all"}) as p:
        assert p.send(ProducerData(topic, b"a"))[0].base_offset == 0
    with Producer({"metadata.broker.list": tansu.bootstrap, "acks": 0}) as p:
        assert p.send(ProducerData(topic, b"b"))[0].base_offset == -1
    assert [v for _, v in consume(tansu.bootstrap, topic, 0, 2)] == [b"a", b"b"]
