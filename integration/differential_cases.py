"""The differential test's cases and every difference between real Kafka and the mini-broker
that is intended, with the reason (docs/differential.md is generated from this)."""

from __future__ import annotations

#: Case name -> what it sends.
CASES: dict[str, str] = {
    "produce every version": "Produce v0-v12 (v0-v2 to Kafka 3.x), two requests per topic, then "
    "a Fetch of what was stored",
    "produce to an unknown topic or partition": "Produce v7 to a topic and a partition that do "
    "not exist",
    "fetch cut mid-batch at max_bytes": "three 10-record batches; Fetch v4-v12 with max_bytes "
    "of half, one and a half and two batches, and from the "
    "middle of a batch",
    "fetch v0/v1 data at new versions": "topics in message format v0 and v1 (Kafka 3.x), "
    "Fetch v4-v12",
    "fetch v2 data at old versions": "a v2 batch fetched at v0-v3 (down-conversion)",
    "fetch sessions": "Fetch v7 and v12 in a fetch session (KIP-227): full, incremental "
    "with a moved partition, a forgotten one, new data on an unlisted one; a "
    "wrong epoch, an unknown session, closing with epoch -1 and using it "
    "after, a session whose last partition is forgotten",
    "offset out of range, unknown topic": "Fetch past and at the end, Fetch and ListOffsets of "
    "an unknown topic",
    "ListOffsets every version": "ListOffsets v0-v5 (v0 to Kafka 3.x): latest, earliest, a "
    "partition named twice, by "
    "timestamp (exact, between, after all records); by timestamp "
    "(v1+) over 8 batches whose timestamps step back, with "
    "index.interval.bytes=1 (a time-index entry per batch)",
    "Metadata: missing topic, auto-create": "Metadata v4-v9 for a missing topic without "
    "auto-create; v4 with auto-create, then v9",
    "authorized operations, DescribeCluster": "Metadata v8-v12 for a topic and a missing one, "
    "with and without authorized operations asked for; DescribeCluster v0-v1 with and "
    "without them, and v1 for the controllers",
    "JoinGroup/SyncGroup/Heartbeat/LeaveGroup error paths": "unknown group, session timeout too "
    "short, empty group id, member id required, unknown member, inconsistent protocol type, "
    "wrong generation",
    "OffsetCommit/OffsetFetch every version": "OffsetCommit v0-v8 (v0-v1 to Kafka 3.x) with an "
    "unknown topic in it; OffsetFetch v0-v7 of named and (v2+) all partitions",
    "a request at an unsupported version": "ApiVersions v99, Metadata v99, Produce v2 to Kafka 4.x",
    "produce: codecs, acks, corrupt records": "v2 batches in every codec, acks -1 and 2, a "
    "batch with a bad CRC (Kafka 4.x); v1 message sets in every codec (Kafka 3.x), fetched "
    "back at v4 and v1",
    "produce: invalid batches with a right CRC": "v2 batches whose CRC is right but whose "
    "insides are not (tests/broker/bad_batches.py: record count or lastOffsetDelta beyond "
    "the records, negative or 2^31-1 lastOffsetDelta, garbage gzip/snappy/lz4/zstd "
    "payloads, a batch length shorter than its records, bytes after the last record, "
    "offset deltas out of order, a control batch from a client) at Produce v7 and v9, then "
    "a good batch and a Fetch: nothing of the bad ones stored",
    "CreateTopics/DeleteTopics error paths": "CreateTopics v2, v4, v5: existing topic, invalid "
    "name, 0 partitions, replication factor above the broker count, bad and unknown "
    "config; DeleteTopics v1, v3, v4 of an unknown topic",
    "InitProducerId, ListGroups, DescribeGroups, DescribeConfigs": "the APIs added for Kafka's "
    "tools: producer ids (v0, v2, v4), groups listed (v1-v5, state filter) and described "
    "(v0-v6, a known and an unknown group), a topic's configs by key (v1-v4) and a missing "
    "topic's; OffsetDelete of an Empty group (known and unknown partitions) and of an "
    "unknown group",
    "DeleteGroups, CreatePartitions, AlterConfigs, DeleteRecords": "the APIs of kclient's "
    "AdminClient: CreatePartitions v0, v2, v3 (validate only, grow, shrink, same count, "
    "missing topic); IncrementalAlterConfigs v0-v1 (set, unknown key, bad value, append to "
    "a non-list, missing topic, append and subtract on cleanup.policy, delete) and "
    "AlterConfigs v0, v2, each checked by DescribeConfigs; DeleteRecords v0-v2 (to an "
    "offset, past the end, to the high watermark, unknown partition and topic) and "
    "ListOffsets earliest after it; DeleteGroups v0-v2 of a group with a member, an unknown "
    "one, an Empty one (then OffsetFetch and DeleteGroups again)",
    "idempotent produce: duplicate and out-of-order sequences": "InitProducerId v4 without a "
    "transactional id; idempotent Produce v7 (acks -1): first batch, the same batch again "
    "(duplicate), a sequence gap, the next batch, five more and then the first again "
    "(older than the last five), an unknown producer id at sequence 7; InitProducerId "
    "epoch bump, then the old epoch, the new epoch at sequence 3 and at 0; Fetch v11",
    "transactions": "FindCoordinator for a transactional id; InitProducerId v4 (new id, epoch "
    "bump, a timeout above transaction.max.timeout.ms, a stale epoch at v3 and v4); "
    "AddPartitionsToTxn v1-v3 (fenced epoch, unknown topic, two partitions); transactional "
    "Produce v7 to a partition in and one not in the transaction; Fetch v4 and v11 "
    "read_committed and read_uncommitted while open, after an abort and after a commit "
    "(last stable offset, aborted transactions, markers) and ListOffsets v5 latest and "
    "earliest at both levels; EndTxn v1-v3 (abort, commit, "
    "retried, the other outcome, no transaction)",
    "transactions v2": "both brokers finalizing transaction.version 2 (KIP-890): "
    "InitProducerId v5; Produce v11 to a partition not in the transaction, Produce v12 "
    "adding two partitions, v11 to one in it; EndTxn v5 commit (the epoch bumped in its "
    "answer), retried, then abort of it; a zombie Produce v12 at the old epoch, EndTxn v5 "
    "at an unknown epoch and with nothing open; data and TxnOffsetCommit v5 aborted, an "
    "abort with nothing open, offsets alone committed; read_committed and "
    "read_uncommitted Fetch v4 and v11, ListOffsets v5 and OffsetFetch v7 (require_stable) "
    "between the steps (integration/test_differential_txn_v2.py)",
    "OffsetCommit while the group rebalances": "a classic group (JoinGroup v5, SyncGroup v3) "
    "of one member, then a second joining: OffsetCommit v7 of the current, an old and the "
    "next generation, an unknown member and an unknown instance id while the group is "
    "Stable, PreparingRebalance (new generation not formed) and CompletingRebalance, then "
    "Stable again; OffsetFetch of what was stored; both leave, then ListGroups v5 and "
    "DescribeGroups v5 of the Empty group (integration/test_differential_group_commits.py)",
    "ConsumerGroupHeartbeat sequences": "a KIP-848 group driven by ConsumerGroupHeartbeat v1 "
    "(client-made member ids): a join and its assignment, a second member whose partitions "
    "come after the first revoked them, fenced (future and old) epochs, an unknown member "
    "and group, invalid joins (no subscription, owned partitions, unknown assignor, bad "
    "regex, epoch -3, -2 without instance id), OffsetCommit v9 with the current and a "
    "stale epoch and a stranger, OffsetFetch v9 as the member (its epoch, another, a "
    "stranger, no member), ListGroups v5 by type, DescribeGroups v5-v6 and "
    "ConsumerGroupDescribe v1 of it, classic JoinGroup v7s to it (another protocol type; a "
    "consumer-protocol one without member id: MEMBER_ID_REQUIRED, as a classic member of a "
    "consumer group is admitted), a member leaving, a static member leaving for now "
    "(-2), its instance rejoining under a new member id with its partitions and the old "
    "id fenced, the rest leaving (integration/test_differential_kip848.py)",
}

