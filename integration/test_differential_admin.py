"""Differential cases of the admin APIs (see test_differential.py): InitProducerId, ListGroups,
DescribeGroups, DescribeConfigs, OffsetDelete (the APIs Kafka's tools use); CreateTopics /
DeleteTopics error paths; DeleteGroups, CreatePartitions, IncrementalAlterConfigs, AlterConfigs,
DeleteRecords (kclient's AdminClient), on Kafka 4.x and a mini-broker alike."""

from __future__ import annotations

import time
from typing import Any

from kclient.protocol.apis import (
    ALTER_CONFIGS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_GROUPS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CONFIGS,
    DESCRIBE_GROUPS,
    INCREMENTAL_ALTER_CONFIGS,
    INIT_PRODUCER_ID,
    JOIN_GROUP,
    LIST_GROUPS,
    LIST_OFFSETS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    PRODUCE,
)

from .differential import Twin
from .differential_support import (
    LONG_MS,
    _wait_leader,
    batch,
    check,
    create,
    produce_body,
    wait_coordinator,
    wait_transaction_coordinator,
)

# --- the APIs added for Kafka's Java clients and tools ---------------------------------------


def _admin_groups(response: Any) -> Any:
    """A ListGroups response with only the groups of test_admin_apis."""
    if not isinstance(response, dict):
        return response
    return dict(
        response, groups=[g for g in response["groups"] if g["group_id"].startswith("admin")]
    )


def test_admin_apis(twin4):
    twin4.case = "InitProducerId, ListGroups, DescribeGroups, DescribeConfigs"
    create(twin4, "admin", partitions=2, retention_ms="3600000")
    wait_transaction_coordinator(twin4)
    for version in (0, 2, 4):
        twin4.request(
            INIT_PRODUCER_ID,
            version,
            {"transactional_id": None, "transaction_timeout_ms": 60000},
            "idempotent",
        )
    wait_coordinator(twin4, "admin-group")
    twin4.request(
        OFFSET_COMMIT,
        2,
        {
            "group_id": "admin-group",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [
                {"name": "admin", "partitions": [{"partition_index": 0, "committed_offset": 1}]}
            ],
        },
        "admin-group",
    )
    for version in (1, 3, 4, 5):  # only this case's group: other cases' groups change
        twin4.request(
            LIST_GROUPS, version, {"states_filter": [], "types_filter": []}, view=_admin_groups
        )
    twin4.request(LIST_GROUPS, 4, {"states_filter": ["Stable"]}, "Stable only", view=_admin_groups)
    for version in (0, 3, 5, 6):  # one group a request: Kafka answers in its own order
        for group in ("admin-group", "no-such-group"):
            twin4.request(DESCRIBE_GROUPS, version, {"groups": [group]}, group)
    keys = [
        "cleanup.policy",
        "max.message.bytes",
        "retention.ms",
        "segment.bytes",
        "min.insync.replicas",
        "message.timestamp.type",
    ]
    for version in (1, 2, 3, 4):
        twin4.request(
            DESCRIBE_CONFIGS,
            version,
            {
                "resources": [
                    {"resource_type": 2, "resource_name": "admin", "configuration_keys": keys},
                    {
                        "resource_type": 2,
                        "resource_name": "admin-missing",
                        "configuration_keys": keys,
                    },
                ]
            },
            "topic",
            order_by={"configs": "name"},
        )
    twin4.request(
        OFFSET_DELETE,
        0,
        {
            "group_id": "admin-group",
            "topics": [
                {"name": "admin", "partitions": [{"partition_index": 0}, {"partition_index": 9}]},
                {"name": "admin-missing", "partitions": [{"partition_index": 0}]},
            ],
        },
        "Empty group",
    )
    twin4.request(OFFSET_FETCH, 7, {"group_id": "admin-group", "topics": None}, "after delete")
    twin4.request(OFFSET_DELETE, 0, {"group_id": "admin-nobody", "topics": []}, "unknown group")
    check("InitProducerId, ListGroups, DescribeGroups, DescribeConfigs", twin4)


