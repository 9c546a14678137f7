"""Golden wire bytes of the KIP-848 APIs (ConsumerGroupHeartbeat, ConsumerGroupDescribe).

kafka-python ships no JSON for these, so the bytes are built by hand from Kafka's
definitions (clients/src/main/resources/common/message/ConsumerGroup*.json, 4.x): every
version flexible, nullable single structs preceded by an int8 (-1 null, 1 present).  The
schema-conformance test counts these rows as the oracle of these APIs' versions.
"""

from __future__ import annotations

import struct

import pytest

from kclient.protocol.apis import CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT
from kclient.protocol.errors import ProtocolDecodeError

TAG = b"\x00"
TOPIC_A = bytes(range(16))
TOPIC_B = bytes(range(16, 32))


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def cs(v):
    """COMPACT_(NULLABLE_)STRING: uvarint length+1 (0 = null) + utf-8 (lengths < 127 here)."""
    if v is None:
        return b"\x00"
    v = v.encode()
    return bytes([len(v) + 1]) + v


def carr(*items, null=False):
    """COMPACT_ARRAY: uvarint count+1 (0 = null) + the items."""
    return b"\x00" if null else bytes([len(items) + 1]) + b"".join(items)


HB_REQ_FULL = {
    "group_id": "g",
    "member_id": "m1",
    "member_epoch": 0,
    "instance_id": "i1",
    "rack_id": "r1",
    "rebalance_timeout_ms": 300000,
    "subscribed_topic_names": ["a", "b"],
    "subscribed_topic_regex": "^b.*",
    "server_assignor": "uniform",
    "topic_partitions": [{"topic_id": TOPIC_A, "partitions": [0, 2]}],
}
HB_REQ_INCREMENTAL = {"group_id": "g", "member_id": "m1", "member_epoch": 7}
HB_RESP = {
    "throttle_time_ms": 0,
    "error_code": 0,
    "error_message": None,
    "member_id": "m1",
    "member_epoch": 8,
    "heartbeat_interval_ms": 5000,
    "assignment": {"topic_partitions": [{"topic_id": TOPIC_B, "partitions": [1]}]},
}
HB_RESP_FENCED = {
    "throttle_time_ms": 3,
    "error_code": 110,
    "error_message": "fenced",
    "member_id": None,
    "member_epoch": -1,
    "heartbeat_interval_ms": 0,
    "assignment": None,
}

_FULL_HEAD = (
    cs("g") + cs("m1") + i32(0) + cs("i1") + cs("r1") + i32(300000) + carr(cs("a"), cs("b"))
)
_FULL_TAIL = cs("uniform") + carr(TOPIC_A + carr(i32(0), i32(2)) + TAG) + TAG
_NULLS_V0 = cs(None) + cs(None) + i32(-1) + carr(null=True) + cs(None) + carr(null=True) + TAG

_MEMBER = {
    "member_id": "m1",
    "instance_id": None,
    "rack_id": "r1",
    "member_epoch": 4,
    "client_id": "c",
    "client_host": "/127.0.0.1",
    "subscribed_topic_names": ["a"],
    "subscribed_topic_regex": None,
    "assignment": {
        "topic_partitions": [{"topic_id": TOPIC_A, "topic_name": "a", "partitions": [0]}]
    },
    "target_assignment": {"topic_partitions": []},
    "member_type": 1,
}
DESC_RESP = {
    "throttle_time_ms": 0,
    "groups": [
        {
            "error_code": 0,
            "error_message": None,
            "group_id": "g",
            "group_state": "Stable",
            "group_epoch": 5,
            "assignment_epoch": 5,
            "assignor_name": "uniform",
            "members": [_MEMBER],
            "authorized_operations": -2147483648,
        }
    ],
}
# v0 has no member type: it decodes as -1 (unknown)
DESC_RESP_V0 = {
    **DESC_RESP,
    "groups": [{**DESC_RESP["groups"][0], "members": [{**_MEMBER, "member_type": -1}]}],
}
_MEMBER_BYTES = (
    cs("m1")
    + cs(None)
    + cs("r1")
    + i32(4)
    + cs("c")
    + cs("/127.0.0.1")
    + carr(cs("a"))
    + cs(None)
    + carr(TOPIC_A + cs("a") + carr(i32(0)) + TAG)
    + TAG  # assignment
    + carr()
    + TAG
)  # target assignment
_GROUP_HEAD = i16(0) + cs(None) + cs("g") + cs("Stable") + i32(5) + i32(5) + cs("uniform")

