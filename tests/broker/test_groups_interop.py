"""End-to-end consumer groups on the mini-broker with real clients: confluent-kafka, kafka-python.

Two members of a group split a topic's partitions without overlap, the survivor takes over all
of them when the other leaves, and committed offsets survive a broker restart.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from tests.needs import need_module

confluent_kafka = need_module("confluent_kafka")
kafka = need_module("kafka")

PARTITIONS = 4
DEADLINE = 60


@pytest.fixture
def broker(mini_broker):
    """The shared mini-broker with an ``events`` topic."""
    mini_broker.create_topic("events", partitions=PARTITIONS)
    return mini_broker


def wait_until(predicate, what: str, timeout: float = DEADLINE, step=None) -> None:
    """Call ``step`` (e.g. polling consumers) until ``predicate`` holds or fail."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if step is not None:
            step()
        else:
            time.sleep(0.05)
        if predicate():
            return
    pytest.fail(f"timed out waiting for {what}")


def partitions_of(assignment) -> set[int]:
    """Partition numbers of an assignment (confluent or kafka-python TopicPartitions)."""
    return {tp.partition for tp in assignment}


# -- confluent-kafka ---------------------------------------------------------------------------


def confluent_consumer(broker, group: str, name: str):
    """A subscribed confluent-kafka consumer."""
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "client.id": name,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 2,
        }
    )
    c.subscribe(["events"])
    return c


def test_confluent_members_share_then_survivor_takes_all(broker):
    group = f"cg-{uuid.uuid4().hex[:8]}"
    c1, c2 = confluent_consumer(broker, group, "one"), confluent_consumer(broker, group, "two")
    try:

        def poll_both():
            c1.poll(0.1)
            c2.poll(0.1)

        def split():
            a, b = partitions_of(c1.assignment()), partitions_of(c2.assignment())
            return a and b and not a & b and a | b == set(range(PARTITIONS))

        wait_until(split, "both members to own disjoint partitions", step=poll_both)
        c1.close()
        wait_until(
            lambda: partitions_of(c2.assignment()) == set(range(PARTITIONS)),
            "the survivor to own every partition",
            step=lambda: c2.poll(0.1),
        )
        state = broker.coordinator.describe_group(group)
        assert state["state"] == "Stable" and len(state["members"]) == 1
    finally:
        c2.close()


def produce(broker, values, partition: int) -> None:
    """Produce values to one partition of ``events`` and wait for delivery."""
    p = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "log_level": 2})
    for v in values:
        p.produce("events", value=v, partition=partition)
    assert p.flush(30) == 0


def consume(consumer, count: int) -> list:
    """Poll until ``count`` messages arrived; returns (partition, offset, value) triples."""
    got = []

    def step():
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            got.append((m.partition(), m.offset(), m.value()))

    wait_until(lambda: len(got) >= count, f"{count} messages", step=step)
    return got


def test_confluent_committed_offsets_survive_restart(broker):
    group = f"cg-{uuid.uuid4().hex[:8]}"
    TP = confluent_kafka.TopicPartition
    produce(broker, [b"a", b"b", b"c"], partition=0)
    c = confluent_consumer(broker, group, "committer")
    try:
        assert [m[2] for m in consume(c, 3)] == [b"a", b"b", b"c"]
        c.commit(asynchronous=False)  # the positions: offset 3 on partition 0
        c.commit(offsets=[TP("events", 3, 5)], asynchronous=False)
        got = c.committed([TP("events", 0), TP("events", 1), TP("events", 3)], timeout=10)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 3), (1, -1001), (3, 5)]
    finally:
        c.close()
    broker.stop()
    broker.start()
    produce(broker, [b"d"], partition=0)
    c = confluent_consumer(broker, group, "resumer")
    try:
        got = c.committed([TP("events", 0), TP("events", 3)], timeout=10)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 3), (3, 5)]
        assert consume(c, 1) == [(0, 3, b"d")]  # resumes after what was committed
    finally:
        c.close()


# -- kafka-python ------------------------------------------------------------------------------


