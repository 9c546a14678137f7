"""InitProducerId, ListGroups, DescribeGroups and DescribeConfigs over the wire, every version."""

import pytest

from kclient.broker import MiniBroker
from kclient.protocol.apis import (
    DESCRIBE_CONFIGS,
    DESCRIBE_GROUPS,
    INIT_PRODUCER_ID,
    JOIN_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    SYNC_GROUP,
)

TOPIC, BROKER = 2, 4


def test_init_producer_id_hands_out_fresh_ids_that_survive_a_restart(tmp_path, raw_client):
    seen = set()
    with MiniBroker(log_dir=tmp_path / "b") as broker:
        c = raw_client(broker.bootstrap)
        for version in range(INIT_PRODUCER_ID.max_version + 1):
            r = c.request(
                INIT_PRODUCER_ID,
                version,
                {"transactional_id": None, "transaction_timeout_ms": 60000},
            )
            assert (r.error_code, r.producer_epoch) == (0, 0)
            seen.add(r.producer_id)
        txn = c.request(
            INIT_PRODUCER_ID, 4, {"transactional_id": "tx", "transaction_timeout_ms": 60000}
        )
        assert (txn.error_code, txn.producer_epoch) == (0, 0)  # transactional: coordinated
        seen.add(txn.producer_id)
        port = broker.port
    assert len(seen) == INIT_PRODUCER_ID.max_version + 2 and min(seen) >= 0
    with MiniBroker(log_dir=tmp_path / "b", port=port) as broker:
        r = raw_client(broker.bootstrap).request(
            INIT_PRODUCER_ID, 0, {"transactional_id": None, "transaction_timeout_ms": 1}
        )
        assert r.producer_id not in seen and r.producer_id > max(seen)


@pytest.fixture
def groups(mini_broker, raw_client):
    """Group "stable" with one member and an assignment; group "offsets" with only a commit."""
    mini_broker.create_topic("t")
    c = raw_client(mini_broker.bootstrap, client_id="member-client")
    join = c.request(
        JOIN_GROUP,
        3,
        {
            "group_id": "stable",
            "session_timeout_ms": 30000,
            "rebalance_timeout_ms": 30000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"sub"}],
        },
    )
    assert join.error_code == 0
    sync = c.request(
        SYNC_GROUP,
        2,
        {
            "group_id": "stable",
            "generation_id": join.generation_id,
            "member_id": join.member_id,
            "assignments": [{"member_id": join.member_id, "assignment": b"assigned"}],
        },
    )
    assert sync.error_code == 0
    commit = c.request(
        OFFSET_COMMIT,
        2,
        {
            "group_id": "offsets",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5}]}
            ],
        },
    )
    assert commit.topics[0].partitions[0].error_code == 0
    return c, join.member_id


def test_list_groups_every_version_with_state_and_type_filters(groups):
    c, _ = groups
    for version in range(LIST_GROUPS.max_version + 1):
        r = c.request(LIST_GROUPS, version, {})
        assert r.error_code == 0
        got = {g.group_id: g for g in r.groups}
        assert set(got) == {"stable", "offsets"}
        assert (got["stable"].protocol_type, got["offsets"].protocol_type) == ("consumer", "")
        if version >= 4:
            assert (got["stable"].group_state, got["offsets"].group_state) == ("Stable", "Empty")
        if version >= 5:
            assert got["stable"].group_type == "classic"
    assert [
        g.group_id for g in c.request(LIST_GROUPS, 4, {"states_filter": ["stable"]}).groups
    ] == ["stable"]
    assert c.request(LIST_GROUPS, 5, {"types_filter": ["consumer"]}).groups == []
    assert len(c.request(LIST_GROUPS, 5, {"types_filter": ["Classic"]}).groups) == 2


def test_describe_groups_every_version(groups):
    c, member_id = groups
    for version in range(DESCRIBE_GROUPS.max_version + 1):
        r = c.request(DESCRIBE_GROUPS, version, {"groups": ["stable", "offsets", "nope"]})
        stable, offsets, nope = r.groups
        assert (
            stable.error_code,
            stable.group_state,
            stable.protocol_type,
            stable.protocol_data,
        ) == (0, "Stable", "consumer", "range")
        (m,) = stable.members
        assert (m.member_id, m.client_id, m.client_host) == (
            member_id,
            "member-client",
            "/127.0.0.1",
        )
        assert (m.member_metadata, m.member_assignment) == (b"sub", b"assigned")
        assert (offsets.error_code, offsets.group_state, offsets.members) == (0, "Empty", [])
        assert nope.group_state == "Dead" and nope.members == []
        assert nope.error_code == (69 if version >= 6 else 0)  # GROUP_ID_NOT_FOUND