GOLDEN = [
    (CONSUMER_GROUP_HEARTBEAT, "request", 0, HB_REQ_FULL, _FULL_HEAD + _FULL_TAIL),
    (CONSUMER_GROUP_HEARTBEAT, "request", 1, HB_REQ_FULL, _FULL_HEAD + cs("^b.*") + _FULL_TAIL),
    (
        CONSUMER_GROUP_HEARTBEAT,
        "request",
        0,
        HB_REQ_INCREMENTAL,
        cs("g") + cs("m1") + i32(7) + _NULLS_V0,
    ),
    (
        CONSUMER_GROUP_HEARTBEAT,
        "request",
        1,
        HB_REQ_INCREMENTAL,
        cs("g")
        + cs("m1")
        + i32(7)
        + cs(None)
        + cs(None)
        + i32(-1)
        + carr(null=True)
        + cs(None)
        + cs(None)
        + carr(null=True)
        + TAG,
    ),
    (
        CONSUMER_GROUP_HEARTBEAT,
        "response",
        0,
        HB_RESP,
        i32(0)
        + i16(0)
        + cs(None)
        + cs("m1")
        + i32(8)
        + i32(5000)
        + i8(1)
        + carr(TOPIC_B + carr(i32(1)) + TAG)
        + TAG
        + TAG,
    ),
    (
        CONSUMER_GROUP_HEARTBEAT,
        "response",
        1,
        HB_RESP_FENCED,
        i32(3) + i16(110) + cs("fenced") + cs(None) + i32(-1) + i32(0) + i8(-1) + TAG,
    ),
    (
        CONSUMER_GROUP_DESCRIBE,
        "request",
        0,
        {"group_ids": ["g", "h"], "include_authorized_operations": True},
        carr(cs("g"), cs("h")) + b"\x01" + TAG,
    ),
    (
        CONSUMER_GROUP_DESCRIBE,
        "request",
        1,
        {"group_ids": ["g"], "include_authorized_operations": False},
        carr(cs("g")) + b"\x00" + TAG,
    ),
    (
        CONSUMER_GROUP_DESCRIBE,
        "response",
        0,
        DESC_RESP_V0,
        i32(0) + carr(_GROUP_HEAD + carr(_MEMBER_BYTES + TAG) + i32(-2147483648) + TAG) + TAG,
    ),
    (
        CONSUMER_GROUP_DESCRIBE,
        "response",
        1,
        DESC_RESP,
        i32(0)
        + carr(_GROUP_HEAD + carr(_MEMBER_BYTES + i8(1) + TAG) + i32(-2147483648) + TAG)
        + TAG,
    ),
]


def _ids(case):
    return f"{case[0].name}-{case[1]}-v{case[2]}"


def _encode(api, side, version, value):
    encode = api.encode_request if side == "request" else api.encode_response
    return b"".join(encode(version, value))


def _decode(api, side, version, wire):
    decode = api.decode_request if side == "request" else api.decode_response
    return decode(version, wire, strict=True).to_dict()


@pytest.mark.parametrize("case", GOLDEN, ids=[_ids(c) for c in GOLDEN])
def test_golden_encode(case):
    api, side, version, value, wire = case
    assert _encode(api, side, version, value) == wire


@pytest.mark.parametrize("case", GOLDEN, ids=[_ids(c) for c in GOLDEN])
def test_golden_decode(case):
    api, side, version, value, wire = case
    decoded = _decode(api, side, version, wire)
    for name, expected in value.items():
        codec = api.request_codec(version) if side == "request" else api.response_codec(version)
        if any(n == name for n, _ in codec._codecs):
            assert decoded[name] == expected, name


def test_version_ranges_are_kafkas():
    assert (
        CONSUMER_GROUP_HEARTBEAT.key,
        CONSUMER_GROUP_HEARTBEAT.min_version,
        CONSUMER_GROUP_HEARTBEAT.max_version,
        CONSUMER_GROUP_HEARTBEAT.flexible_from,
    ) == (68, 0, 1, 0)
    assert (
        CONSUMER_GROUP_DESCRIBE.key,
        CONSUMER_GROUP_DESCRIBE.min_version,
        CONSUMER_GROUP_DESCRIBE.max_version,
        CONSUMER_GROUP_DESCRIBE.flexible_from,
    ) == (69, 0, 1, 0)


def test_a_v0_heartbeat_cannot_carry_a_regex_it_would_drop_silently():
    # the field is absent in v0: encoding drops it, so the core must only send it at v1+
    wire = _encode(
        CONSUMER_GROUP_HEARTBEAT,
        "request",
        0,
        {**HB_REQ_INCREMENTAL, "subscribed_topic_regex": "x"},
    )
    assert wire == cs("g") + cs("m1") + i32(7) + _NULLS_V0


def test_a_bad_null_marker_of_a_single_struct_is_a_decode_error():
    wire = i32(0) + i16(0) + cs(None) + cs("m1") + i32(8) + i32(5000) + i8(2) + TAG
    with pytest.raises(ProtocolDecodeError, match="invalid marker 2"):
        CONSUMER_GROUP_HEARTBEAT.decode_response(0, wire)


def test_a_null_non_nullable_struct_is_refused_naming_the_field():
    body = {
        "throttle_time_ms": 0,
        "groups": [{**DESC_RESP["groups"][0], "members": [{**_MEMBER, "assignment": None}]}],
    }
    with pytest.raises(ValueError, match="'assignment'.*not nullable"):
        _encode(CONSUMER_GROUP_DESCRIBE, "response", 0, body)
