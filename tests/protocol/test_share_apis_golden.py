"""Golden wire-format tests for KIP-932's share-group APIs (keys 76-79, 90-92).

Expected bytes are built by hand following Kafka 4.4's JSON message definitions (all flexible
from v0: compact strings and arrays, a tagged-field section after every struct, a nullable
struct as an int8 marker, -1 null, 1 present), independently of the schema DSL.
"""

from __future__ import annotations

import pytest

from kclient.protocol.apis import (
    ALTER_SHARE_GROUP_OFFSETS,
    APIS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    SHARE_GROUP_DESCRIBE,
    SHARE_GROUP_HEARTBEAT,
)
from kclient.protocol.errors import ProtocolDecodeError
from tests.protocol.test_group_apis_golden import TAG, boolean, carr, cby, cs, i8, i16, i32, i64

TOPIC = bytes(range(16))
OTHER = bytes(range(16, 32))


def test_keys_and_versions_are_kafka_44s():
    got = {
        APIS[k].name: (APIS[k].min_version, APIS[k].max_version)
        for k in (76, 77, 78, 79, 90, 91, 92)
    }
    assert got == {
        "ShareGroupHeartbeat": (1, 1),
        "ShareGroupDescribe": (1, 1),
        "ShareFetch": (1, 2),
        "ShareAcknowledge": (1, 2),
        "DescribeShareGroupOffsets": (0, 1),
        "AlterShareGroupOffsets": (0, 0),
        "DeleteShareGroupOffsets": (0, 0),
    }


def test_heartbeat_join_request():
    body = {
        "group_id": "g",
        "member_id": "m-1",
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": ["jobs"],
    }
    want = cs("g") + cs("m-1") + i32(0) + cs(None) + carr(cs("jobs")) + TAG
    assert b"".join(SHARE_GROUP_HEARTBEAT.encode_request(1, body)) == want
    assert SHARE_GROUP_HEARTBEAT.decode_request(1, want, strict=True).to_dict() == body


def test_heartbeat_response_with_and_without_assignment():
    head = i32(0) + i16(0) + cs(None) + cs("m-1") + i32(3) + i32(5000)
    assignment = i8(1) + carr(TOPIC + carr(i32(0), i32(2)) + TAG) + TAG
    resp = SHARE_GROUP_HEARTBEAT.decode_response(1, head + assignment + TAG, strict=True)
    assert resp.member_epoch == 3 and resp.heartbeat_interval_ms == 5000
    assert resp.assignment.to_dict() == {
        "topic_partitions": [{"topic_id": TOPIC, "partitions": [0, 2]}]
    }
    unchanged = SHARE_GROUP_HEARTBEAT.decode_response(1, head + i8(-1) + TAG, strict=True)
    assert unchanged.assignment is None
    assert b"".join(SHARE_GROUP_HEARTBEAT.encode_response(1, unchanged)) == head + i8(-1) + TAG
    with pytest.raises(ProtocolDecodeError, match="invalid marker 2"):
        SHARE_GROUP_HEARTBEAT.decode_response(1, head + i8(2) + TAG)


def test_share_fetch_request_v1_and_v2():
    body = {
        "group_id": "g",
        "member_id": "m-1",
        "share_session_epoch": 1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 500,
        "batch_size": 500,
        "topics": [
            {
                "topic_id": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "acknowledgement_batches": [
                            {"first_offset": 10, "last_offset": 12, "acknowledge_types": [1, 2, 3]}
                        ],
                    }
                ],
            }
        ],
        "forgotten_topics_data": [{"topic_id": OTHER, "partitions": [4]}],
    }
    ack = carr(i64(10) + i64(12) + carr(i8(1), i8(2), i8(3)) + TAG)
    topics = carr(TOPIC + carr(i32(0) + ack + TAG) + TAG)
    forgotten = carr(OTHER + carr(i32(4)) + TAG)
    head = cs("g") + cs("m-1") + i32(1) + i32(500) + i32(1) + i32(1 << 20) + i32(500) + i32(500)
    assert b"".join(SHARE_FETCH.encode_request(1, body)) == head + topics + forgotten + TAG
    v2 = head + i8(1) + boolean(False) + topics + forgotten + TAG
    assert b"".join(SHARE_FETCH.encode_request(2, dict(body, share_acquire_mode=1))) == v2