#: Case -> {difference path pattern (``*`` matches anything): why it is intended}.
# fmt: off
DIFFERENT_ON_PURPOSE: dict[str, dict[str, str]] = {
    "fetch v2 data at old versions": {
        "Fetch v* from 2: responses[0].partitions[0].records.bytes":
            "Kafka's lazy down-conversion sends as many bytes as the stored v2 batch takes and "
            "pads what the converted messages leave free with a truncated entry, which clients "
            "skip; the mini-broker sends the converted messages only. The messages are the "
            "same.",
    },
    "Metadata: missing topic, auto-create": {
        "Metadata v4 auto-create: topics[0].*":
            "Kafka 4 forwards auto-creation to its controller and answers the first request "
            "UNKNOWN_TOPIC_OR_PARTITION with no partitions; the mini-broker creates the topic "
            "synchronously and describes it at once. The next request gets the same answer "
            "from both.",
    },
    "OffsetCommit/OffsetFetch every version": {
        "OffsetFetch v0 commit-v*":
            "Kafka 3.x (ZooKeeper mode) keeps v0 commits in ZooKeeper (no metadata; a partition "
            "without a commit answers UNKNOWN_TOPIC_OR_PARTITION) apart from v1+ commits in "
            "__consumer_offsets; the mini-broker has one offset store for every version, as "
            "0.8.2+ clients committing to Kafka expect.",
    },
    "produce: codecs, acks, corrupt records": {
        "Fetch v1 v1 codecs at v1: responses[0].partitions[0].records.bytes":
            "down-conversion (v1 to v0 for Fetch v1): Kafka pads to the stored size, as above",
        "Fetch v1 v1 codecs at v1: responses[0].partitions[0].records.batches[4].size":
            "the snappy wrapper re-compressed by down-conversion: snappy-java and kclient's "
            "snappy frame the same messages in a different number of bytes (112 vs 115); "
            "the decoded messages are the same",
    },
    "produce: invalid batches with a right CRC": {
        "Produce v* * garbage v*: responses[0].partition_responses[0].error_code":
            "a compressed payload that does not decompress: Kafka 4.4's decompression "
            "exception reaches the response unmapped, as UNKNOWN_SERVER_ERROR (-1); the "
            "mini-broker answers CORRUPT_MESSAGE, which says what happened and which clients "
            "treat as a record error rather than a broker fault",
        "Produce v9 *: responses[0].partition_responses[0].error_message":
            "Kafka answers these refusals with no error message; the mini-broker names what is "
            "wrong (\"invalid record batch: negative lastOffsetDelta -45\"), so that a user "
            "sees the cause (same error code)",
    },
    "InitProducerId, ListGroups, DescribeGroups, DescribeConfigs": {
        "DescribeConfigs v* topic: results[0].configs[3].config_source":
            "min.insync.replicas: Kafka 4 in KRaft mode sets it as a cluster-wide dynamic "
            "default (DYNAMIC_DEFAULT_BROKER_CONFIG, for eligible leader replicas); the "
            "mini-broker has no dynamic configs and reports Kafka's default. Same value (1).",
    },
    "a request at an unsupported version": {
        "key 0 v2 Produce v2 (4.x dropped it)":
            "Kafka 4 removed Produce v0-v2 (KIP-896) and closes the connection (though its "
            "ApiVersions still lists them, for librdkafka); the mini-broker serves the "
            "0.8-era versions on purpose.",
    },
}
# fmt: on

