"""MiniCluster: leadership spread over three brokers, a shared cluster view, leader moves."""

import time

from kclient.broker import MiniCluster
from kclient.protocol.apis import FETCH, METADATA, PRODUCE
from kclient.protocol.records import RecordsReader, build_batch
from tests.needs import need_module

confluent_kafka = need_module("confluent_kafka")


def _produce(client, topic, partition, values):
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": partition, "records": build_batch(values)}],
            }
        ],
    }
    return client.request(PRODUCE, 3, body).responses[0].partition_responses[0]


def _fetch_values(client, topic, partition, offset=0):
    body = {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }
    part = client.request(FETCH, 4, body).responses[0].partitions[0]
    return part.error_code, [r.value for r in RecordsReader(bytes(part.records or b""))]


def _leaders(client, topic):
    meta = client.request(METADATA, 1, {"topics": [{"name": topic}]})
    return {p.partition_index: (p.leader_id, p.error_code) for p in meta.topics[0].partitions}


def test_leadership_is_spread_and_every_broker_describes_the_cluster(mini_cluster, raw_client):
    assert mini_cluster.create_topic("spread", partitions=6) == {0: 0, 1: 1, 2: 2, 3: 0, 4: 1, 5: 2}
    ports = [b.port for b in mini_cluster.brokers]
    assert mini_cluster.bootstrap == ",".join(f"127.0.0.1:{p}" for p in ports)
    for broker in mini_cluster.brokers:
        meta = raw_client(broker.bootstrap).request(METADATA, 1, {"topics": None})
        assert [(b.node_id, b.port) for b in meta.brokers] == list(enumerate(ports))
        assert meta.controller_id == 0
        (topic,) = [t for t in meta.topics if t.name == "spread"]
        assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [
            (i, i % 3) for i in range(6)
        ]
    for i, broker in enumerate(mini_cluster.brokers):
        assert sorted(broker.log_manager.topics()["spread"]) == [i, i + 3]


def test_only_the_leader_serves_a_partition(mini_cluster, raw_client):
    mini_cluster.create_topic("led", partitions=3)
    clients = [raw_client(b.bootstrap) for b in mini_cluster.brokers]
    for partition in range(3):
        for node, client in enumerate(clients):
            result = _produce(client, "led", partition, [b"p%d" % partition])
            assert result.error_code == (0 if node == partition else 6)
            code, _ = _fetch_values(client, "led", partition)
            assert code == (0 if node == partition else 6)
    assert _fetch_values(clients[1], "led", 1) == (0, [b"p1"])


def test_confluent_kafka_across_three_brokers(mini_cluster):
    mini_cluster.create_topic("across", partitions=6)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": mini_cluster.bootstrap, "linger.ms": 5, "compression.codec": "lz4"}
    )
    reports = []
    for i in range(600):
        producer.produce(
            "across",
            value=b"v%d" % i,
            key=b"k%d" % i,
            callback=lambda err, msg: reports.append((err, msg.partition())),
        )
    assert producer.flush(30) == 0
    assert all(err is None for err, _ in reports)
    assert {p for _, p in reports} == set(range(6))
    for broker in mini_cluster.brokers:
        for p in broker.log_manager.topics()["across"]:
            assert broker.log_manager.get_log("across", p).log_end_offset > 0
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": mini_cluster.bootstrap,
            "group.id": "across-group",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["across"])
    got, deadline = set(), time.monotonic() + 40
    while len(got) < 600 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.add(msg.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert got == {b"v%d" % i for i in range(600)}


def test_groups_are_spread_over_coordinators(mini_cluster):
    coordinators = {mini_cluster.broker(0).coordinator_for(f"group-{i}")[0] for i in range(30)}
    assert coordinators == {0, 1, 2}
    assert mini_cluster.broker(2).coordinator_for("x") == mini_cluster.broker(0).coordinator_for(
        "x"
    )


def test_stopped_broker_partitions_are_unavailable_until_it_returns(mini_cluster, raw_client):
    mini_cluster.create_topic("bounce", partitions=3)
    _produce(raw_client(mini_cluster.broker(1).bootstrap), "bounce", 1, [b"kept"])
    mini_cluster.stop_broker(1)
    c0 = raw_client(mini_cluster.broker(0).bootstrap)
    leaders = _leaders(c0, "bounce")
    assert leaders[1] == (-1, 5) and leaders[0] == (0, 0) and leaders[2] == (2, 0)
    meta = c0.request(METADATA, 1, {"topics": None})
    assert [b.node_id for b in meta.brokers] == [0, 2]
    assert _produce(c0, "bounce", 0, [b"still"]).error_code == 0
    mini_cluster.start_broker(1)
    assert _leaders(c0, "bounce")[1] == (1, 0)
    assert _fetch_values(raw_client(mini_cluster.broker(1).bootstrap), "bounce", 1) == (
        0,
        [b"kept"],
    )


def test_move_leader_of_a_stopped_broker(mini_cluster, raw_client):
    mini_cluster.create_topic("moving", partitions=3, config={"retention.ms": "123456789"})
    _produce(raw_client(mini_cluster.broker(1).bootstrap), "moving", 1, [b"a", b"b"])
    mini_cluster.stop_broker(1)
    mini_cluster.move_leader("moving", 1, 2)
    c2 = raw_client(mini_cluster.broker(2).bootstrap)
    assert _leaders(c2, "moving")[1] == (2, 0)
    assert _fetch_values(c2, "moving", 1) == (0, [b"a", b"b"])
    assert _produce(c2, "moving", 1, [b"c"]).base_offset == 2
    assert mini_cluster.broker(2).topic_config("moving").retention_ms == 123456789
    mini_cluster.start_broker(1)
    c1 = raw_client(mini_cluster.broker(1).bootstrap)
    assert _produce(c1, "moving", 1, [b"x"]).error_code == 6
    assert _leaders(c1, "moving")[1] == (2, 0)


def test_move_leader_of_a_running_broker(mini_cluster, raw_client):
    mini_cluster.create_topic("hot", partitions=2)
    c1 = raw_client(mini_cluster.broker(1).bootstrap)
    _produce(c1, "hot", 1, [b"one"])
    mini_cluster.move_leader("hot", 1, 0)
    assert _produce(c1, "hot", 1, [b"late"]).error_code == 6
    c0 = raw_client(mini_cluster.broker(0).bootstrap)
    assert _fetch_values(c0, "hot", 1) == (0, [b"one"])
    assert mini_cluster.view.leader_epoch("hot", 1) == 1


def test_cluster_restart_from_the_same_directory(tmp_path, raw_client):
    with MiniCluster(num_brokers=2, log_dir=tmp_path) as cluster:
        cluster.create_topic("durable", partitions=2)
        _produce(raw_client(cluster.broker(1).bootstrap), "durable", 1, [b"persisted"])
    with MiniCluster(num_brokers=2, log_dir=tmp_path) as cluster:
        c = raw_client(cluster.broker(1).bootstrap)
        assert _leaders(c, "durable") == {0: (0, 0), 1: (1, 0)}
        assert _fetch_values(c, "durable", 1) == (0, [b"persisted"])


def test_topic_deleted_while_a_broker_is_down_stays_deleted(mini_cluster, raw_client):
    mini_cluster.create_topic("gone", partitions=3)
    mini_cluster.stop_broker(2)
    mini_cluster.view.delete_topic("gone")
    mini_cluster.start_broker(2)
    assert mini_cluster.view.partitions("gone") is None
    assert "gone" not in mini_cluster.broker(2).log_manager.topics()
    assert mini_cluster.create_topic("gone", partitions=1) == {0: 0}
