"""Leader moves on a 3-broker Kafka 4.x cluster (KRaft, every node broker and controller):
kill a partition leader; the producer and the consumers carry on, nothing acknowledged is lost."""

from __future__ import annotations

import threading
import time

import pytest

from kclient import Producer, ProducerData, consumer
from kclient.cluster import Cluster
from kclient.errors import (
    ConsumerTimeoutError,
    FailedToSendMessageError,
    NotLeaderForPartitionError,
)
from kclient.simple import FetchRequest, SimpleConsumer
from kclient.testing import KafkaServer, kafka_problem
from tests.consumer.helpers import wait_for
from tests.needs import missing

from .helpers import new_topic

REPLICATED = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}


@pytest.fixture(scope="module")
def kafka_cluster():
    """Three Kafka 4.x nodes; internal topics replicated on all three."""
    problem = kafka_problem("4")
    if problem:
        missing(problem)
    with KafkaServer(
        "4",
        num_brokers=3,
        config={
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2",
        },
    ) as server:
        yield server


def _leaders(server: KafkaServer, topic: str) -> dict[int, int]:
    with Cluster(server.bootstrap_of({n.node_id for n in server.nodes if n.alive})) as c:
        c.refresh([topic], allow_auto_create=False)
        return {p: info.leader for p, info in c.topics[topic].partitions.items()}


class Sender(threading.Thread):
    """Sends numbered messages in lists of 10 (sync, acks=all) until stopped; keeps which were
    acknowledged and which were reported failed."""

    def __init__(self, server: KafkaServer, topic: str):
        super().__init__(daemon=True)
        self.conf = {
            "metadata.broker.list": server.bootstrap,
            "producer.type": "sync",
            "request.required.acks": -1,
            "message.send.max.retries": 20,
            "retry.backoff.ms": 250,
            "request.timeout.ms": 5000,
            "socket.timeout.ms": 5000,
            "topic.metadata.refresh.interval.ms": 1000,
        }
        self.topic = topic
        self.acked: list[bytes] = []
        self.failed: list[bytes] = []
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        with Producer(self.conf) as p:
            while not self.stop.is_set():
                batch = [b"m%06d" % i for i in range(n, n + 10)]
                n += 10
                try:
                    p.send([ProducerData(self.topic, v, key=v) for v in batch])
                    self.acked += batch
                except FailedToSendMessageError as exc:
                    failed = {m.value for m, _ in exc.failed}
                    self.failed += sorted(failed)
                    self.acked += [v for v in batch if v not in failed]
                time.sleep(0.01)


def _kill_while_consuming(
    cluster, topic: str, victim: int, sender: Sender, conf: dict
) -> tuple[set[bytes], set[bytes]]:
    """Produce (``sender``) and consume with a connector (``conf``, two streams) while the
    leader ``victim`` of partition 0 is killed; returns (acknowledged, consumed)."""
    seen: set[bytes] = set()
    conf = {
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 500,
        "auto.commit.interval.ms": 500,
        **conf,
    }
    with consumer.create(conf) as conn:
        streams = conn.create_message_streams({topic: 2})[topic]
        stop = threading.Event()

        def read(stream):
            while not stop.is_set():
                try:
                    for m in stream:
                        seen.add(m.message)
                except ConsumerTimeoutError:
                    pass

        readers = [threading.Thread(target=read, args=(s,), daemon=True) for s in streams]
        for t in readers:
            t.start()
        sender.start()
        wait_for(lambda: len(sender.acked) >= 300, 60, message="the producer never got going")
        before = len(sender.acked)
        cluster.kill(victim)
        wait_for(
            lambda: _leaders(cluster, topic)[0] not in (victim, -1),
            60,
            message="no new leader for partition 0",
        )
        wait_for(
            lambda: len(sender.acked) >= before + 600,
            90,
            message=f"the producer stalled after the kill ({len(sender.acked) - before} more)",
        )
        sender.stop.set()
        sender.join(60)
        acked = set(sender.acked)
        wait_for(
            lambda: acked <= seen,
            90,
            message=f"{len(acked - seen)} acknowledged messages never consumed",
        )
        stop.set()
    return acked, seen