class KafkaPythonMember:
    """A kafka-python KafkaConsumer polled by its own thread (it blocks in JoinGroup)."""

    def __init__(self, broker, group: str, name: str):
        self.consumer = kafka.KafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            client_id=name,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        self.consumer.subscribe(["events"])
        self.assigned: set[int] = set()
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)
        self._thread.start()

    def _run(self) -> None:
        # a long poll timeout: kafka-python 3.0 can lose a finished join when poll() times out
        # between the SyncGroup response and the leader's metadata refresh (a client race)
        while not self._stop.is_set():
            self.consumer.poll(timeout_ms=1000)
            self.assigned = partitions_of(self.consumer.assignment())

    def stop_polling(self) -> None:
        """Stop the polling thread (the consumer may then be used from the caller's thread)."""
        self._stop.set()
        self._thread.join(timeout=DEADLINE)

    def close(self) -> None:
        """Stop polling and leave the group (once)."""
        self.stop_polling()
        if not self._closed:
            self._closed = True
            self.consumer.close()


def test_kafka_python_members_share_then_survivor_takes_all(broker):
    group = f"kp-{uuid.uuid4().hex[:8]}"
    m1, m2 = KafkaPythonMember(broker, group, "kp-one"), KafkaPythonMember(broker, group, "kp-two")
    try:

        def split():
            a, b = m1.assigned, m2.assigned
            return a and b and not a & b and a | b == set(range(PARTITIONS))

        wait_until(split, "both members to own disjoint partitions")
        m1.close()
        wait_until(
            lambda: m2.assigned == set(range(PARTITIONS)), "the survivor to own every partition"
        )
    finally:
        m2.close()


def test_kafka_python_commit_restart_and_cross_client(broker):
    group = f"kp-{uuid.uuid4().hex[:8]}"
    TP, OAM = kafka.TopicPartition, kafka.OffsetAndMetadata
    m = KafkaPythonMember(broker, group, "kp-committer")
    try:
        wait_until(lambda: len(m.assigned) == PARTITIONS, "the assignment")
        m.stop_polling()
        m.consumer.commit({TP("events", 1): OAM(42, "note", -1)})
        assert m.consumer.committed(TP("events", 1)) == 42
    finally:
        m.close()
    broker.stop()
    broker.start()
    reader = kafka.KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False
    )
    try:
        assert reader.committed(TP("events", 1)) == 42
        assert reader.committed(TP("events", 2)) is None
    finally:
        reader.close()
    admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:  # OffsetFetch with null topics: every committed partition of the group
        offsets = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: (om.offset, om.metadata) for tp, om in offsets.items()} == {
            1: (42, "note")
        }
    finally:
        admin.close()
    c = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:  # (not .metadata: librdkafka#4649 reads it past its length)
        got = c.committed([confluent_kafka.TopicPartition("events", 1)], timeout=10)
        assert got[0].offset == 42
    finally:
        c.close()


def test_confluent_and_kafka_python_share_one_group(broker):
    group = f"mix-{uuid.uuid4().hex[:8]}"
    kp = KafkaPythonMember(broker, group, "kp-mixed")
    cf = confluent_consumer(broker, group, "cf-mixed")
    try:

        def split():
            a, b = kp.assigned, partitions_of(cf.assignment())
            return a and b and not a & b and a | b == set(range(PARTITIONS))

        wait_until(split, "both clients to own disjoint partitions", step=lambda: cf.poll(0.1))
        assert broker.coordinator.describe_group(group)["protocol_name"] == "range"
        kp.close()
        wait_until(
            lambda: partitions_of(cf.assignment()) == set(range(PARTITIONS)),
            "confluent-kafka to own every partition",
            step=lambda: cf.poll(0.1),
        )
    finally:
        kp.close()
        cf.close()


def test_confluent_group_on_a_three_broker_cluster(mini_cluster):
    mini_cluster.create_topic("events", partitions=6)
    group = f"cl-{uuid.uuid4().hex[:8]}"
    TP = confluent_kafka.TopicPartition
    c1, c2 = (
        confluent_consumer(mini_cluster, group, "one"),
        confluent_consumer(mini_cluster, group, "two"),
    )
    try:

        def split():
            a, b = partitions_of(c1.assignment()), partitions_of(c2.assignment())
            return a and b and not a & b and a | b == set(range(6))

        wait_until(
            split,
            "both members to own disjoint partitions",
            step=lambda: (c1.poll(0.1), c2.poll(0.1)),
        )
        # the coordinator stores offsets for partitions every broker leads
        c1.commit(offsets=[TP("events", p, 10 + p) for p in range(6)], asynchronous=False)
        got = c2.committed([TP("events", p) for p in range(6)], timeout=10)
        assert [tp.offset for tp in got] == [10 + p for p in range(6)]
    finally:
        c1.close()
        c2.close()
