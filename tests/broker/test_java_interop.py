"""The mini-broker against Apache Kafka's Java clients and command-line tools (Kafka 4.x jars).

The Java producer runs with its defaults (acks=all, enable.idempotence=true: InitProducerId, then
idempotent batches), the Java consumer in a group (subscribe, poll, commitSync), and
kafka-topics, kafka-console-producer/consumer, kafka-consumer-groups and kafka-get-offsets do
what an operator would do with them.
"""

import time
from collections import Counter

import pytest

from kclient import Producer, ProducerData
from kclient.partitioner import DefaultPartitioner
from kclient.protocol.apis import FETCH
from kclient.protocol.records import RecordsReader
from kclient.testing import KafkaTools, java_clients_problem, kafka_problem
from tests.needs import missing

pytestmark = pytest.mark.kafka


@pytest.fixture
def tools(mini_broker):
    """Kafka 4.x's tools and Java clients pointed at a fresh mini-broker."""
    problem = kafka_problem("4") or java_clients_problem()
    if problem:
        missing(problem)
    return KafkaTools(mini_broker.bootstrap)


def _batches(raw_client, bootstrap, topic, partition):
    body = {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }
    part = raw_client(bootstrap).request(FETCH, 4, body).responses[0].partitions[0]
    assert part.error_code == 0
    return list(RecordsReader(bytes(part.records or b"")).batches())


def test_java_producer_with_defaults_writes_idempotent_batches(mini_broker, tools, raw_client):
    mini_broker.create_topic("jp", partitions=3)
    acks = [
        tuple(map(int, line.split()))
        for line in tools.java_clients("produce", mini_broker.bootstrap, "jp", "60")
    ]
    assert len(acks) == 60
    partitioner = DefaultPartitioner()
    assert [p for p, _ in acks] == [partitioner.partition(b"k%d" % i, 3) for i in range(60)]
    per_partition = Counter(p for p, _ in acks)
    for partition, count in per_partition.items():
        assert sorted(o for p, o in acks if p == partition) == list(range(count))
        batches = _batches(raw_client, mini_broker.bootstrap, "jp", partition)
        assert {b.producer_id for b in batches} != {-1}
        assert len({b.producer_id for b in batches}) == 1
        assert [b.producer_epoch for b in batches] == [0] * len(batches)
        sequences = [(b.base_sequence, b.last_offset - b.base_offset) for b in batches]
        expected, nxt = [], 0
        for _, delta in sequences:
            expected.append(nxt)
            nxt += delta + 1
        assert [s for s, _ in sequences] == expected
        values = [r.value for b in batches for r in b.records]
        assert values == [b"v%d" % i for i in range(60) if acks[i][0] == partition]


def test_two_java_producers_get_distinct_producer_ids(mini_broker, tools, raw_client):
    mini_broker.create_topic("jp2")
    tools.java_clients("produce", mini_broker.bootstrap, "jp2", "3")
    tools.java_clients("produce", mini_broker.bootstrap, "jp2", "3")
    batches = _batches(raw_client, mini_broker.bootstrap, "jp2", 0)
    assert len({b.producer_id for b in batches}) == 2


def test_java_consumer_group_reads_everything_and_commits(mini_broker, tools):
    mini_broker.create_topic("jc", partitions=2)
    with Producer({"metadata.broker.list": mini_broker.bootstrap, "producer.type": "sync"}) as p:
        p.send([ProducerData("jc", b"v%d" % i, key=b"k%d" % i) for i in range(40)])
    lines = tools.java_clients("consume", mini_broker.bootstrap, "jc", "jgroup", "40")
    got = sorted(line.split()[3] for line in lines)
    assert got == sorted(f"v{i}" for i in range(40))
    end = tools.get_offsets("jc")
    committed = mini_broker.coordinator.fetch_offsets("jgroup")
    assert {partition: e.offset for (_, partition), e in committed.items()} == end
    assert sum(end.values()) == 40


def test_kafka_topics_create_list_describe(mini_broker, tools):
    assert "Created topic tt" in tools.topics(
        "--create", "--topic", "tt", "--partitions", "3", "--config", "retention.ms=3600000"
    )
    assert mini_broker.cluster.partitions("tt") is not None
    assert "tt" in tools.topics("--list").split()
    described = tools.topics("--describe", "--topic", "tt")
    head, *parts = described.strip().splitlines()
    assert "PartitionCount: 3" in head and "retention.ms=3600000" in head
    assert [line.split("\t")[2] for line in parts] == [f"Partition: {i}" for i in range(3)]
    assert all("Leader: 0" in line for line in parts)
    out = tools.run("topics", "--create", "--topic", "tt", check=False)
    assert "already exists" in out


def test_console_producer_and_console_consumer_group(mini_broker, tools):
    lines = [f"line-{i}" for i in range(25)]
    tools.produce_lines("console", lines)
    assert tools.consume_lines("console", 25, "--group", "cgroup") == lines
    assert "cgroup" in tools.consumer_groups("--list").split()
    described = tools.consumer_groups("--describe", "--group", "cgroup")
    row = next(line.split() for line in described.splitlines() if line.startswith("cgroup"))
    assert row[1:6] == ["console", "0", "25", "25", "0"]
    deleted = tools.consumer_groups("--delete-offsets", "--group", "cgroup", "--topic", "console")
    assert "Successful" in deleted or "successful" in deleted.lower()
    assert mini_broker.coordinator.fetch_offsets("cgroup") == {}