def test_kill_the_leader_nothing_acknowledged_is_lost(kafka_cluster):
    topic = new_topic(kafka_cluster, 3, replication_factor=3, config=REPLICATED)
    victim = _leaders(kafka_cluster, topic)[0]
    sender = Sender(kafka_cluster, topic)
    acked, seen = _kill_while_consuming(
        kafka_cluster,
        topic,
        victim,
        sender,
        {
            "metadata.broker.list": kafka_cluster.bootstrap,
            "group.id": f"lm-{topic}",
            "heartbeat.interval.ms": 500,
        },
    )
    assert victim not in _leaders(kafka_cluster, topic).values()
    assert acked <= seen
    kafka_cluster.start_node(victim)


def test_simple_consumer_names_the_new_leader(kafka_cluster):
    topic = new_topic(kafka_cluster, 1, replication_factor=3, config=REPLICATED)
    with Producer(
        {
            "metadata.broker.list": kafka_cluster.bootstrap,
            "producer.type": "sync",
            "request.required.acks": -1,
        }
    ) as p:
        p.send([ProducerData(topic, b"x%d" % i) for i in range(20)])
    leader = _leaders(kafka_cluster, topic)[0]
    follower = next(n for n in kafka_cluster.nodes if n.node_id != leader and n.alive)
    expected = [b"x%d" % i for i in range(20)]
    # Fetch v11+ carries client metadata, and Kafka lets such a consumer read from a follower
    # (KIP-392) up to the high watermark; below v11 a follower refuses, and kclient names the
    # leader
    with SimpleConsumer("127.0.0.1", follower.port, so_timeout=10000) as c:
        wait_for(
            lambda: [mo.message.value for mo in c.fetch(FetchRequest(topic, 0, 0))] == expected,
            10,
            message="the follower never served the committed messages",
        )
    with SimpleConsumer("127.0.0.1", follower.port, so_timeout=10000, fetch_version=10) as c:
        with pytest.raises(NotLeaderForPartitionError) as info:
            c.fetch(FetchRequest(topic, 0, 0))
    assert info.value.leader.port == kafka_cluster.node(leader).port
    kafka_cluster.kill(leader)  # the last test of the module: no restart
    wait_for(
        lambda: _leaders(kafka_cluster, topic)[0] not in (leader, -1), 60, message="no new leader"
    )
    new = kafka_cluster.node(_leaders(kafka_cluster, topic)[0])
    # a new leader serves up to its high watermark, which moves once the other follower has
    # fetched from it (an empty first answer seen in a full run)
    with SimpleConsumer("127.0.0.1", new.port, so_timeout=10000) as c:
        wait_for(
            lambda: [mo.message.value for mo in c.fetch(FetchRequest(topic, 0, 0))] == expected,
            20,
            message="the new leader never served the committed messages",
        )


@pytest.fixture(scope="module")
def kafka3_zk_cluster():
    """Three Kafka 3.x brokers in ZooKeeper mode."""
    problem = kafka_problem("3")
    if problem:
        missing(problem)
    with KafkaServer("3", num_brokers=3, mode="zookeeper") as server:
        yield server


def test_zookeeper_mode_clients_follow_the_leader_on_kafka3(kafka3_zk_cluster):
    """Producer and ConsumerConnector both found through ZooKeeper: after the leader of a
    partition is killed they follow the new leader the controller writes into ZooKeeper."""
    server = kafka3_zk_cluster
    topic = new_topic(server, 3, replication_factor=3, config=REPLICATED)
    victim = _leaders(server, topic)[0]
    sender = Sender(server, topic)
    sender.conf = {**sender.conf, "zookeeper.connect": server.zookeeper_connect}
    del sender.conf["metadata.broker.list"]
    acked, seen = _kill_while_consuming(
        server,
        topic,
        victim,
        sender,
        {"zookeeper.connect": server.zookeeper_connect, "group.id": f"zk-{topic}"},
    )
    assert acked <= seen
