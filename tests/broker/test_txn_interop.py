"""confluent-kafka's transactional producer and read_committed consumer against MiniBroker and
a MiniCluster: commit, abort, send_offsets_to_transaction, fencing of a zombie."""

from __future__ import annotations

import time

import pytest

from kclient.broker import MiniBroker, MiniCluster
from tests.needs import need_module

from .txn_support import TXN_CONFIG

ck = need_module("confluent_kafka")
TopicPartition = ck.TopicPartition
TIMEOUT = 30


def transactional_producer(bootstrap, tid="ck-tx", **extra):
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "linger.ms": 5,
            "compression.codec": "lz4",
            **extra,
        }
    )
    producer.init_transactions(TIMEOUT)
    return producer


def consume_all(bootstrap, topic, partitions, isolation, expected_count, group="reader"):
    """Every message of the topic from the start, per partition, until ``expected_count`` and
    the positions reached the high watermarks (lag 0: markers moved past)."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
    consumer.assign(tps)
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    deadline = time.time() + TIMEOUT
    eof: set[int] = set()
    while time.time() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == ck.KafkaError._PARTITION_EOF:
                eof.add(msg.partition())
                if len(eof) == partitions and sum(map(len, got.values())) >= expected_count:
                    break
            continue
        eof.discard(msg.partition())
        got[msg.partition()].append(msg.value())
    positions = {tp.partition: tp.offset for tp in consumer.position(tps)}
    marks = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT)[1]
        for p in range(partitions)
    }
    consumer.close()
    return got, positions, marks


def run_transactions(bootstrap, topic, partitions):
    """commit 0-29, abort 30-59, commit 60-89 (spread over the partitions)."""
    producer = transactional_producer(bootstrap)
    for first, commit in ((0, True), (30, False), (60, True)):
        producer.begin_transaction()
        for i in range(first, first + 30):
            producer.produce(topic, f"v{i}".encode(), partition=i % partitions)
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.flush(TIMEOUT)
            producer.abort_transaction(TIMEOUT)
    return producer


def expected(partitions, ranges):
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for r in ranges:
        for i in r:
            out[i % partitions].append(f"v{i}".encode())
    return out


def check_committed_only(bootstrap, topic, partitions):
    committed = expected(partitions, [range(30), range(60, 90)])
    got, positions, marks = consume_all(bootstrap, topic, partitions, "read_committed", 60)
    assert got == committed
    assert positions == marks  # the consumer moved past the markers
    got, _, _ = consume_all(bootstrap, topic, partitions, "read_uncommitted", 90, "all")
    assert got == expected(partitions, [range(90)])


def test_confluent_transactions_on_one_broker(tmp_path):
    with MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG) as broker:
        broker.create_topic("ck-txn", 3)
        producer = run_transactions(broker.bootstrap, "ck-txn", 3)
        check_committed_only(broker.bootstrap, "ck-txn", 3)
        for p in range(3):
            log = broker.log_manager.get_log("ck-txn", p)
            assert log.last_stable_offset == log.log_end_offset
            assert len(log.aborted_transactions(0, log.log_end_offset)) == 1
        # a second producer with the same transactional.id fences the first
        zombie = producer
        successor = transactional_producer(broker.bootstrap)
        zombie.begin_transaction()
        zombie.produce("ck-txn", b"zombie", partition=0)
        with pytest.raises(ck.KafkaException) as info:
            zombie.commit_transaction(TIMEOUT)
        assert info.value.args[0].fatal() or info.value.args[0].code() in (
            ck.KafkaError._FENCED,
            ck.KafkaError.PRODUCER_FENCED,
            ck.KafkaError.INVALID_PRODUCER_EPOCH,
        )
        successor.begin_transaction()
        successor.produce("ck-txn", b"successor", partition=0)
        successor.commit_transaction(TIMEOUT)
        got, _, _ = consume_all(broker.bootstrap, "ck-txn", 3, "read_committed", 61, "r2")
        assert b"zombie" not in got[0] and got[0][-1] == b"successor"


def test_confluent_transactions_on_a_cluster(tmp_path):
    with MiniCluster(3, log_dir=tmp_path / "c", config=TXN_CONFIG) as cluster:
        cluster.brokers[0].create_topic("ck-txn", 6)
        run_transactions(cluster.bootstrap, "ck-txn", 6)
        check_committed_only(cluster.bootstrap, "ck-txn", 6)


def test_confluent_consume_transform_produce_commits_offsets_in_the_transaction(tmp_path):
    with MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG) as broker:
        broker.create_topic("in", 2)
        broker.create_topic("out", 2)
        source = ck.Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(40):
            source.produce("in", f"m{i}".encode(), partition=i % 2)
        assert source.flush(TIMEOUT) == 0
        consumer = ck.Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "ctp",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        consumer.assign([TopicPartition("in", 0, 0), TopicPartition("in", 1, 0)])
        producer = transactional_producer(broker.bootstrap, "ctp-tx")
        seen, first = 0, {}
        for commit in (True, False):
            producer.begin_transaction()
            batch = consumer.consume(20, TIMEOUT)
            seen += len(batch)
            for msg in batch:
                producer.produce("out", msg.value().upper(), partition=msg.partition())
            positions = [
                tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0
            ]  # a partition not read yet has no position
            producer.send_offsets_to_transaction(
                positions, consumer.consumer_group_metadata(), TIMEOUT
            )
            if commit:
                producer.commit_transaction(TIMEOUT)
                first = {tp.partition: tp.offset for tp in positions}
            else:
                producer.abort_transaction(TIMEOUT)
        consumer.close()
        assert seen == 40 and sum(first.values()) == 20
        stored = {tp[1]: e.offset for tp, e in broker.coordinator.fetch_offsets("ctp").items()}
        assert stored == first  # the aborted round's offsets dropped
        got, _, _ = consume_all(broker.bootstrap, "out", 2, "read_committed", 20)
        assert sum(map(len, got.values())) == 20
        assert all(v.startswith(b"M") for vs in got.values() for v in vs)


def test_confluent_transactions_read_by_kclient_read_committed(tmp_path):
    """confluent-kafka writes committed and aborted transactions; kclient's SimpleConsumer at
    read_committed gets the committed messages only and its position reaches the log end."""
    from kclient.simple import FetchRequest, SimpleConsumer

    with MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG) as broker:
        broker.create_topic("ck-kc", 2)
        run_transactions(broker.bootstrap, "ck-kc", 2)
        got: dict[int, list[bytes]] = {}
        with SimpleConsumer(broker.host, broker.port, isolation_level="read_committed") as c:
            for p in (0, 1):
                offset, values = 0, []
                end = broker.log_manager.get_log("ck-kc", p).log_end_offset
                deadline = time.time() + TIMEOUT
                while offset < end:
                    assert time.time() < deadline
                    cols = c.fetch_columns(FetchRequest("ck-kc", p, offset))
                    values += cols.values
                    offset = cols.next_offset
                got[p] = values
                assert offset == end  # past the last marker: lag 0
        assert got == expected(2, [range(30), range(60, 90)])