#: Mini-broker bugs that real Kafka exposed, fixed: (case or peer, bug, commit).
FIXED: list[tuple[str, str, str]] = [
    (
        "Kafka's Java producer",
        "no InitProducerId: the Java producer's defaults "
        "(idempotence) failed with UnsupportedVersionException",
        "12a4e03",
    ),
    ("kafka-topics --describe", "no DescribeConfigs", "12a4e03"),
    (
        "kafka-consumer-groups",
        "no ListGroups / DescribeGroups; members had no client host",
        "12a4e03",
    ),
    (
        "produce every version",
        "v2 batches kept partitionLeaderEpoch -1 (Kafka stamps the leader epoch)",
        "11d5ef6",
    ),
    (
        "produce to an unknown topic or partition",
        "Produce auto-created an unknown topic (Kafka answers UNKNOWN_TOPIC_OR_PARTITION)",
        "11d5ef6",
    ),
    (
        "fetch v2 data at old versions",
        "down-conversion returned the records before the fetch offset",
        "a314433",
    ),
    (
        "offset out of range, unknown topic",
        "errored partitions carried the log's high "
        "watermark, last stable and log start offsets (Kafka: -1) and a null aborted-transactions "
        "list where Kafka sends an empty one",
        "a314433",
    ),
    (
        "ListOffsets every version",
        "v4+ with no offset found answered the leader epoch (Kafka: -1)",
        "b992fc8",
    ),
    (
        "OffsetCommit/OffsetFetch every version",
        "response order: Kafka lists partitions refused as unknown first, one entry per topic",
        "2d31908",
    ),
    (
        "InitProducerId, ListGroups, DescribeGroups, DescribeConfigs",
        "DescribeConfigs answered a null error message for a described resource (Kafka: empty)",
        "f48f7f0",
    ),
    (
        "produce: invalid batches with a right CRC",
        "Produce stored any v2 batch whose CRC "
        "matched: record counts and lastOffsetDelta beyond the records (a negative one moved the "
        "log end backwards, 2^31-1 moved it by 2^31), garbage compressed payloads, cut records, "
        "control batches; now every record is decoded as Kafka's LogValidator does and such a "
        "batch is refused with INVALID_RECORD (nothing of the partition's request stored)",
        "49cfbd2",
    ),
    (
        "JoinGroup/SyncGroup/Heartbeat/LeaveGroup error paths",
        "SyncGroup v5+ without protocol "
        "type/name was checked against the group (Kafka: INCONSISTENT_GROUP_PROTOCOL first)",
        "aef3a41",
    ),
    (
        "idempotent produce: duplicate and out-of-order sequences",
        "a duplicate batch was "
        "answered log_append_time_ms -1 (Kafka: the batch's max timestamp) and "
        "OUT_OF_ORDER_SEQUENCE_NUMBER log_start_offset -1 (Kafka: the log's)",
        "b0ee272",
    ),
    (
        "transactions",
        "FindCoordinator answered a found coordinator with a null error message "
        '(Kafka: "NONE"); AddPartitionsToTxn listed an unknown topic in request order (Kafka: '
        "the unknown partitions first)",
        "8fbd1de",
    ),
    (
        "OffsetCommit while the group rebalances",
        "CompletingRebalance answered "
        "REBALANCE_IN_PROGRESS before checking member and generation (Kafka: ILLEGAL_GENERATION "
        "for an old generation, UNKNOWN_MEMBER_ID for a stranger); an unknown instance id was "
        "not refused (Kafka: UNKNOWN_MEMBER_ID)",
        "7dc85bb",
    ),
    (
        "OffsetCommit while the group rebalances",
        "ListGroups and DescribeGroups gave an Empty "
        "group (its members gone) an empty protocol type (Kafka keeps the group's)",
        "04cb1b7",
    ),
]

