"""Real clients' metadata calls and regex subscriptions against the mini-broker, no workarounds.

librdkafka asks for all topics with a malformed Metadata v9 count (a 4-byte placeholder where a
1-byte compact count belongs); Kafka's lenient decoding answers it, and so must the mini-broker.
A regex subscription must also pick up a topic created after the subscribe.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

import pytest

from tests.needs import missing, need_module

confluent_kafka = need_module("confluent_kafka")
kafka = need_module("kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

KCAT = shutil.which("kcat") or "/usr/bin/kcat"
DEADLINE = 60.0
FIRST = [f"a{i}".encode() for i in range(10)]
LATER = [f"b{i}".encode() for i in range(5)]


@pytest.fixture
def broker(tmp_path):
    """A mini-broker with ``prefix-a`` (2 partitions, 10 records) and a non-matching topic."""
    from kclient.broker import MiniBroker

    with MiniBroker(
        log_dir=tmp_path / "broker", config={"group.initial.rebalance.delay.ms": 0}
    ) as b:
        b.create_topic("prefix-a", partitions=2)
        b.create_topic("other")
        produce(b, "prefix-a", FIRST)
        produce(b, "other", [b"not-matched"])
        yield b


def produce(broker, topic: str, values: list[bytes]) -> None:
    """Produce with librdkafka (auto-creating ``topic`` if needed) and wait for delivery."""
    p = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i, v in enumerate(values):
        p.produce(topic, v, key=str(i).encode())
    assert p.flush(30) == 0


def consume_until(poll, want: int, on_first=None) -> list[bytes]:
    """Call ``poll()`` (returning new values) until ``want`` values; ``on_first`` runs once the
    first ten have arrived (to create the later topic)."""
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE
    while len(got) < want and time.monotonic() < deadline:
        got += poll()
        if on_first is not None and len(got) >= len(FIRST):
            on_first()
            on_first = None
    return got


def test_confluent_admin_list_topics(broker):
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assert {"prefix-a", "other"} <= set(md.topics)
    assert len(md.topics["prefix-a"].partitions) == 2
    assert [b.id for b in md.brokers.values()] == [broker.node_id]


def test_confluent_regex_subscription_sees_a_topic_created_later(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "regex-ck",
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    consumer.subscribe(["^prefix.*"])

    def poll():
        msg = consumer.poll(0.5)
        if msg is None:
            return []
        assert msg.error() is None, msg.error()
        return [msg.value()]

    def create_later():
        admin.create_topics([NewTopic("prefix-b", 1, 1)])["prefix-b"].result(10)
        produce(broker, "prefix-b", LATER)

    try:
        got = consume_until(poll, len(FIRST) + len(LATER), create_later)
    finally:
        consumer.close()
    assert sorted(got) == sorted(FIRST + LATER)


def test_kafka_python_admin_and_regex_subscription(broker):
    admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id="regex-kp",
        auto_offset_reset="earliest",
        metadata_max_age_ms=500,
    )
    try:
        assert {"prefix-a", "other"} <= set(admin.list_topics())
        consumer.subscribe(pattern="^prefix.*")

        def poll():
            return [m.value for ms in consumer.poll(500).values() for m in ms]

        def create_later():
            admin.create_topics([kafka.admin.NewTopic("prefix-b", 1, 1)])
            produce(broker, "prefix-b", LATER)

        got = consume_until(poll, len(FIRST) + len(LATER), create_later)
    finally:
        consumer.close()
        admin.close()
    assert sorted(got) == sorted(FIRST + LATER)


def test_kcat_list_and_regex_group(broker):
    if not shutil.which(KCAT):
        missing("kcat not installed (apt-get install kcat)")
    listing = subprocess.run(
        [KCAT, "-b", broker.bootstrap, "-L"], capture_output=True, timeout=30, check=True
    ).stdout.decode()
    assert 'topic "prefix-a" with 2 partitions' in listing
    # auto.offset.reset, not -o beginning: kcat -G applies -o to every assignment, so the
    # rebalance the new topic causes would restart the old partitions from the beginning
    args = [
        "-b",
        broker.bootstrap,
        "-G",
        "regex-kcat",
        "-u",
        "-f",
        "%s\\n",
        "-X",
        "auto.offset.reset=earliest",
        "-X",
        "topic.metadata.refresh.interval.ms=500",
    ]
    proc = subprocess.Popen(
        [KCAT, *args, "^prefix.*"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    lines: list[bytes] = []

    def read():
        for line in proc.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + DEADLINE
        while len(lines) < len(FIRST) and time.monotonic() < deadline:
            time.sleep(0.1)
        produce(broker, "prefix-b", LATER)  # auto-created by the produce, after the subscribe
        while len(lines) < len(FIRST) + len(LATER) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(10)
        reader.join(10)
    assert sorted(line.strip() for line in lines) == sorted(FIRST + LATER)
