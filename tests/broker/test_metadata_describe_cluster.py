"""Metadata v0-v12 and DescribeCluster v0-v1 on the wire: authorized operations when asked (as
Kafka 4.x with no authorizer answers: topic 3576, cluster 8096), topic ids, racks, advertised
addresses and DescribeCluster's endpoint types."""

from __future__ import annotations

import pytest

from kclient.broker import MiniBroker, MiniCluster
from kclient.protocol import error_codes as E
from kclient.protocol.acl import NOT_REQUESTED, AclOperation, ResourceType, operations_of
from kclient.protocol.apis import DESCRIBE_CLUSTER, DESCRIBE_GROUPS, METADATA

TOPIC_FIELD, CLUSTER_FIELD = 3576, 8096  # measured from Apache Kafka 4.x (no authorizer)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with MiniCluster(
        num_brokers=2, log_dir=tmp_path_factory.mktemp("md"), racks=["east", None]
    ) as c:
        c.create_topic("md", partitions=2)
        yield c


@pytest.mark.parametrize("version", range(13))
def test_metadata_every_version(cluster, raw_client, version):
    client = raw_client(cluster.bootstrap)
    absent = f"absent-{version}"
    body = {"topics": [{"name": "md"}, {"name": absent}], "allow_auto_topic_creation": False}
    plain = client.request(METADATA, version, body)
    asked = client.request(
        METADATA,
        version,
        dict(
            body,
            include_cluster_authorized_operations=True,
            include_topic_authorized_operations=True,
        ),
    )
    assert [(t.name, t.error_code) for t in plain.topics][0] == ("md", 0)
    if version >= 4:  # v0-v3 auto-create regardless of the flag
        assert [(t.name, t.error_code) for t in plain.topics][1] == (
            absent,
            E.UnknownTopicOrPartitionError.errno,
        )
    assert [p.leader_id for p in plain.topics[0].partitions] == [0, 1]
    if version >= 1:
        assert [(b.node_id, b.rack) for b in plain.brokers] == [(0, "east"), (1, None)]
    if version >= 8:
        assert {t.topic_authorized_operations for t in plain.topics} == {NOT_REQUESTED}
        assert {t.topic_authorized_operations for t in asked.topics} == {TOPIC_FIELD}
    cluster_ops = (
        (NOT_REQUESTED, CLUSTER_FIELD) if 8 <= version <= 10 else (NOT_REQUESTED, NOT_REQUESTED)
    )  # absent fields decode to Kafka's default
    assert (plain.cluster_authorized_operations, asked.cluster_authorized_operations) == cluster_ops
    if version >= 10:  # the topic's own id; an unknown topic's is zero
        ids = {t.name: t.topic_id for t in asked.topics}
        assert ids["md"] == cluster.brokers[0].cluster.topic_id("md") != bytes(16)
        assert all(tid == bytes(16) for name, tid in ids.items() if name != "md")


def test_metadata_v12_lookup_by_topic_id_is_unknown(cluster, raw_client):
    client = raw_client(cluster.bootstrap)
    wanted = bytes(range(16))
    r = client.request(METADATA, 12, {"topics": [{"topic_id": wanted, "name": None}]})
    [topic] = r.topics
    assert (topic.error_code, topic.name, topic.topic_id) == (
        E.UnknownTopicIdError.errno,
        None,
        wanted,
    )


def test_metadata_v12_lookup_by_a_known_topic_id(cluster, raw_client):
    client = raw_client(cluster.bootstrap)
    wanted = cluster.brokers[0].cluster.topic_id("md")
    r = client.request(METADATA, 12, {"topics": [{"topic_id": wanted, "name": None}]})
    [topic] = r.topics
    assert (topic.error_code, topic.name, topic.topic_id) == (0, "md", wanted)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster(cluster, raw_client, version):
    client = raw_client(cluster.bootstrap)
    r = client.request(DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": True})
    assert (r.error_code, r.cluster_id, r.controller_id) == (0, "kclient-mini-cluster", 0)
    assert [(b.broker_id, b.host, b.port, b.rack) for b in r.brokers] == [
        (b.node_id, b.host, b.port, b.rack) for b in cluster.brokers
    ]
    assert operations_of(r.cluster_authorized_operations) == {
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    }
    r = client.request(DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": False})
    assert r.cluster_authorized_operations == NOT_REQUESTED


def test_describe_cluster_endpoint_types(cluster, raw_client):
    client = raw_client(cluster.bootstrap)
    r = client.request(DESCRIBE_CLUSTER, 1, {"endpoint_type": 2})
    assert (r.error_code, r.brokers) == (E.MismatchedEndpointTypeError.errno, [])
    r = client.request(DESCRIBE_CLUSTER, 1, {"endpoint_type": 7})
    assert r.error_code == E.UnsupportedEndpointTypeError.errno


def test_describe_groups_authorized_operations(tmp_path, raw_client):
    with MiniBroker(log_dir=tmp_path) as broker:
        client = raw_client(broker.bootstrap)
        for asked, expected in ((False, NOT_REQUESTED), (True, 328)):
            r = client.request(
                DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": asked}
            )
            assert r.groups[0].authorized_operations == expected
    assert operations_of(328) == {AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}
    assert ResourceType.GROUP == 3


def test_brokers_name_their_advertised_address(tmp_path, raw_client):
    config = {"advertised.listeners": "PLAINTEXT://kafka.example:29092", "broker.rack": "r9"}
    with MiniBroker(log_dir=tmp_path, config=config) as broker:
        client = raw_client(broker.bootstrap)
        [b] = client.request(METADATA, 9, {"topics": []}).brokers
        assert (b.host, b.port, b.rack) == ("kafka.example", 29092, "r9")
        [b] = client.request(DESCRIBE_CLUSTER, 0, {}).brokers
        assert (b.host, b.port, b.rack) == ("kafka.example", 29092, "r9")
    with MiniBroker(
        log_dir=tmp_path, config={"advertised.host.name": "old.example", "advertised.port": 19092}
    ) as broker:
        client = raw_client(broker.bootstrap)
        [b] = client.request(METADATA, 1, {"topics": []}).brokers
        assert (b.host, b.port) == ("old.example", 19092)
