"""Differential test: the same request sequences to real Apache Kafka (4.x; 3.x for the versions
4.x refuses) and to the mini-broker, compared field by field (integration/differential.py).

Every difference found must be listed in :data:`DIFFERENT_ON_PURPOSE` with its reason; the
table in docs/differential.md is generated from the cases and that list
(``python -m integration.differential_cases docs/differential.md``) and checked for staleness.
"""

from __future__ import annotations

from pathlib import Path

from kclient.protocol.apis import (
    API_VERSIONS,
    DESCRIBE_CLUSTER,
    FETCH,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
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