def _configs(result):
    return {e.name: e for e in result.configs}


def test_describe_configs_of_a_topic_every_version(mini_broker, raw_client):
    mini_broker.create_topic("cfg", config={"retention.ms": "3600000"})
    c = raw_client(mini_broker.bootstrap)
    for version in range(DESCRIBE_CONFIGS.max_version + 1):
        r = c.request(
            DESCRIBE_CONFIGS,
            version,
            {
                "include_synonyms": True,
                "resources": [
                    {"resource_type": TOPIC, "resource_name": "cfg", "configuration_keys": None},
                    {
                        "resource_type": TOPIC,
                        "resource_name": "missing",
                        "configuration_keys": None,
                    },
                ],
            },
        )
        found, missing = r.results
        assert (found.error_code, found.resource_name) == (0, "cfg")
        configs = _configs(found)
        assert configs["retention.ms"].value == "3600000"
        assert configs["segment.bytes"].value == str(1 << 30)
        assert configs["cleanup.policy"].value == "delete"
        if version == 0:
            assert (configs["retention.ms"].is_default, configs["segment.bytes"].is_default) == (
                False,
                True,
            )
        else:
            assert configs["retention.ms"].config_source == 1  # DYNAMIC_TOPIC_CONFIG
            assert configs["segment.bytes"].config_source == 5  # DEFAULT_CONFIG
            assert [(s.name, s.source) for s in configs["retention.ms"].synonyms] == [
                ("retention.ms", 1)
            ]
        assert missing.error_code == 3 and missing.configs == []  # UNKNOWN_TOPIC_OR_PARTITION
    only = c.request(
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "cfg",
                    "configuration_keys": ["segment.ms"],
                }
            ]
        },
    )
    assert [(e.name, e.synonyms) for e in only.results[0].configs] == [("segment.ms", [])]


def test_describe_configs_of_the_broker(tmp_path, raw_client):
    with MiniBroker(log_dir=tmp_path / "b", config={"log.retention.hours": "5"}) as broker:
        c = raw_client(broker.bootstrap)
        r = c.request(
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {"resource_type": BROKER, "resource_name": "0", "configuration_keys": None},
                    {"resource_type": BROKER, "resource_name": "9", "configuration_keys": None},
                    {"resource_type": 8, "resource_name": "0", "configuration_keys": None},
                ]
            },
        )
        own, other, logger = r.results
        configs = _configs(own)
        assert (
            configs["log.retention.hours"].value,
            configs["log.retention.hours"].config_source,
        ) == ("5", 4)
        assert configs["num.partitions"].config_source == 5 and configs["num.partitions"].read_only
        assert other.error_code == 42 and logger.error_code == 42  # INVALID_REQUEST
        broker.create_topic("hours")
        topic = c.request(
            DESCRIBE_CONFIGS,
            1,
            {
                "include_synonyms": True,
                "resources": [
                    {"resource_type": TOPIC, "resource_name": "hours", "configuration_keys": None}
                ],
            },
        )
        retention = _configs(topic.results[0])["retention.ms"]
        assert (retention.value, retention.config_source) == (str(5 * 3600_000), 4)
        assert [(s.name, s.value) for s in retention.synonyms] == [("log.retention.hours", "5")]


def test_offset_delete(groups, mini_broker):
    """Offsets of an Empty group go; a member's (unparsable) subscription protects all."""
    c, _ = groups
    r = c.request(
        OFFSET_DELETE,
        0,
        {
            "group_id": "offsets",
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 0}, {"partition_index": 7}]}
            ],
        },
    )
    assert r.error_code == 0
    assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [(7, 3), (0, 0)]
    assert mini_broker.coordinator.fetch_offsets("offsets") == {}
    # "stable" subscribes to "sub"-metadata that does not parse as the consumer protocol:
    # every topic counts as subscribed, as Kafka treats an unknown subscription
    r = c.request(
        OFFSET_DELETE,
        0,
        {"group_id": "stable", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
    )
    assert (r.error_code, r.topics[0].partitions[0].error_code) == (0, 86)
    r = c.request(OFFSET_DELETE, 0, {"group_id": "nope", "topics": []})
    assert r.error_code == 69  # GROUP_ID_NOT_FOUND
