"""Share groups on the mini-broker with other clients: Kafka 4.4's kafka-share-groups and
kafka-console-share-consumer (Java's KafkaShareConsumer), and confluent-kafka's ShareConsumer,
each draining a topic with every record delivered once."""

from __future__ import annotations

import re
import time

import pytest

from kclient import Producer
from kclient.broker import MiniBroker
from kclient.testing import KafkaTools, java_clients_problem, kafka_problem
from tests.needs import missing, need_module
from tests.waiting import wait_until

from .share_support import set_group_config

SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
CONSOLE_SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with MiniBroker(
        log_dir=tmp_path_factory.mktemp("share-interop"),
        config={"group.initial.rebalance.delay.ms": "0"},
    ) as b:
        yield b


def produce(broker, topic, count, partitions=2):
    broker.create_topic(topic, partitions=partitions)
    with Producer(bootstrap_servers=broker.bootstrap, producer_type="sync") as p:
        for i in range(count):
            p.produce(topic, f"m{i}".encode(), partition=i % partitions)
        p.flush()
    return {f"m{i}" for i in range(count)}


@pytest.fixture(scope="module")
def tools(broker):
    problem = kafka_problem("4") or java_clients_problem()
    if problem:
        missing(problem)
    return KafkaTools(broker.bootstrap)


@pytest.mark.kafka
def test_java_and_confluent_share_consumers_split_a_topic(broker, tools, raw_client):
    """kafka-console-share-consumer (Java's KafkaShareConsumer) and confluent-kafka's
    ShareConsumer in one share group: every record delivered once between them; then
    kafka-share-groups describes the group's start offsets."""
    ck = need_module("confluent_kafka")
    expected = produce(broker, "mixed", 300)
    client = raw_client(broker.bootstrap)
    # at most 100 records in flight per partition: the first to fetch cannot take them all
    set_group_config(
        client, "mix", share_auto_offset_reset="earliest", share_partition_max_record_locks="100"
    )
    java = tools.start(
        CONSOLE_SHARE_CONSUMER, "--topic", "mixed", "--group", "mix", "--timeout-ms", "4000"
    )
    ck_values: list[str] = []
    consumer = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "mix"})
    try:
        wait_until(
            lambda: any(
                sp.records for (g, _, _), sp in list(broker.share.partitions.items()) if g == "mix"
            ),
            timeout=120,
            what="the Java share consumer to acquire records",
        )
        consumer.subscribe(["mixed"])

        def polled() -> None:
            ck_values.extend(m.value().decode() for m in consumer.poll(0.2) if m.error() is None)

        def both_members() -> bool:
            polled()
            return len(broker.share.describe("mix").members) == 2

        def drained() -> bool:
            polled()
            starts = broker.share.start_offsets("mix", [("mixed", 0), ("mixed", 1)])
            return all(start == 150 for start, _ in starts.values())

        wait_until(both_members, timeout=120, what="both consumers in the group at once")
        wait_until(drained, timeout=120, what="every record acknowledged")
        consumer.commit_sync()
    finally:
        consumer.close()
        java_out = java.communicate(timeout=120)[0]
    java_values = [line for line in java_out.split() if re.fullmatch(r"m\d+", line)]
    assert sorted(java_values + ck_values) == sorted(expected)
    described = tools.run(SHARE_GROUP_COMMAND, "--describe", "--group", "mix")
    rows = [line.split() for line in described.splitlines() if "mixed" in line]
    assert sorted((r[0], r[1], r[2], r[3]) for r in rows) == [
        ("mix", "mixed", "0", "150"),
        ("mix", "mixed", "1", "150"),
    ]


def test_confluent_share_consumer_drains(broker, raw_client):
    ck = need_module("confluent_kafka")
    expected = produce(broker, "ck-share", 50)
    set_group_config(raw_client(broker.bootstrap), "ck-g", share_auto_offset_reset="earliest")
    got: list[str] = []
    consumer = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "ck-g"})
    try:
        consumer.subscribe(["ck-share"])
        deadline = time.monotonic() + 30
        while len(got) < len(expected) and time.monotonic() < deadline:
            for m in consumer.poll(1.0):
                if m.error() is None:
                    got.append(m.value().decode())
        consumer.commit_sync()
    finally:
        consumer.close()
    assert sorted(got) == sorted(expected)
    starts = broker.share.start_offsets("ck-g", [("ck-share", 0), ("ck-share", 1)])
    assert {p: s for (_, p), (s, _) in starts.items()} == {0: 25, 1: 25}