DOC_HEADER = """# Differential test: real Apache Kafka against the mini-broker

`integration/test_differential*.py` send the same request sequences, through kclient's
`BrokerConnection` at pinned versions, to a real Kafka 4.x (KRaft) — and to Kafka 3.x in
ZooKeeper mode for the versions 4.x refuses and for message formats v0/v1 — and to a mini-broker
beside each, then compares the responses field by field. Only ids (node, member, producer,
cluster, topic, session), host and port, throttle times and the text of error messages
(present or absent) are normalised; record sets are compared decoded, batch by batch and record
by record (every field but the CRC), and by their size. A difference not listed below fails the
test; a listed one that no longer occurs fails it too.

Generated by `python -m integration.differential_cases docs/differential.md` from
`integration/differential_cases.py`; a test fails when this file is stale.
"""


def render() -> str:
    """docs/differential.md: one row per case, then the fixed bugs."""
    lines = [DOC_HEADER, "| case | requests | result |", "|---|---|---|"]
    fixed_by_case: dict[str, list[str]] = {}
    for case, _, commit in FIXED:
        fixed_by_case.setdefault(case, []).append(commit)
    for case, what in CASES.items():
        if case in DIFFERENT_ON_PURPOSE:
            result = "different on purpose: " + "; ".join(
                f"`{path}`: {why}" for path, why in DIFFERENT_ON_PURPOSE[case].items()
            )
            if case in fixed_by_case:
                result = (
                    f"fixed ({', '.join(sorted(set(fixed_by_case[case])))}), otherwise " + result
                )
        elif case in fixed_by_case:
            result = f"fixed ({', '.join(sorted(set(fixed_by_case[case])))}), now the same"
        else:
            result = "same"
        lines.append(f"| {case} | {what} | {result} |")
    lines += [
        "",
        "## Mini-broker bugs real Kafka exposed (all fixed)",
        "",
        "| found by | bug | commit |",
        "|---|---|---|",
    ]
    lines += [f"| {case} | {bug} | {commit} |" for case, bug, commit in FIXED]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys
    from pathlib import Path

    Path(sys.argv[1]).write_text(render())
