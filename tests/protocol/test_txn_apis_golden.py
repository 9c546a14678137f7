"""Golden wire-format tests for the transaction APIs (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
WriteTxnMarkers, TxnOffsetCommit): bytes built by hand from Kafka's JSON message definitions,
independently of the schema DSL, at a non-flexible and a flexible version each."""

from __future__ import annotations

import pytest

from kclient.protocol.apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    APIS,
    END_TXN,
    TXN_OFFSET_COMMIT,
    WRITE_TXN_MARKERS,
)
from tests.protocol.test_group_apis_golden import (
    TAG,
    _decode,
    _encode,
    _fields,
    _plain,
    arr,
    boolean,
    carr,
    cs,
    i8,
    i16,
    i32,
    i64,
    project,
    s,
)

APT_REQ = {
    "v3_and_below_transactional_id": "tx",
    "v3_and_below_producer_id": 1000,
    "v3_and_below_producer_epoch": 2,
    "v3_and_below_topics": [{"name": "t", "partitions": [0, 3]}],
}
APT_REQ4 = {
    "transactions": [
        {
            "transactional_id": "tx",
            "producer_id": 1000,
            "producer_epoch": 2,
            "verify_only": True,
            "topics": [{"name": "t", "partitions": [1]}],
        }
    ]
}
APT_RESP = {
    "throttle_time_ms": 0,
    "results_by_topic_v3_and_below": [
        {
            "name": "t",
            "results_by_partition": [
                {"partition_index": 0, "partition_error_code": 0},
                {"partition_index": 3, "partition_error_code": 51},
            ],
        }
    ],
}
AOT_REQ = {"transactional_id": "tx", "producer_id": 7, "producer_epoch": 1, "group_id": "g"}
AOT_RESP = {"throttle_time_ms": 4, "error_code": 90}
ET_REQ = {"transactional_id": "tx", "producer_id": 7, "producer_epoch": 1, "committed": True}
ET_RESP5 = {"throttle_time_ms": 0, "error_code": 0, "producer_id": 7, "producer_epoch": 2}
WTM_REQ = {
    "markers": [
        {
            "producer_id": 7,
            "producer_epoch": 1,
            "transaction_result": False,
            "topics": [{"name": "t", "partition_indexes": [2]}],
            "coordinator_epoch": 9,
            "transaction_version": 2,
        }
    ]
}
TOC_REQ = {
    "transactional_id": "tx",
    "group_id": "g",
    "producer_id": 7,
    "producer_epoch": 1,
    "generation_id": 3,
    "member_id": "m",
    "group_instance_id": None,
    "topics": [
        {
            "name": "t",
            "partitions": [
                {
                    "partition_index": 0,
                    "committed_offset": 42,
                    "committed_leader_epoch": 5,
                    "committed_metadata": None,
                }
            ],
        }
    ],
}
TOC_RESP = {
    "throttle_time_ms": 0,
    "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 47}]}],
}

GOLDEN = [
    (
        ADD_PARTITIONS_TO_TXN,
        "request",
        0,
        APT_REQ,
        s("tx") + i64(1000) + i16(2) + arr(s("t") + arr(i32(0), i32(3))),
    ),
    (
        ADD_PARTITIONS_TO_TXN,
        "request",
        3,
        APT_REQ,
        cs("tx") + i64(1000) + i16(2) + carr(cs("t") + carr(i32(0), i32(3)) + TAG) + TAG,
    ),
    (
        ADD_PARTITIONS_TO_TXN,
        "request",
        4,
        APT_REQ4,
        carr(
            cs("tx") + i64(1000) + i16(2) + boolean(True) + carr(cs("t") + carr(i32(1)) + TAG) + TAG
        )
        + TAG,
    ),
    (
        ADD_PARTITIONS_TO_TXN,
        "response",
        0,
        APT_RESP,
        i32(0) + arr(s("t") + arr(i32(0) + i16(0), i32(3) + i16(51))),
    ),
    (ADD_OFFSETS_TO_TXN, "request", 0, AOT_REQ, s("tx") + i64(7) + i16(1) + s("g")),
    (ADD_OFFSETS_TO_TXN, "request", 3, AOT_REQ, cs("tx") + i64(7) + i16(1) + cs("g") + TAG),
    (ADD_OFFSETS_TO_TXN, "response", 1, AOT_RESP, i32(4) + i16(90)),
    (END_TXN, "request", 0, ET_REQ, s("tx") + i64(7) + i16(1) + boolean(True)),
    (END_TXN, "request", 3, ET_REQ, cs("tx") + i64(7) + i16(1) + boolean(True) + TAG),
    (END_TXN, "response", 5, ET_RESP5, i32(0) + i16(0) + i64(7) + i16(2) + TAG),
    (
        WRITE_TXN_MARKERS,
        "request",
        1,
        WTM_REQ,
        carr(i64(7) + i16(1) + boolean(False) + carr(cs("t") + carr(i32(2)) + TAG) + i32(9) + TAG)
        + TAG,
    ),
    (
        WRITE_TXN_MARKERS,
        "request",
        2,
        WTM_REQ,
        carr(
            i64(7)
            + i16(1)
            + boolean(False)
            + carr(cs("t") + carr(i32(2)) + TAG)
            + i32(9)
            + i8(2)
            + TAG
        )
        + TAG,
    ),
    (
        TXN_OFFSET_COMMIT,
        "request",
        0,
        TOC_REQ,
        s("tx") + s("g") + i64(7) + i16(1) + arr(s("t") + arr(i32(0) + i64(42) + s(None))),
    ),
    (
        TXN_OFFSET_COMMIT,
        "request",
        3,
        TOC_REQ,
        cs("tx")
        + cs("g")
        + i64(7)
        + i16(1)
        + i32(3)
        + cs("m")
        + cs(None)
        + carr(cs("t") + carr(i32(0) + i64(42) + i32(5) + cs(None) + TAG) + TAG)
        + TAG,
    ),
    (TXN_OFFSET_COMMIT, "response", 2, TOC_RESP, i32(0) + arr(s("t") + arr(i32(0) + i16(47)))),
]


def _ids(case):
    return f"{case[0].name}-{case[1]}-v{case[2]}"


@pytest.mark.parametrize("case", GOLDEN, ids=[_ids(c) for c in GOLDEN])
def test_golden_encode(case):
    api, kind, version, value, expected = case
    assert _encode(api, kind, version, value) == expected


@pytest.mark.parametrize("case", GOLDEN, ids=[_ids(c) for c in GOLDEN])
def test_golden_decode(case):
    api, kind, version, value, expected = case
    fields = _fields(api, kind)
    decoded = _plain(_decode(api, kind, version, expected))
    assert project(fields, version, decoded) == project(fields, version, value)


def test_registered_by_key_with_kafkas_version_ranges():
    ranges = {k: (APIS[k].min_version, APIS[k].max_version) for k in (24, 25, 26, 27, 28)}
    assert ranges == {24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 5)}
