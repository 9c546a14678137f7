"""What AdminClient must do against any broker: one function per operation and error path,
run by tests/admin (mini-broker, tansu) and integration/test_admin_kafka.py (Kafka 4.x).

``features`` names the optional APIs a broker offers (tansu lacks CreatePartitions,
AlterConfigs and OffsetDelete): a missing one must fail as UnsupportedVersionError.
"""

from __future__ import annotations

import time
import uuid

import pytest

from kclient import Producer, ProducerData, consumer
from kclient.admin import (
    AdminClient,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    OffsetSpec,
    TopicPartition,
)
from kclient.errors import (
    GroupIdNotFoundError,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    KafkaError,
    NonEmptyGroupError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from tests.waiting import still

ALL_FEATURES = frozenset(
    {
        "create_partitions",
        "alter_configs",
        "offset_delete",
        "delete_records",
        "incremental_alter_configs",
        "topic_configs",
        "validate_only",
        "timestamp_lookup",
        "group_assignments",
        "group_errors",
    }
)


def name(prefix: str) -> str:
    """A topic or group name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_topic(admin: AdminClient, topic: str, partitions: int, timeout: float = 20) -> None:
    """Until metadata shows the topic with its leaders (Kafka creates asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            d = admin.describe_topics([topic])[topic]
            if len(d.partitions) == partitions and all(p.leader >= 0 for p in d.partitions):
                return
        except KafkaError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {topic} did not show {partitions} partitions")
        time.sleep(0.2)


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    """Write ``n`` records to each listed partition (keys and values tell them apart)."""
    with Producer(
        {"metadata.broker.list": bootstrap, "producer.type": "sync", "request.required.acks": 1}
    ) as p:
        for part, n in per_partition.items():  # one record per batch: tansu's ListOffsets
            for i in range(n):  # counts a batch as one offset
                p.send(
                    ProducerData(topic, b"value-%d-%d" % (part, i), key=b"k%d" % i, partition=part)
                )


def topic_with_data(
    admin: AdminClient, bootstrap: str, partitions: int = 2, per_partition: int = 10
) -> str:
    topic = name("adm")
    admin.create_topic(topic, partitions, 1)
    wait_topic(admin, topic, partitions)
    produce(bootstrap, topic, dict.fromkeys(range(partitions), per_partition))
    return topic


# -- topics ----------------------------------------------------------------------------------
def check_topic_lifecycle(admin: AdminClient, features: frozenset[str]) -> None:
    topic = name("life")
    created = admin.create_topics([NewTopic(topic, 3, 1)])
    assert [(c.name, c.num_partitions) for c in created] == [(topic, 3)]
    wait_topic(admin, topic, 3)
    assert topic in [t.name for t in admin.list_topics()]
    described = admin.describe_topics([topic])[topic]
    assert [p.partition for p in described.partitions] == [0, 1, 2]
    assert all(p.leader in p.replicas for p in described.partitions)
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topic(topic, 1, 1)
    admin.delete_topics([topic])
    deadline = time.monotonic() + 20
    while topic in [t.name for t in admin.list_topics()] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert topic not in [t.name for t in admin.list_topics()]


def check_validate_only(admin: AdminClient) -> None:
    topic = name("dry")
    assert admin.create_topics([NewTopic(topic, 2, 1)], validate_only=True)[0].name == topic
    still(
        lambda: topic not in [t.name for t in admin.list_topics()],
        0.5,
        "validate_only creates no topic",
    )


def check_topic_errors(admin: AdminClient, features: frozenset[str]) -> None:
    missing = name("missing")
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.describe_topics([missing])
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics([missing])
    with pytest.raises(InvalidPartitionsError):
        admin.create_topic(name("zero"), 0, 1)
    with pytest.raises(InvalidReplicationFactorError):
        admin.create_topic(name("rf"), 1, 5)
    if "topic_configs" in features:
        with pytest.raises(InvalidConfigurationError):
            admin.create_topic(name("cfg"), 1, 1, {"retention.ms": "not-a-number"})


def check_create_partitions(admin: AdminClient, features: frozenset[str]) -> None:
    topic = name("grow")
    admin.create_topic(topic, 1, 1)
    wait_topic(admin, topic, 1)
    if "create_partitions" not in features:
        with pytest.raises(UnsupportedVersionError):
            admin.create_partitions({topic: 3})
        return
    admin.create_partitions({topic: 2}, validate_only=True)
    admin.create_partitions({topic: 3})
    wait_topic(admin, topic, 3)
    with pytest.raises(
        InvalidPartitionsError, match="currently has 3 partition.s.; 2 would not be an increase"
    ):
        admin.create_partitions({topic: 2})
    with pytest.raises(InvalidPartitionsError, match="already has 3 partition"):
        admin.create_partitions({topic: 3})
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.create_partitions({name("missing"): 4})


# -- configs ---------------------------------------------------------------------------------
def configs_when(admin: AdminClient, res: ConfigResource, ready, timeout: float = 20) -> dict:
    """The resource's entries once ``ready(entries)`` holds (Kafka applies a change through
    its metadata log, so a describe right after an alter may still see the old value)."""
    deadline = time.monotonic() + timeout
    while True:
        entries = {e.name: e for e in admin.describe_configs([res])[res]}
        if ready(entries) or time.monotonic() > deadline:
            return entries
        time.sleep(0.2)


def check_configs(admin: AdminClient, features: frozenset[str]) -> None:
    topic = name("cfg")
    admin.create_topic(topic, 1, 1, {"retention.ms": "3600000"})
    wait_topic(admin, topic, 1)
    res = ConfigResource(ConfigResourceType.TOPIC, topic)
    entries = configs_when(admin, res, lambda e: "retention.ms" in e)
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
    admin.incremental_alter_configs(
        {
            res: [
                AlterConfigOp("retention.ms", "7200000"),
                AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.APPEND),
            ]
        }
    )
    entries = configs_when(admin, res, lambda e: e["retention.ms"].value == "7200000")
    assert entries["retention.ms"].value == "7200000"
    assert entries["cleanup.policy"].value == "delete,compact"
    admin.incremental_alter_configs(
        {res: [AlterConfigOp("retention.ms", None, AlterConfigOpType.DELETE)]}
    )
    entries = configs_when(admin, res, lambda e: e["retention.ms"].source != "DYNAMIC_TOPIC_CONFIG")
    assert entries["retention.ms"].source != "DYNAMIC_TOPIC_CONFIG"
    with pytest.raises(InvalidConfigurationError):
        admin.incremental_alter_configs({res: [AlterConfigOp("no.such.config", "1")]})
    with pytest.raises(InvalidConfigurationError):
        admin.incremental_alter_configs({res: [AlterConfigOp("retention.ms", "abc")]})
    with pytest.raises(InvalidConfigurationError):
        admin.incremental_alter_configs(
            {res: [AlterConfigOp("retention.ms", "1", AlterConfigOpType.APPEND)]}
        )
    missing = ConfigResource(ConfigResourceType.TOPIC, name("missing"))
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.describe_configs([missing])
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.incremental_alter_configs({missing: [AlterConfigOp("retention.ms", "1")]})
    if "alter_configs" in features:
        admin.alter_configs({res: {"retention.ms": "60000"}})
        entries = configs_when(admin, res, lambda e: e["retention.ms"].value == "60000")
        assert entries["retention.ms"].value == "60000"
        assert entries["cleanup.policy"].value == "delete"  # replaced, not kept
    broker = ConfigResource(
        ConfigResourceType.BROKER, str(admin.describe_cluster().brokers[0].node_id)
    )
    names = {e.name for e in admin.describe_configs([broker])[broker]}
    assert "log.segment.bytes" in names or "num.partitions" in names


# -- offsets, records, cluster ---------------------------------------------------------------
def check_offsets_and_records(admin: AdminClient, bootstrap: str, features: frozenset[str]) -> None:
    topic = topic_with_data(admin, bootstrap, partitions=2, per_partition=10)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    ends = admin.list_offsets({tp0: OffsetSpec.LATEST, tp1: OffsetSpec.LATEST})
    assert ends[tp0].offset == 10 and ends[tp1].offset == 10
    assert admin.list_offsets({tp0: OffsetSpec.EARLIEST})[tp0].offset == 0
    future = int(time.time() * 1000) + 3_600_000
    if "timestamp_lookup" in features:  # tansu answers 0
        assert admin.list_offsets({tp0: future})[tp0].offset == -1
    assert admin.list_offsets({tp0: 0})[tp0].offset == 0
    if "delete_records" not in features:
        return
    assert admin.delete_records({tp0: 4}) == {tp0: 4}
    assert admin.list_offsets({tp0: OffsetSpec.EARLIEST})[tp0].offset == 4
    assert admin.list_offsets({tp0: 0})[tp0].offset == 4
    assert admin.delete_records({tp1: -1}) == {tp1: 10}
    with pytest.raises(OffsetOutOfRangeError):
        admin.delete_records({tp0: 11})
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_records({TopicPartition(topic, 7): 1})


def check_describe_cluster(admin: AdminClient) -> None:
    cluster = admin.describe_cluster()
    assert cluster.brokers and all(b.port > 0 for b in cluster.brokers)


# -- groups ----------------------------------------------------------------------------------
def check_group_offsets_lag_reset(
    admin: AdminClient, bootstrap: str, features: frozenset[str]
) -> None:
    topic = topic_with_data(admin, bootstrap, partitions=2, per_partition=10)
    group = name("grp")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    admin.alter_consumer_group_offsets(group, {tp0: 3, tp1: 7})
    assert {tp: o.offset for tp, o in admin.list_consumer_group_offsets(group).items()} == {
        tp0: 3,
        tp1: 7,
    }
    assert group in [g.group_id for g in admin.list_groups()]
    assert admin.describe_groups([group])[group].state == "Empty"
    lag = admin.consumer_group_lag(group)
    assert [(p.partition, p.current_offset, p.log_end_offset, p.lag) for p in lag.partitions] == [
        (0, 3, 10, 7),
        (1, 7, 10, 3),
    ]
    assert lag.total == 10 and lag.by_topic() == {topic: 10}
    plan = admin.reset_consumer_group_offsets(group, [topic], strategy="earliest")
    assert [(r.current_offset, r.new_offset) for r in plan] == [(3, 0), (7, 0)]
    assert admin.list_consumer_group_offsets(group)[tp0].offset == 3  # dry run
    admin.reset_consumer_group_offsets(group, [topic], strategy="shift", value=5, dry_run=False)
    assert {tp: o.offset for tp, o in admin.list_consumer_group_offsets(group).items()} == {
        tp0: 8,
        tp1: 10,
    }  # clamped to the end
    admin.reset_consumer_group_offsets(group, [tp0], strategy="offset", value=2, dry_run=False)
    assert admin.list_consumer_group_offsets(group)[tp0].offset == 2
    admin.reset_consumer_group_offsets(group, None, strategy="latest", dry_run=False)
    assert admin.consumer_group_lag(group).total == 0
    admin.reset_consumer_group_offsets(group, None, strategy="timestamp", value=0, dry_run=False)
    assert admin.list_consumer_group_offsets(group)[tp1].offset == 0
    if "offset_delete" in features:
        admin.delete_consumer_group_offsets(group, [tp1])
        assert set(admin.list_consumer_group_offsets(group)) == {tp0}
    admin.delete_groups([group])
    if "group_errors" in features:  # tansu answers 0 for an unknown group
        with pytest.raises(GroupIdNotFoundError):
            admin.delete_groups([group])
        with pytest.raises(GroupIdNotFoundError):
            admin.describe_groups([group])


def check_live_group(admin: AdminClient, bootstrap: str, features: frozenset[str]) -> None:
    """A group with a live member: described with its assignment, not deletable, not reset."""
    topic = topic_with_data(admin, bootstrap, partitions=2, per_partition=5)
    group = name("live")
    conn = consumer.create(
        {
            "metadata.broker.list": bootstrap,
            "group.id": group,
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 200,
            "auto.commit.enable": False,
            "session.timeout.ms": 6000,
        }
    )
    try:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 10 and time.monotonic() < deadline:
            try:
                for _ in stream:
                    seen += 1
            except KafkaError:
                pass
        conn.commit_offsets()
        described = admin.describe_groups([group])[group]
        assert described.state == "Stable" and len(described.members) == 1
        lag = admin.consumer_group_lag(group)
        assert [(p.current_offset, p.lag) for p in lag.partitions] == [(5, 0), (5, 0)]
        if "group_assignments" in features:  # tansu describes members without them
            assert set(described.members[0].assignment) == {
                TopicPartition(topic, 0),
                TopicPartition(topic, 1),
            }
            assert all(p.consumer_id == described.members[0].member_id for p in lag.partitions)
        if "group_assignments" in features:  # tansu deletes a live group
            with pytest.raises(NonEmptyGroupError):
                admin.delete_groups([group])
        with pytest.raises(NonEmptyGroupError):
            admin.reset_consumer_group_offsets(group, [topic], strategy="earliest")
    finally:
        conn.shutdown()