def test_a_share_group_over_a_mini_cluster(tmp_path, raw_client):
    """Partitions led by two brokers: the group config set through one broker applies to
    both, confluent-kafka's ShareConsumer drains both, the coordinator describes both."""
    from kclient.broker import MiniCluster
    from kclient.protocol.apis import (
        ALTER_SHARE_GROUP_OFFSETS,
        DELETE_SHARE_GROUP_OFFSETS,
        DESCRIBE_SHARE_GROUP_OFFSETS,
        FIND_COORDINATOR,
        LIST_GROUPS,
    )

    ck = need_module("confluent_kafka")
    with MiniCluster(
        num_brokers=2, log_dir=tmp_path, config={"group.initial.rebalance.delay.ms": "0"}
    ) as cluster:
        expected = produce(cluster.brokers[0], "spread", 40)
        assert set(cluster.brokers[0].cluster.partitions("spread").values()) == {0, 1}
        set_group_config(
            raw_client(cluster.brokers[1].bootstrap), "spread-g", share_auto_offset_reset="earliest"
        )
        got: list[str] = []
        consumer = ck.ShareConsumer(
            {"bootstrap.servers": cluster.bootstrap, "group.id": "spread-g"}
        )
        try:
            consumer.subscribe(["spread"])
            wait_until(
                lambda: (
                    got.extend(m.value().decode() for m in consumer.poll(0.5) if m.error() is None)
                    or len(got) >= 40
                ),
                timeout=30,
                what="40 records from both leaders",
            )
            consumer.commit_sync()
        finally:
            consumer.close()
        assert sorted(got) == sorted(expected)
        found = raw_client(cluster.bootstrap).request(FIND_COORDINATOR, 1, {"key": "spread-g"})
        coordinator = raw_client(f"{found.host}:{found.port}")
        d = coordinator.request(
            DESCRIBE_SHARE_GROUP_OFFSETS,
            1,
            {
                "groups": [
                    {
                        "group_id": "spread-g",
                        "topics": [{"topic_name": "spread", "partitions": [0, 1]}],
                    }
                ]
            },
        )
        assert [(p.partition_index, p.start_offset) for p in d.groups[0].topics[0].partitions] == [
            (0, 20),
            (1, 20),
        ]

        def starts():
            d = coordinator.request(
                DESCRIBE_SHARE_GROUP_OFFSETS,
                1,
                {
                    "groups": [
                        {
                            "group_id": "spread-g",
                            "topics": [{"topic_name": "spread", "partitions": [0, 1]}],
                        }
                    ]
                },
            )
            return [p.start_offset for p in d.groups[0].topics[0].partitions]

        altered = coordinator.request(
            ALTER_SHARE_GROUP_OFFSETS,
            0,
            {
                "group_id": "spread-g",
                "topics": [
                    {
                        "topic_name": "spread",
                        "partitions": [
                            {"partition_index": 0, "start_offset": 5},
                            {"partition_index": 1, "start_offset": 7},
                        ],
                    }
                ],
            },
        )
        assert [p.error_code for p in altered.responses[0].partitions] == [0, 0]
        assert starts() == [5, 7]
        deleted = coordinator.request(
            DELETE_SHARE_GROUP_OFFSETS,
            0,
            {"group_id": "spread-g", "topics": [{"topic_name": "spread"}]},
        )
        assert (deleted.error_code, deleted.responses[0].error_code) == (0, 0)
        assert starts() == [-1, -1]
        listed = [
            g.group_id
            for b in cluster.brokers
            for g in raw_client(b.bootstrap)
            .request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
            .groups
        ]
        assert listed == ["spread-g"]  # by its coordinator only