def test_consumer_groups_describe_shows_an_active_member(mini_broker, tools):
    tools.produce_lines("active", ["a", "b", "c"])
    consumer = tools.start(
        "console-consumer",
        "--topic",
        "active",
        "--group",
        "live",
        "--from-beginning",
        "--property",
        "print.value=true",
    )
    try:
        deadline, state = time.monotonic() + 60, ""
        while time.monotonic() < deadline:
            state = tools.consumer_groups("--describe", "--group", "live", "--state")
            if "Stable" in state:
                break
            time.sleep(0.5)
        assert "Stable" in state and "range" in state.lower()
        members = tools.consumer_groups("--describe", "--group", "live", "--members")
        row = next(line.split() for line in members.splitlines() if line.startswith("live"))
        assert row[1].startswith("console-consumer") and row[2] == "/127.0.0.1"
        assert row[3:] == ["console-consumer", "1"]  # one partition
        assert "live" in tools.consumer_groups("--list", "--state", "Stable")
        refused = tools.run(
            "consumer-groups",
            "--delete-offsets",
            "--group",
            "live",
            "--topic",
            "active",
            check=False,
        )
        assert "GROUP_SUBSCRIBED_TO_TOPIC" in refused or "subscribed" in refused.lower()
    finally:
        consumer.terminate()
        consumer.communicate(timeout=30)


def test_get_offsets_latest_earliest_and_by_time(mini_broker, tools):
    mini_broker.create_topic("go", partitions=2)
    tools.java_clients("produce", mini_broker.bootstrap, "go", "20")
    latest = tools.get_offsets("go", -1)
    assert sum(latest.values()) == 20 and set(latest) == {0, 1}
    assert tools.get_offsets("go", -2) == {0: 0, 1: 0}
    assert tools.get_offsets("go", 0) == {0: 0, 1: 0}  # first record at or after t=0
    future = int(time.time() * 1000) + 3_600_000
    out = tools.run("get-offsets", "--topic", "go", "--time", str(future))
    assert out.strip() == ""  # no record that late: Kafka prints nothing for it


def test_tools_on_a_three_broker_mini_cluster(mini_cluster):
    """Leaders on every broker; groups coordinated by different brokers are all listed
    (ListGroups goes to each broker) and described (DescribeGroups to each coordinator)."""
    problem = kafka_problem("4") or java_clients_problem()
    if problem:
        missing(problem)
    tools = KafkaTools(mini_cluster.bootstrap)
    tools.topics("--create", "--topic", "mc", "--partitions", "6")
    leaders = [
        line.split("\t")[3]
        for line in tools.topics("--describe", "--topic", "mc").strip().splitlines()[1:]
    ]
    assert leaders == [f"Leader: {i % 3}" for i in range(6)]
    tools.java_clients("produce", mini_cluster.bootstrap, "mc", "30")
    groups = ["ga", "gb", "gc"]
    assert len({mini_cluster.broker(0).coordinator_for(g)[0] for g in groups}) > 1
    for group in groups:
        assert len(tools.consume_lines("mc", 30, "--group", group)) == 30
    assert sorted(tools.consumer_groups("--list").split()) == groups
    rows = [
        line.split()
        for line in tools.consumer_groups("--describe", "--all-groups").splitlines()
        if line[:2] in ("ga", "gb", "gc")
    ]
    assert len(rows) == 18 and all(row[5] == "0" for row in rows)  # no lag anywhere


def test_java_transactional_producer_and_read_committed_console_consumer(mini_broker, tools):
    """Kafka's ProducerPerformance with a transactional id (a transaction every 100 ms) and
    the console consumer at read_committed. The Java producer negotiates transactions v2 from
    the mini-broker's finalized transaction.version (KIP-890): every commit bumped the epoch,
    one commit marker per partition of each transaction."""
    mini_broker.create_topic("jtx", partitions=2)
    out = tools.run(
        "producer-perf-test",
        "--topic",
        "jtx",
        "--num-records",
        "2000",
        "--record-size",
        "50",
        "--throughput",
        "-1",
        "--transactional-id",
        "perf-tx",
        "--transaction-duration-ms",
        "100",
    )
    assert "2000 records sent" in out
    meta = mini_broker.txn_coordinator.get("perf-tx")
    assert meta is not None and meta.state.name == "COMPLETE_COMMIT"
    logs = [mini_broker.log_manager.get_log("jtx", p) for p in (0, 1)]
    assert all(log.last_stable_offset == log.log_end_offset for log in logs)
    assert sum(log.log_end_offset for log in logs) > 2000  # data and commit markers
    markers = sum(log.log_end_offset for log in logs) - 2000
    assert meta.client_version == 2 and meta.producer_epoch >= 1
    assert meta.producer_epoch <= markers <= 2 * meta.producer_epoch, (meta, markers)
    lines = tools.consume_lines(
        "jtx", 2000, "--consumer-property", "isolation.level=read_committed"
    )
    assert len([line for line in lines if len(line) == 50]) == 2000