def test_create_and_delete_topics_error_paths(twin4):
    twin4.case = "CreateTopics/DeleteTopics error paths"
    create(twin4, "exists")

    def create_body(name: str, partitions: int = 1, replication: int = 1, **configs: str) -> dict:
        return {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": replication,
                    "assignments": [],
                    "configs": [
                        {"name": k.replace("_", "."), "value": v} for k, v in configs.items()
                    ],
                }
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        }

    for version in (2, 4, 5):
        twin4.request(CREATE_TOPICS, version, create_body("exists"), "already exists")
        twin4.request(CREATE_TOPICS, version, create_body("bad/name"), "invalid name")
        twin4.request(CREATE_TOPICS, version, create_body("zero", partitions=0), "0 partitions")
        twin4.request(
            CREATE_TOPICS,
            version,
            create_body("rf", replication=3),
            "replication factor above the broker count",
        )
        twin4.request(
            CREATE_TOPICS, version, create_body("badcfg", retention_ms="soon"), "bad config value"
        )
        twin4.request(
            CREATE_TOPICS, version, create_body("unknowncfg", no_such_key="1"), "unknown config"
        )
    for version in (1, 3, 4):
        twin4.request(
            DELETE_TOPICS,
            version,
            {"topic_names": ["never-was"], "timeout_ms": 30000},
            "unknown topic",
        )
    check("CreateTopics/DeleteTopics error paths", twin4)


# --- the APIs of kclient's AdminClient (issue 13) -------------------------------------------


ADMIN2 = "DeleteGroups, CreatePartitions, AlterConfigs, DeleteRecords"


CONFIG_KEYS = ["cleanup.policy", "retention.ms", "segment.bytes"]


def _configs(twin: Twin, topic: str, label: str) -> None:
    body = {
        "resources": [
            {"resource_type": 2, "resource_name": topic, "configuration_keys": CONFIG_KEYS}
        ]
    }

    def values(conn: Any) -> dict[str, tuple[Any, int]]:
        (res,) = conn.request(DESCRIBE_CONFIGS, body, 4).results
        return {c.name: (c.value, c.config_source) for c in res.configs}

    # Kafka applies a config change through its metadata log, a moment after answering the
    # alter (seen: the old value in the next DescribeConfigs on a busy machine)
    deadline = time.monotonic() + 10
    while values(twin.real) != values(twin.mini) and time.monotonic() < deadline:
        time.sleep(0.1)
    twin.request(DESCRIBE_CONFIGS, 4, body, label, order_by={"configs": "name"})


def _alter(twin: Twin, version: int, topic: str, label: str, *ops: tuple[str, int, Any]) -> None:
    twin.request(
        INCREMENTAL_ALTER_CONFIGS,
        version,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": topic,
                    "configs": [
                        {"name": n, "config_operation": op, "value": v} for n, op, v in ops
                    ],
                }
            ],
            "validate_only": False,
        },
        label,
    )


