"""Differential test: the same request sequences to real Apache Kafka (4.x; 3.x for the versions
4.x refuses) and to the mini-broker, compared field by field (integration/differential.py).

Every difference found must be listed in :data:`DIFFERENT_ON_PURPOSE` with its reason; the
table in docs/differential.md is generated from the cases and that list
(``python -m integration.differential_cases docs/differential.md``) and checked for staleness.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kclient.protocol.apis import (
    ADD_PARTITIONS_TO_TXN,
    ALTER_CONFIGS,
    API_VERSIONS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_GROUPS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    DESCRIBE_GROUPS,
    END_TXN,
    FETCH,
    FIND_COORDINATOR,
    HEARTBEAT,
    INCREMENTAL_ALTER_CONFIGS,
    INIT_PRODUCER_ID,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    PRODUCE,
    SYNC_GROUP,
)
from kclient.protocol.records import build_batch, build_message_set
from tests.broker.bad_batches import BAD_BATCHES

from .differential import Twin
from .differential_cases import render
from .differential_support import (
    LONG_MS,
    T0,
    _txn_fetch,
    _wait_leader,
    batch,
    check,
    create,
    fetch_body,
    join,
    message_set,
    produce_body,
    records_for,
    wait_coordinator,
    wait_transaction_coordinator,
    warm_transactional_id,
)


def test_docs_table_is_current():
    """docs/differential.md is what differential_cases renders."""
    path = Path(__file__).resolve().parents[1] / "docs" / "differential.md"
    assert path.read_text() == render(), (
        "stale: run python -m integration.differential_cases docs/differential.md"
    )


# --- Produce ---------------------------------------------------------------------------------


def test_produce_every_version(twin4, twin3):
    for twin in (twin4, twin3):
        twin.case = "produce every version"
    # every version the mini-broker serves (v0-v12; v10-v12 are KIP-951's leader hints and
    # KIP-890's transactions v2, whose transactional side is the "transactions v2" case)
    lo, hi = twin4.mini.versions[PRODUCE.key]
    assert (lo, hi) == (0, 12), "the mini-broker's Produce range changed: compare the new ones"
    for version in range(lo, hi + 1):
        twin = twin4 if twin4.supports(PRODUCE, version) else twin3
        topic = f"produce-v{version}"
        create(twin, topic)
        for start in (0, 3):
            twin.request(
                PRODUCE,
                version,
                produce_body(topic, records_for(version, 3, start)),
                f"{topic}@{start}",
            )
        twin.request(FETCH, 4, fetch_body(topic), topic)
    check("produce every version", twin4, twin3)


def test_produce_unknown_topic_and_partition(twin4):
    twin4.case = "produce to an unknown topic or partition"
    create(twin4, "produce-known")
    twin4.request(PRODUCE, 7, produce_body("produce-nowhere", batch(1)), "unknown topic")
    twin4.request(
        PRODUCE, 7, produce_body("produce-known", batch(1), partition=5), "unknown partition"
    )
    check("produce to an unknown topic or partition", twin4)


# --- Fetch -----------------------------------------------------------------------------------


def test_fetch_cut_mid_batch_at_max_bytes(twin4):
    twin4.case = "fetch cut mid-batch at max_bytes"
    create(twin4, "cut")
    for start in (0, 10, 20):
        twin4.request(PRODUCE, 7, produce_body("cut", batch(10, start, size=50)))
    one = len(batch(10, 0, size=50))
    for version in range(4, FETCH.max_version + 1):
        for max_bytes in (one // 2, one + one // 2, 2 * one + 7):
            real, _ = twin4.request(
                FETCH, version, fetch_body("cut", 0, max_bytes), f"max {max_bytes}"
            )
            got = real["responses"][0]["partitions"][0]["records"]
            # the first batch whole even when larger (KIP-74); later ones cut at max_bytes
            assert got["bytes"] == max(one, max_bytes)
            assert got["batches"][0]["base_offset"] == 0
        twin4.request(FETCH, version, fetch_body("cut", 15, one + 10), "from mid-batch")
    check("fetch cut mid-batch at max_bytes", twin4)


def test_fetch_old_format_data_at_new_versions(twin3):
    twin3.case = "fetch v0/v1 data at new versions"
    for magic, fmt in ((0, "0.8.2"), (1, "0.10.0")):
        topic = f"old-format-v{magic}"
        create(twin3, topic, message_format_version=fmt)
        twin3.request(PRODUCE, 2, produce_body(topic, message_set(5, magic)), topic)
        for version in range(4, FETCH.max_version + 1):
            twin3.request(FETCH, version, fetch_body(topic), topic)
    check("fetch v0/v1 data at new versions", twin3)


def test_fetch_v2_data_at_old_versions(twin3):
    twin3.case = "fetch v2 data at old versions"
    create(twin3, "new-format")
    twin3.request(PRODUCE, 3, produce_body("new-format", batch(5)))
    for version in range(4):
        twin3.request(FETCH, version, fetch_body("new-format"), "from 0")
        twin3.request(FETCH, version, fetch_body("new-format", 2), "from 2")
    check("fetch v2 data at old versions", twin3)


def test_fetch_offset_out_of_range_and_unknown_topic(twin4):
    twin4.case = "offset out of range, unknown topic"
    create(twin4, "range")
    twin4.request(PRODUCE, 7, produce_body("range", batch(3)))
    for version in (4, 11, 12):
        twin4.request(FETCH, version, fetch_body("range", 1000), "past the end")
        twin4.request(FETCH, version, fetch_body("range", 3), "at the end")
        twin4.request(FETCH, version, fetch_body("fetch-nowhere"), "unknown topic")
    twin4.request(
        LIST_OFFSETS,
        5,
        {
            "replica_id": -1,
            "topics": [
                {"name": "list-nowhere", "partitions": [{"partition_index": 0, "timestamp": -1}]}
            ],
        },
        "unknown topic",
    )
    check("offset out of range, unknown topic", twin4)


# --- ListOffsets -----------------------------------------------------------------------------


def test_list_offsets_every_version(twin4, twin3):
    for twin in (twin4, twin3):
        twin.case = "ListOffsets every version"
        create(twin, "offsets")
        twin.request(PRODUCE, 3, produce_body("offsets", batch(5)))
    for version in range(LIST_OFFSETS.max_version + 1):
        twin = twin4 if twin4.supports(LIST_OFFSETS, version) else twin3
        for label, ts in (
            ("latest", -1),
            ("earliest", -2),
            ("at t1", T0 + 1000),
            ("between", T0 + 1500),
            ("after all", T0 + 99_000),
        ):
            part = {"partition_index": 0, "timestamp": ts, "max_num_offsets": 10}
            twin.request(
                LIST_OFFSETS,
                version,
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [{"name": "offsets", "partitions": [part]}],
                },
                label,
            )
        # a partition named twice (v1+: Kafka answers INVALID_REQUEST for each naming)
        dup = [{"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}] * 2
        twin.request(
            LIST_OFFSETS,
            version,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [{"name": "offsets", "partitions": dup}],
            },
            "a partition named twice",
        )
    _list_offsets_with_a_time_index(twin4)
    check("ListOffsets every version", twin4, twin3)


#: per batch, record timestamps in seconds after T0: they step back within and across batches
STEPPING = [[10, 12], [11, 11], [20], [15, 25], [25], [18, 30], [30, 29], [40]]


def _list_offsets_with_a_time_index(twin: Twin) -> None:
    """A time-index entry per batch (index.interval.bytes=1) over timestamps that step back:
    the lookups that binary-search the mini-broker's .timeindex answer as Kafka's do."""
    create(twin, "offsets-indexed", index_interval_bytes="1")
    start = 0
    for stamps in STEPPING:
        records = build_batch(
            [b"v%d" % (start + i) for i in range(len(stamps))],
            None,
            [T0 + 1000 * s for s in stamps],
        )
        twin.request(PRODUCE, 7, produce_body("offsets-indexed", records), "indexed batch")
        start += len(stamps)
    for version in range(1, LIST_OFFSETS.max_version + 1):
        if not twin.supports(LIST_OFFSETS, version):
            continue
        for seconds in (9, 11, 12, 13, 20, 21, 25, 26, 30, 31, 40, 41):
            part = {"partition_index": 0, "timestamp": T0 + 1000 * seconds}
            twin.request(
                LIST_OFFSETS,
                version,
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [{"name": "offsets-indexed", "partitions": [part]}],
                },
                f"indexed at {seconds}",
            )


# --- Metadata --------------------------------------------------------------------------------


def test_metadata_missing_topic_and_auto_create(twin4):
    twin4.case = "Metadata: missing topic, auto-create"
    for version in range(4, METADATA.max_version + 1):
        twin4.request(
            METADATA,
            version,
            {"topics": [{"name": f"missing-{version}"}], "allow_auto_topic_creation": False},
            "no auto-create",
        )
    twin4.request(
        METADATA,
        4,
        {"topics": [{"name": "auto-made"}], "allow_auto_topic_creation": True},
        "auto-create",
    )
    _wait_leader(twin4, "auto-made")
    twin4.request(
        METADATA,
        9,
        {"topics": [{"name": "auto-made"}], "allow_auto_topic_creation": False},
        "after auto-create",
    )
    check("Metadata: missing topic, auto-create", twin4)


def test_authorized_operations_and_describe_cluster(twin4):
    twin4.case = "authorized operations, DescribeCluster"
    create(twin4, "authorized")
    asked = {
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True,
        "allow_auto_topic_creation": False,
    }
    for version in range(8, METADATA.max_version + 1):
        topics = [{"name": "authorized"}, {"name": f"absent-{version}"}]
        twin4.request(METADATA, version, dict(asked, topics=topics), "asked")
        twin4.request(
            METADATA, version, {"topics": topics, "allow_auto_topic_creation": False}, "not asked"
        )
    for version in range(DESCRIBE_CLUSTER.max_version + 1):
        for include in (True, False):
            twin4.request(
                DESCRIBE_CLUSTER,
                version,
                {"include_cluster_authorized_operations": include},
                f"asked={include}",
            )
    twin4.request(DESCRIBE_CLUSTER, 1, {"endpoint_type": 2}, "controllers")
    check("authorized operations, DescribeCluster", twin4)


# --- groups ----------------------------------------------------------------------------------


def test_group_error_paths(twin4):
    twin4.case = "JoinGroup/SyncGroup/Heartbeat/LeaveGroup error paths"
    for group in ("nogroup", "g-session", "g-err"):
        wait_coordinator(twin4, group)
    for version in (0, 3, 5, 7):
        twin4.request(
            HEARTBEAT,
            min(version, 4),
            {"group_id": "nogroup", "generation_id": 1, "member_id": "nobody"},
            "unknown group",
        )
        join(twin4, version, "g-session", session=10, label="session too short")
        join(twin4, version, "", label="empty group id")
        twin4.request(
            SYNC_GROUP,
            min(version, 5),
            {"group_id": "nogroup", "generation_id": 1, "member_id": "nobody", "assignments": []},
            "unknown group",
        )
        twin4.request(
            LEAVE_GROUP,
            min(version, 4),
            {"group_id": "nogroup", "member_id": "nobody", "members": [{"member_id": "nobody"}]},
            "unknown group",
        )
    # a real member on each side, then wrong generation, unknown member, wrong protocol type
    real, mini = twin4.real, twin4.mini
    ids = {}
    for side, conn in (("real", real), ("mini", mini)):
        first = conn.request(
            JOIN_GROUP,
            {
                "group_id": "g-err",
                "session_timeout_ms": LONG_MS,
                "rebalance_timeout_ms": LONG_MS,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"m"}],
            },
            5,
        )
        ids[side] = first.member_id
    join(twin4, 5, "g-err", label="member id required again")
    for side, conn in (("real", real), ("mini", mini)):
        resp = conn.request(
            JOIN_GROUP,
            {
                "group_id": "g-err",
                "session_timeout_ms": LONG_MS,
                "rebalance_timeout_ms": LONG_MS,
                "member_id": ids[side],
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"m"}],
            },
            5,
        )
        assert resp.error_code == 0, (side, resp)
    join(twin4, 5, "g-err", member="stranger", label="unknown member")
    join(twin4, 5, "g-err", protocol_type="connect", label="inconsistent protocol type")
    for version in (0, 3, 4):
        twin4.request(
            SYNC_GROUP,
            version,
            {"group_id": "g-err", "generation_id": 99, "member_id": "stranger", "assignments": []},
            "unknown member",
        )
        twin4.request(
            HEARTBEAT,
            version,
            {"group_id": "g-err", "generation_id": 99, "member_id": "stranger"},
            "unknown member",
        )
    twin4.request(
        LEAVE_GROUP,
        3,
        {"group_id": "g-err", "members": [{"member_id": "stranger"}]},
        "unknown member",
    )
    check("JoinGroup/SyncGroup/Heartbeat/LeaveGroup error paths", twin4)


def test_offset_commit_and_fetch_every_version(twin4, twin3):
    for twin in (twin4, twin3):
        twin.case = "OffsetCommit/OffsetFetch every version"
        create(twin, "commits", partitions=2)
    for version in range(OFFSET_COMMIT.max_version + 1):
        twin = twin4 if twin4.supports(OFFSET_COMMIT, version) else twin3
        group = f"commit-v{version}"
        wait_coordinator(twin, group)
        body = {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": "commits",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 5 + version,
                            "committed_metadata": "meta",
                            "commit_timestamp": -1,
                        },
                        {"partition_index": 1, "committed_offset": 7, "committed_metadata": None},
                    ],
                },
                {
                    "name": "commits-nowhere",
                    "partitions": [{"partition_index": 0, "committed_offset": 1}],
                },
            ],
        }
        twin.request(OFFSET_COMMIT, version, body, group)
        for fetch_version in range(OFFSET_FETCH.max_version + 1):
            ftwin = twin4 if twin4.supports(OFFSET_FETCH, fetch_version) else twin3
            if ftwin is not twin:
                continue
            topics = [{"name": "commits", "partition_indexes": [0, 1, 2]}]
            twin.request(OFFSET_FETCH, fetch_version, {"group_id": group, "topics": topics}, group)
            if fetch_version >= 2:
                twin.request(
                    OFFSET_FETCH, fetch_version, {"group_id": group, "topics": None}, f"{group} all"
                )
    check("OffsetCommit/OffsetFetch every version", twin4, twin3)


# --- versions --------------------------------------------------------------------------------


def test_unsupported_versions(twin4):
    twin4.case = "a request at an unsupported version"
    twin4.raw(API_VERSIONS.key, 99, "ApiVersions v99", flexible=True)
    twin4.raw(METADATA.key, 99, "Metadata v99", flexible=True)
    body = b"".join(PRODUCE.encode_request(2, produce_body("produce-v2-raw", message_set(1, 1))))
    twin4.raw(PRODUCE.key, 2, "Produce v2 (4.x dropped it)", body)
    check("a request at an unsupported version", twin4)


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


def test_produce_codecs_acks_and_bad_records(twin4, twin3):
    twin4.case = twin3.case = "produce: codecs, acks, corrupt records"
    create(twin4, "codecs")
    for codec in range(5):  # none, gzip, snappy, lz4, zstd
        records = build_batch(
            [b"v%d" % i for i in range(5)], None, [T0 + i for i in range(5)], codec=codec
        )
        twin4.request(PRODUCE, 8, produce_body("codecs", records), f"codec {codec}")
    twin4.request(FETCH, 11, fetch_body("codecs"), "all codecs")
    for acks in (-1, 2):
        twin4.request(PRODUCE, 7, produce_body("codecs", batch(1), acks=acks), f"acks {acks}")
    corrupt = bytearray(batch(2))
    corrupt[-1] ^= 0xFF  # payload changed under the CRC
    twin4.request(PRODUCE, 7, produce_body("codecs", bytes(corrupt)), "bad CRC")
    twin4.request(FETCH, 11, fetch_body("codecs", 5), "after the bad ones")
    create(twin3, "old-codecs", message_format_version="0.10.0")
    for codec in range(4):  # v1 message sets: none, gzip, snappy, lz4
        records = build_message_set(
            [b"v%d" % i for i in range(3)], None, [T0 + i for i in range(3)], magic=1, codec=codec
        )
        twin3.request(PRODUCE, 2, produce_body("old-codecs", records), f"v1 codec {codec}")
    twin3.request(FETCH, 4, fetch_body("old-codecs"), "v1 codecs")
    twin3.request(FETCH, 1, fetch_body("old-codecs"), "v1 codecs at v1")
    check("produce: codecs, acks, corrupt records", twin4, twin3)


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


def test_produce_invalid_batches(twin4):
    """Batches with a right CRC but wrong insides (Kafka's LogValidator): refused alike, at
    Produce v7 (one error per partition) and v8+ (with per-record errors); nothing stored."""
    twin4.case = "produce: invalid batches with a right CRC"
    create(twin4, "invalid")
    for label, make in BAD_BATCHES.items():
        for version in (7, 9):
            twin4.request(PRODUCE, version, produce_body("invalid", make()), f"{label} v{version}")
    twin4.request(PRODUCE, 9, produce_body("invalid", batch(2)), "a good one after them")
    twin4.request(FETCH, 11, fetch_body("invalid"), "only the good one is stored")
    check("produce: invalid batches with a right CRC", twin4)


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


# --- Idempotent produce ----------------------------------------------------------------------


def test_idempotent_produce_sequences(twin4):
    twin = twin4
    twin.case = "idempotent produce: duplicate and out-of-order sequences"
    create(twin, "idem")
    wait_transaction_coordinator(twin)
    init = {"transactional_id": None, "transaction_timeout_ms": 60000}
    twin.request(INIT_PRODUCER_ID, 4, init, "idempotent")
    pid = {side: twin.last[side].producer_id for side in ("real", "mini")}

    def produce(seq: int, label: str, epoch: int = 0, n: int = 3, unknown: bool = False) -> None:
        records = {
            s: build_batch(
                [b"i%d" % (seq + i) for i in range(n)],
                None,
                [T0 + i for i in range(n)],
                producer_id=pid[s] + (1000 if unknown else 0),
                producer_epoch=epoch,
                base_sequence=seq,
            )
            for s in pid
        }
        twin.request(PRODUCE, 7, lambda s: produce_body("idem", records[s], acks=-1), label)

    produce(0, "first")
    produce(0, "duplicate")
    produce(6, "gap")
    produce(3, "next")
    for i in range(5):
        produce(6 + 3 * i, f"more {i}")
    produce(0, "first again, older than the last five")
    produce(7, "unknown producer id", unknown=True)
    twin.request(
        INIT_PRODUCER_ID,
        4,
        lambda s: dict(init, producer_id=pid[s], producer_epoch=0),
        "epoch bump",
    )
    produce(21, "old epoch")
    produce(3, "new epoch, not at 0", epoch=1)
    produce(0, "new epoch at 0", epoch=1)
    twin.request(FETCH, 11, fetch_body("idem"), "idem")
    check("idempotent produce: duplicate and out-of-order sequences", twin)


# --- Transactions ----------------------------------------------------------------------------


def test_transactions(twin4):
    twin = twin4
    twin.case = "transactions"
    tid = "diff-tx"
    create(twin, "txn", partitions=2)
    warm_transactional_id(twin, tid)
    twin.request(FIND_COORDINATOR, 3, {"key": tid, "key_type": 1}, "transactional id")
    init = {"transactional_id": tid, "transaction_timeout_ms": 60000}
    twin.request(INIT_PRODUCER_ID, 4, dict(init, transaction_timeout_ms=900001), "timeout")
    twin.request(INIT_PRODUCER_ID, 4, init, "new id")
    pid = {side: twin.last[side].producer_id for side in ("real", "mini")}
    twin.request(INIT_PRODUCER_ID, 4, init, "epoch bump")
    for version in (3, 4):
        twin.request(
            INIT_PRODUCER_ID,
            version,
            lambda s: dict(init, producer_id=pid[s], producer_epoch=5),
            "stale epoch",
        )

    def add(epoch: int, topics: list, version: int = 3, label: str = "") -> None:
        twin.request(
            ADD_PARTITIONS_TO_TXN,
            version,
            lambda s: {
                "v3_and_below_transactional_id": tid,
                "v3_and_below_producer_id": pid[s],
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": topics,
            },
            label,
        )

    def produce(partition: int, start: int, seq: int, label: str) -> None:
        records = {
            s: build_batch(
                [b"t%d" % (start + i) for i in range(2)],
                None,
                [T0 + i for i in range(2)],
                producer_id=pid[s],
                producer_epoch=1,
                base_sequence=seq,
                is_transactional=True,
            )
            for s in pid
        }
        twin.request(
            PRODUCE,
            7,
            lambda s: dict(
                produce_body("txn", records[s], acks=-1, partition=partition), transactional_id=tid
            ),
            label,
        )

    def end(commit: bool, label: str, version: int = 3, epoch: int = 1) -> None:
        body = {
            s: {
                "transactional_id": tid,
                "producer_id": pid[s],
                "producer_epoch": epoch,
                "committed": commit,
            }
            for s in pid
        }
        twin.request(END_TXN, version, body.__getitem__, label)
        # Kafka answers once PrepareCommit/PrepareAbort is written and writes the markers
        # afterwards (a retry meanwhile: CONCURRENT_TRANSACTIONS); the mini-broker answers
        # once they are written. Wait for Kafka's to be written too.
        deadline = time.monotonic() + 30
        while twin.real.request(END_TXN, body["real"], version).error_code == 51:
            assert time.monotonic() < deadline
            time.sleep(0.05)

    both = [{"name": "txn", "partitions": [0, 1]}]
    end(True, "no transaction")
    for version in (1, 2, 3):
        add(0, both, version, "fenced epoch")
    add(
        1,
        [{"name": "txn", "partitions": [0]}, {"name": "txn-missing", "partitions": [0]}],
        label="unknown topic",
    )
    add(1, [{"name": "txn", "partitions": [0]}], label="first partition")
    produce(1, 0, 0, "partition not in the transaction")
    produce(0, 0, 0, "first")
    twin.request(PRODUCE, 7, produce_body("txn", batch(1, 100)), "plain, after the txn start")
    _txn_fetch(twin, "open")
    end(False, "abort")
    end(False, "abort retried")
    end(True, "commit after abort")
    end(False, "fenced abort", epoch=0, version=1)
    _txn_fetch(twin, "aborted")
    add(1, both, label="both partitions")
    produce(0, 2, 2, "second")
    produce(1, 4, 0, "other partition")
    _txn_fetch(twin, "open again")
    end(True, "commit")
    end(True, "commit retried", version=2)
    _txn_fetch(twin, "committed")
    check("transactions", twin)
