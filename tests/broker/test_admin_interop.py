"""Cluster and topic descriptions as real admin clients ask for them, no workarounds: librdkafka
(confluent-kafka), kafka-python and kcat against a rack-aware MiniCluster.  With no authorizer,
authorized operations are every operation of the resource type, as Kafka answers."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kclient.broker import MiniCluster
from tests.needs import missing, need_module

confluent_kafka = need_module("confluent_kafka")
kafka = need_module("kafka")
from confluent_kafka.admin import AdminClient  # noqa: E402

KCAT = shutil.which("kcat") or "/usr/bin/kcat"
RACKS = ["rack-a", "rack-b", None]
CLUSTER_OPS = {
    "ALTER",
    "ALTER_CONFIGS",
    "CLUSTER_ACTION",
    "CREATE",
    "DESCRIBE",
    "DESCRIBE_CONFIGS",
    "IDEMPOTENT_WRITE",
}
TOPIC_OPS = {
    "ALTER",
    "ALTER_CONFIGS",
    "CREATE",
    "DELETE",
    "DESCRIBE",
    "DESCRIBE_CONFIGS",
    "READ",
    "WRITE",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Three brokers on racks a, b and none, with a 3-partition topic (one leader each)."""
    with MiniCluster(num_brokers=3, log_dir=tmp_path_factory.mktemp("admin"), racks=RACKS) as c:
        c.create_topic("described", partitions=3)
        yield c


def _addresses(cluster) -> dict[int, tuple[str, int]]:
    return {b.node_id: (b.host, b.port) for b in cluster.brokers}


def test_confluent_list_topics_and_describe_cluster(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    metadata = admin.list_topics(timeout=15)
    assert "described" in metadata.topics and len(metadata.topics["described"].partitions) == 3
    assert {b.id: (b.host, b.port) for b in metadata.brokers.values()} == _addresses(cluster)
    described = admin.describe_cluster(
        include_authorized_operations=True, request_timeout=15
    ).result()
    assert described.cluster_id == "kclient-mini-cluster" and described.controller.id == 0
    assert {(n.id, n.host, n.port, n.rack) for n in described.nodes} == {
        (i, *_addresses(cluster)[i], RACKS[i]) for i in range(3)
    }
    assert {op.name for op in described.authorized_operations} == CLUSTER_OPS
    plain = admin.describe_cluster(request_timeout=15).result()
    assert plain.authorized_operations is None  # not asked: Kafka's "not requested"


def test_confluent_describe_topics_with_authorized_operations(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.describe_topics(
        confluent_kafka.TopicCollection(["described"]),
        include_authorized_operations=True,
        request_timeout=15,
    )
    topic = futures["described"].result()
    assert {op.name for op in topic.authorized_operations} == TOPIC_OPS
    assert [(p.id, p.leader.id, p.leader.rack) for p in topic.partitions] == [
        (i, i, RACKS[i]) for i in range(3)
    ]
    missing = admin.describe_topics(
        confluent_kafka.TopicCollection(["no-such-topic"]), request_timeout=15
    )["no-such-topic"]
    with pytest.raises(confluent_kafka.KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        missing.result()


def test_kafka_python_admin_lists_and_describes(cluster):
    admin = kafka.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        assert "described" in admin.list_topics()
        described = admin.describe_cluster()
        assert (described["cluster_id"], described["controller_id"]) == ("kclient-mini-cluster", 0)
        assert {(b["broker_id"], b["rack"]) for b in described["brokers"]} == {
            (i, RACKS[i]) for i in range(3)
        }
        assert set(described["authorized_operations"]) == CLUSTER_OPS
        [topic] = admin.describe_topics(["described"])
        assert topic["error_code"] == 0 and set(topic["authorized_operations"]) == TOPIC_OPS
        assert [p["leader_id"] for p in topic["partitions"]] == [0, 1, 2]
    finally:
        admin.close()


def test_kcat_lists_brokers_and_topics(cluster):
    if not shutil.which(KCAT):
        missing("kcat not installed (apt-get install kcat)")
    listing = subprocess.run(
        [KCAT, "-b", cluster.bootstrap, "-L"], capture_output=True, timeout=30, check=True
    ).stdout.decode()
    assert " 3 brokers:" in listing
    for node_id, (host, port) in _addresses(cluster).items():
        assert f"broker {node_id} at {host}:{port}" in listing
    assert 'topic "described" with 3 partitions' in listing
    assert "partition 2, leader 2, replicas: 2, isrs: 2" in listing