def test_admin_client_apis(twin4):
    twin4.case = ADMIN2
    create(twin4, "adm2", partitions=2)
    twin4.request(PRODUCE, 8, produce_body("adm2", batch(5)), "five records")
    for version, count, label in (
        (0, 3, "validate only"),
        (2, 3, "grow to 3"),
        (3, 2, "shrink"),
        (3, 3, "same count"),
    ):
        twin4.request(
            CREATE_PARTITIONS,
            version,
            {
                "topics": [{"name": "adm2", "count": count, "assignments": None}],
                "timeout_ms": 30000,
                "validate_only": version == 0,
            },
            label,
        )
    twin4.request(
        CREATE_PARTITIONS,
        3,
        {
            "topics": [{"name": "adm2-missing", "count": 4, "assignments": None}],
            "timeout_ms": 30000,
            "validate_only": False,
        },
        "missing",
    )
    _wait_leader(twin4, "adm2", 3)
    for version in (0, 1):
        _alter(twin4, version, "adm2", "set", ("retention.ms", 0, str(3_600_000 + version)))
        _alter(twin4, version, "adm2", "unknown key", ("no.such.config", 0, "1"))
        _alter(twin4, version, "adm2", "bad value", ("retention.ms", 0, "soon"))
        _alter(twin4, version, "adm2", "append to a non-list", ("retention.ms", 2, "1"))
        _alter(twin4, version, "adm2-missing", "missing topic", ("retention.ms", 0, "1"))
    _alter(twin4, 1, "adm2", "append", ("cleanup.policy", 2, "compact"))
    _configs(twin4, "adm2", "after append")
    _alter(
        twin4,
        1,
        "adm2",
        "subtract, delete",
        ("cleanup.policy", 3, "delete"),
        ("retention.ms", 1, None),
    )
    _configs(twin4, "adm2", "after subtract and delete")
    for version in (0, 2):
        twin4.request(
            ALTER_CONFIGS,
            version,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "adm2",
                        "configs": [{"name": "retention.ms", "value": "7200000"}],
                    }
                ],
                "validate_only": False,
            },
            "replace",
        )
    _configs(twin4, "adm2", "after replace")
    for version, offset, label in ((0, 2, "to 2"), (1, 99, "past the end"), (2, -1, "all")):
        twin4.request(
            DELETE_RECORDS,
            version,
            {
                "topics": [
                    {"name": "adm2", "partitions": [{"partition_index": 0, "offset": offset}]}
                ],
                "timeout_ms": 30000,
            },
            label,
        )
    twin4.request(
        DELETE_RECORDS,
        2,
        {
            "topics": [
                {"name": "adm2", "partitions": [{"partition_index": 9, "offset": 0}]},
                {"name": "adm2-missing", "partitions": [{"partition_index": 0, "offset": 0}]},
            ],
            "timeout_ms": 30000,
        },
        "unknown partition and topic",
    )
    twin4.request(
        LIST_OFFSETS,
        1,
        {
            "replica_id": -1,
            "topics": [
                {
                    "name": "adm2",
                    "partitions": [
                        {"partition_index": 0, "timestamp": -2},
                        {"partition_index": 1, "timestamp": -2},
                    ],
                }
            ],
        },
        "after DeleteRecords",
    )
    for group in ("adm2-empty", "adm2-live"):
        wait_coordinator(twin4, group)
    twin4.request(
        OFFSET_COMMIT,
        2,
        {
            "group_id": "adm2-empty",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [
                {"name": "adm2", "partitions": [{"partition_index": 1, "committed_offset": 0}]}
            ],
        },
        "adm2-empty",
    )
    for conn in (twin4.real, twin4.mini):  # a member on each side: the group is not empty
        body = {
            "group_id": "adm2-live",
            "session_timeout_ms": LONG_MS,
            "rebalance_timeout_ms": LONG_MS,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"m"}],
        }
        first = conn.request(JOIN_GROUP, body, 5)  # MEMBER_ID_REQUIRED with an id
        assert conn.request(JOIN_GROUP, dict(body, member_id=first.member_id), 5).error_code == 0
    for version in (0, 1, 2):
        twin4.request(DELETE_GROUPS, version, {"groups_names": ["adm2-live"]}, "live group")
        twin4.request(DELETE_GROUPS, version, {"groups_names": ["adm2-nobody"]}, "unknown")
    twin4.request(DELETE_GROUPS, 2, {"groups_names": ["adm2-empty"]}, "empty group")
    twin4.request(OFFSET_FETCH, 7, {"group_id": "adm2-empty", "topics": None}, "deleted")
    twin4.request(DELETE_GROUPS, 2, {"groups_names": ["adm2-empty"]}, "deleted again")
    check(ADMIN2, twin4)
