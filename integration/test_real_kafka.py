"""The client paths the mini-broker and tansu tests cover, against real Apache Kafka."""

import uuid

import pytest

from kclient import Producer, ProducerData, consumer
from kclient.cluster import Cluster
from kclient.errors import ConsumerTimeoutError
from kclient.simple import FetchRequest, OffsetRequest, SimpleConsumer


def test_produce_then_simple_fetch(kafka_bootstrap):
    topic = f"it-{uuid.uuid4().hex[:8]}"
    with Cluster(kafka_bootstrap) as cluster:
        cluster.create_topic(topic, partitions=1)
    values = [b"v%d" % i for i in range(100)]
    with Producer({"metadata.broker.list": kafka_bootstrap, "producer.type": "sync"}) as p:
        p.send([ProducerData(topic, v, partition=0) for v in values])
    host, port = kafka_bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), so_timeout=10000, buffer_size=1 << 20) as c:
        assert c.get_offsets_before(topic, 0, OffsetRequest.LATEST_TIME, 1) == [100]
        got = [mo.message.value for mo in c.fetch(FetchRequest(topic, 0, 0, 1 << 20))]
    assert got == values


def test_broker_coordinated_group_reads_everything(kafka_bootstrap):
    topic = f"it-{uuid.uuid4().hex[:8]}"
    with Producer({"metadata.broker.list": kafka_bootstrap, "producer.type": "sync"}) as p:
        p.send([ProducerData(topic, b"m%d" % i) for i in range(50)])
    conf = {
        "metadata.broker.list": kafka_bootstrap,
        "group.id": topic,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 5000,
    }
    seen = []
    with consumer.create(conf) as conn:
        (stream,) = conn.create_message_streams({topic: 1})[topic]
        try:
            for m in stream:
                seen.append(m.message)
                if len(seen) == 50:
                    break
        except ConsumerTimeoutError:
            pass
    assert sorted(seen) == sorted(b"m%d" % i for i in range(50))


def test_admin_calls_and_their_errors(kafka_bootstrap):
    from kclient.errors import (
        InvalidConfigurationError,
        TopicAlreadyExistsError,
        UnknownTopicOrPartitionError,
    )

    topic = f"it-{uuid.uuid4().hex[:8]}"
    with Cluster(kafka_bootstrap) as cluster:
        cluster.create_topic(topic, partitions=3, config={"retention.ms": "60000"})
        with pytest.raises(TopicAlreadyExistsError):
            cluster.create_topic(topic, partitions=3)
        with pytest.raises(InvalidConfigurationError):
            cluster.create_topic(topic + "-bad", config={"cleanup.policy": "sideways"})
        assert cluster.partitions_for(topic) == [0, 1, 2]
        cluster.delete_topic(topic)
        with pytest.raises(UnknownTopicOrPartitionError):
            cluster.delete_topic(topic + "-never")


def test_producing_to_a_new_topic_auto_creates_it(kafka_bootstrap):
    topic = f"auto-{uuid.uuid4().hex[:8]}"
    with Producer({"metadata.broker.list": kafka_bootstrap, "producer.type": "sync"}) as p:
        p.send([ProducerData(topic, b"first"), ProducerData(topic, b"second")])
    host, port = kafka_bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port)) as c:
        assert [m.message.value for m in c.fetch(FetchRequest(topic, 0, 0))] == [
            b"first",
            b"second",
        ]