def test_share_fetch_response_acquired_records():
    part = (
        i32(0)
        + i16(0)
        + cs(None)
        + i16(0)
        + cs(None)
        + i32(1)
        + i32(7)
        + TAG
        + cby(b"RECS")
        + carr(i64(10) + i64(19) + i16(2) + TAG)
        + TAG
    )
    wire = (
        i32(0)
        + i16(0)
        + cs(None)
        + i32(30000)
        + carr(TOPIC + carr(part) + TAG)
        + carr(i32(1) + cs("h") + i32(9092) + cs(None) + TAG)
        + TAG
    )
    resp = SHARE_FETCH.decode_response(1, wire, strict=True)
    assert resp.acquisition_lock_timeout_ms == 30000
    p = resp.responses[0].partitions[0]
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 7)
    assert bytes(p.records) == b"RECS"
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [
        (10, 19, 2)
    ]
    assert resp.node_endpoints[0].host == "h"
    assert b"".join(SHARE_FETCH.encode_response(1, resp)) == wire


def test_share_acknowledge_v2_carries_renew_and_lock_timeout():
    body = {
        "group_id": "g",
        "member_id": "m",
        "share_session_epoch": -1,
        "is_renew_ack": True,
        "topics": [
            {
                "topic_id": TOPIC,
                "partitions": [
                    {
                        "partition_index": 3,
                        "acknowledgement_batches": [
                            {"first_offset": 5, "last_offset": 5, "acknowledge_types": [4]}
                        ],
                    }
                ],
            }
        ],
    }
    ack = carr(i64(5) + i64(5) + carr(i8(4)) + TAG)
    want = (
        cs("g")
        + cs("m")
        + i32(-1)
        + boolean(True)
        + carr(TOPIC + carr(i32(3) + ack + TAG) + TAG)
        + TAG
    )
    assert b"".join(SHARE_ACKNOWLEDGE.encode_request(2, body)) == want
    v1 = cs("g") + cs("m") + i32(-1) + carr(TOPIC + carr(i32(3) + ack + TAG) + TAG) + TAG
    assert b"".join(SHARE_ACKNOWLEDGE.encode_request(1, body)) == v1
    resp = i32(0) + i16(0) + cs(None) + i32(15000) + carr() + carr() + TAG
    assert (
        SHARE_ACKNOWLEDGE.decode_response(2, resp, strict=True).acquisition_lock_timeout_ms == 15000
    )


def test_share_group_describe_response():
    member = (
        cs("m")
        + cs(None)
        + i32(2)
        + cs("cid")
        + cs("/127.0.0.1")
        + carr(cs("jobs"))
        + carr(TOPIC + cs("jobs") + carr(i32(0)) + TAG)
        + TAG
        + TAG
    )
    group = (
        i16(0)
        + cs(None)
        + cs("g")
        + cs("Stable")
        + i32(2)
        + i32(2)
        + cs("simple")
        + carr(member)
        + i32(-2147483648)
        + TAG
    )
    resp = SHARE_GROUP_DESCRIBE.decode_response(1, i32(0) + carr(group) + TAG, strict=True)
    m = resp.groups[0].members[0]
    assert (resp.groups[0].group_state, resp.groups[0].assignor_name) == ("Stable", "simple")
    assert m.assignment.topic_partitions[0].topic_name == "jobs"
    req = b"".join(SHARE_GROUP_DESCRIBE.encode_request(1, {"group_ids": ["g"]}))
    assert req == carr(cs("g")) + boolean(False) + TAG


def test_offsets_admin_apis():
    req = {"groups": [{"group_id": "g", "topics": None}]}
    assert (
        b"".join(DESCRIBE_SHARE_GROUP_OFFSETS.encode_request(0, req))
        == carr(cs("g") + b"\x00" + TAG) + TAG
    )
    part = i32(0) + i64(42) + i32(0) + i64(3) + i16(0) + cs(None) + TAG
    wire = (
        i32(0)
        + carr(cs("g") + carr(cs("t") + TOPIC + carr(part) + TAG) + i16(0) + cs(None) + TAG)
        + TAG
    )
    got = DESCRIBE_SHARE_GROUP_OFFSETS.decode_response(1, wire, strict=True)
    assert (
        got.groups[0].topics[0].partitions[0].start_offset,
        got.groups[0].topics[0].partitions[0].lag,
    ) == (42, 3)
    alter = {
        "group_id": "g",
        "topics": [{"topic_name": "t", "partitions": [{"partition_index": 1, "start_offset": 0}]}],
    }
    assert b"".join(ALTER_SHARE_GROUP_OFFSETS.encode_request(0, alter)) == (
        cs("g") + carr(cs("t") + carr(i32(1) + i64(0) + TAG) + TAG) + TAG
    )
    delete = {"group_id": "g", "topics": [{"topic_name": "t"}]}
    assert (
        b"".join(DELETE_SHARE_GROUP_OFFSETS.encode_request(0, delete))
        == cs("g") + carr(cs("t") + TAG) + TAG
    )
