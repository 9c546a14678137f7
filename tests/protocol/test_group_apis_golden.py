"""Golden wire-format tests for the group/admin API schemas.

Expected bytes are built by hand with ``struct.pack`` following Kafka's JSON message
definitions (clients/src/main/resources/common/message/*.json), independently of the
schema DSL, then cross-checked against kafka-python's protocol classes: its hand-written
``kafka.protocol.old`` structs (non-flexible versions) and its JSON-driven ``ApiMessage``
classes (all versions, including flexible ones).
"""

from __future__ import annotations

import struct

import pytest

from kclient.protocol.apis.create_topics import CREATE_TOPICS
from kclient.protocol.apis.delete_topics import DELETE_TOPICS
from kclient.protocol.apis.find_coordinator import FIND_COORDINATOR
from kclient.protocol.apis.heartbeat import HEARTBEAT
from kclient.protocol.apis.join_group import JOIN_GROUP
from kclient.protocol.apis.leave_group import LEAVE_GROUP
from kclient.protocol.apis.offset_commit import OFFSET_COMMIT
from kclient.protocol.apis.offset_fetch import OFFSET_FETCH
from kclient.protocol.apis.sync_group import SYNC_GROUP
from tests.needs import requires

# --- hand-rolled wire primitives (deliberately independent of kclient.protocol.types) ---


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def boolean(v):
    return b"\x01" if v else b"\x00"


# golden byte tables, laid out as the wire is:
# fmt: off
def uv(n):
    """Unsigned varint (LEB128)."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def s(v):
    """STRING / NULLABLE_STRING: int16 length (-1 = null) + utf-8."""
    if v is None:
        return i16(-1)
    v = v.encode()
    return i16(len(v)) + v


def by(v):
    """BYTES: int32 length + data."""
    return i32(len(v)) + v


def arr(*items):
    """ARRAY: int32 count + pre-encoded elements; arr(None) is the null array."""
    if items == (None,):
        return i32(-1)
    return i32(len(items)) + b"".join(items)


def cs(v):
    """COMPACT_(NULLABLE_)STRING: uvarint length+1 (0 = null) + utf-8."""
    if v is None:
        return b"\x00"
    v = v.encode()
    return uv(len(v) + 1) + v


def cby(v):
    return uv(len(v) + 1) + v


def carr(*items):
    if items == (None,):
        return b"\x00"
    return uv(len(items) + 1) + b"".join(items)


TAG = b"\x00"  # empty tagged-field section


# --- values (supersets: fields not in a version are ignored by the encoder) ---

FC_REQ = {"key": "grp", "key_type": 0, "coordinator_keys": ["grp", "g2"]}
FC_RESP = {"throttle_time_ms": 7, "error_code": 0, "error_message": None, "node_id": 3,
           "host": "broker-3", "port": 9092, "coordinators": [
               {"key": "grp", "node_id": 3, "host": "broker-3", "port": 9092, "error_code": 0,
                "error_message": None}]}
FC_RESP_ERR = {"throttle_time_ms": 0, "error_code": 15, "error_message": "not available",
               "node_id": -1, "host": "", "port": -1, "coordinators": [
                   {"key": "g2", "node_id": -1, "host": "", "port": -1, "error_code": 15,
                    "error_message": "not available"}]}

OC_REQ = {
    "group_id": "g1", "generation_id_or_member_epoch": 5, "member_id": "m-1",
    "group_instance_id": "i-1", "retention_time_ms": 86400000,
    "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 3,
         "commit_timestamp": 1700000000000, "committed_metadata": "md"},
        {"partition_index": 1, "committed_offset": 7, "committed_leader_epoch": -1,
         "commit_timestamp": -1, "committed_metadata": None},
    ]}],
}
OC_RESP = {"throttle_time_ms": 10, "topics": [{"name": "t", "partitions": [
    {"partition_index": 0, "error_code": 0}, {"partition_index": 1, "error_code": 22}]}]}

OF_TOPICS = [{"name": "t", "partition_indexes": [0, 1, 2]}]
OF_REQ = {"group_id": "g1", "topics": OF_TOPICS, "require_stable": True,
          "groups": [{"group_id": "g1", "member_id": "m-1", "member_epoch": 5,
                      "topics": OF_TOPICS}]}
OF_REQ_ALL = {"group_id": "g1", "topics": None, "require_stable": False,
              "groups": [{"group_id": "g1", "member_id": None, "member_epoch": -1,
                          "topics": None}]}
OF_PARTITIONS = [
    {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 3,
     "metadata": "md", "error_code": 0},
    {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1,
     "metadata": None, "error_code": 0},
]
OF_RESP = {
    "throttle_time_ms": 5,
    "topics": [{"name": "t", "partitions": OF_PARTITIONS}],
    "error_code": 0,
    "groups": [{"group_id": "g1", "topics": [{"name": "t", "partitions": OF_PARTITIONS}],
                "error_code": 0}],
}

JG_REQ = {
    "group_id": "g1", "session_timeout_ms": 10000, "rebalance_timeout_ms": 300000,
    "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
    "protocols": [{"name": "range", "metadata": b"\x00\x01abc"},
                  {"name": "roundrobin", "metadata": b""}],
}
JG_RESP = {
    "throttle_time_ms": 0, "error_code": 0, "generation_id": 4, "protocol_type": "consumer",
    "protocol_name": "range", "leader": "m-1", "member_id": "m-2",
    "members": [{"member_id": "m-1", "group_instance_id": None, "metadata": b"x"},
                {"member_id": "m-2", "group_instance_id": "i-2", "metadata": b"yz"}],
}

SG_REQ = {
    "group_id": "g1", "generation_id": 4, "member_id": "m-1", "group_instance_id": None,
    "protocol_type": "consumer", "protocol_name": "range",
    "assignments": [{"member_id": "m-1", "assignment": b"A"},
                    {"member_id": "m-2", "assignment": b"BB"}],
}
SG_RESP = {"throttle_time_ms": 0, "error_code": 0, "protocol_type": "consumer",
           "protocol_name": "range", "assignment": b"A"}

HB_REQ = {"group_id": "g1", "generation_id": 4, "member_id": "m-1", "group_instance_id": "i-1"}
HB_RESP = {"throttle_time_ms": 3, "error_code": 27}

LG_REQ = {"group_id": "g1", "member_id": "m-1",
          "members": [{"member_id": "m-1", "group_instance_id": None},
                      {"member_id": "m-2", "group_instance_id": "i-2"}]}
LG_RESP = {"throttle_time_ms": 0, "error_code": 0,
           "members": [{"member_id": "m-1", "group_instance_id": None, "error_code": 0},
                       {"member_id": "m-2", "group_instance_id": "i-2", "error_code": 25}]}

CT_REQ = {
    "topics": [
        {"name": "a", "num_partitions": 3, "replication_factor": 2, "assignments": [],
         "configs": [{"name": "cleanup.policy", "value": "compact"},
                     {"name": "x", "value": None}]},
        {"name": "b", "num_partitions": -1, "replication_factor": -1,
         "assignments": [{"partition_index": 0, "broker_ids": [1, 2]},
                         {"partition_index": 1, "broker_ids": [2, 3]}],
         "configs": []},
    ],
    "timeout_ms": 30000, "validate_only": True,
}
CT_RESP = {
    "throttle_time_ms": 0,
    "topics": [
        {"name": "a", "error_code": 0, "error_message": None, "num_partitions": 3,
         "replication_factor": 2,
         "configs": [{"name": "cleanup.policy", "value": "compact", "read_only": False,
                      "config_source": 1, "is_sensitive": False}]},
        {"name": "b", "error_code": 36, "error_message": "Topic 'b' already exists.",
         "num_partitions": -1, "replication_factor": -1, "configs": None},
    ],
}

DT_REQ = {"topic_names": ["a", "b"], "timeout_ms": 30000}
DT_RESP = {"throttle_time_ms": 0, "responses": [
    {"name": "a", "error_code": 0, "error_message": None},
    {"name": "b", "error_code": 3, "error_message": "unknown"}]}


# --- golden bytes, built from the JSON layouts ---

GOLDEN = [
    # FindCoordinator
    (FIND_COORDINATOR, "request", 0, FC_REQ, s("grp")),
    (FIND_COORDINATOR, "request", 3, FC_REQ, cs("grp") + i8(0) + TAG),
    (FIND_COORDINATOR, "response", 0, FC_RESP, i16(0) + i32(3) + s("broker-3") + i32(9092)),
    (FIND_COORDINATOR, "response", 1, FC_RESP_ERR,
     i32(0) + i16(15) + s("not available") + i32(-1) + s("") + i32(-1)),
    (FIND_COORDINATOR, "response", 3, FC_RESP,
     i32(7) + i16(0) + cs(None) + i32(3) + cs("broker-3") + i32(9092) + TAG),
    # v4 (KIP-699): batched keys, one coordinator entry per key
    (FIND_COORDINATOR, "request", 4, FC_REQ, i8(0) + carr(cs("grp"), cs("g2")) + TAG),
    (FIND_COORDINATOR, "response", 4, FC_RESP,
     i32(7) + carr(cs("grp") + i32(3) + cs("broker-3") + i32(9092) + i16(0) + cs(None) + TAG)
     + TAG),
    (FIND_COORDINATOR, "response", 4, FC_RESP_ERR,
     i32(0) + carr(cs("g2") + i32(-1) + cs("") + i32(-1) + i16(15) + cs("not available") + TAG)
     + TAG),

    # OffsetCommit
    (OFFSET_COMMIT, "request", 0, OC_REQ,
     s("g1") + arr(s("t") + arr(i32(0) + i64(42) + s("md"),
                                i32(1) + i64(7) + s(None)))),
    (OFFSET_COMMIT, "request", 1, OC_REQ,
     s("g1") + i32(5) + s("m-1")
     + arr(s("t") + arr(i32(0) + i64(42) + i64(1700000000000) + s("md"),
                        i32(1) + i64(7) + i64(-1) + s(None)))),
    (OFFSET_COMMIT, "request", 2, OC_REQ,
     s("g1") + i32(5) + s("m-1") + i64(86400000)
     + arr(s("t") + arr(i32(0) + i64(42) + s("md"), i32(1) + i64(7) + s(None)))),
    (OFFSET_COMMIT, "request", 8, OC_REQ,
     cs("g1") + i32(5) + cs("m-1") + cs("i-1")
     + carr(cs("t") + carr(i32(0) + i64(42) + i32(3) + cs("md") + TAG,
                           i32(1) + i64(7) + i32(-1) + cs(None) + TAG) + TAG) + TAG),
    # v9 (KIP-848): v8's layout, the member epoch in generation_id_or_member_epoch
    (OFFSET_COMMIT, "request", 9, OC_REQ,
     cs("g1") + i32(5) + cs("m-1") + cs("i-1")
     + carr(cs("t") + carr(i32(0) + i64(42) + i32(3) + cs("md") + TAG,
                           i32(1) + i64(7) + i32(-1) + cs(None) + TAG) + TAG) + TAG),
    (OFFSET_COMMIT, "response", 0, OC_RESP,
     arr(s("t") + arr(i32(0) + i16(0), i32(1) + i16(22)))),
    (OFFSET_COMMIT, "response", 9, OC_RESP,
     i32(10) + carr(cs("t") + carr(i32(0) + i16(0) + TAG, i32(1) + i16(22) + TAG) + TAG) + TAG),
    (OFFSET_COMMIT, "response", 8, OC_RESP,
     i32(10) + carr(cs("t") + carr(i32(0) + i16(0) + TAG, i32(1) + i16(22) + TAG) + TAG) + TAG),

    # OffsetFetch
    (OFFSET_FETCH, "request", 0, OF_REQ,
     s("g1") + arr(s("t") + arr(i32(0), i32(1), i32(2)))),
    (OFFSET_FETCH, "request", 1, OF_REQ,
     s("g1") + arr(s("t") + arr(i32(0), i32(1), i32(2)))),
    (OFFSET_FETCH, "request", 2, OF_REQ_ALL, s("g1") + arr(None)),
    (OFFSET_FETCH, "request", 7, OF_REQ,
     cs("g1") + carr(cs("t") + carr(i32(0), i32(1), i32(2)) + TAG) + boolean(True) + TAG),
    (OFFSET_FETCH, "request", 7, OF_REQ_ALL, cs("g1") + carr(None) + boolean(False) + TAG),
    # v8+: groups; v9 (KIP-848): with the member id and epoch
    (OFFSET_FETCH, "request", 8, OF_REQ,
     carr(cs("g1") + carr(cs("t") + carr(i32(0), i32(1), i32(2)) + TAG) + TAG)
     + boolean(True) + TAG),
    (OFFSET_FETCH, "request", 9, OF_REQ,
     carr(cs("g1") + cs("m-1") + i32(5) + carr(cs("t") + carr(i32(0), i32(1), i32(2)) + TAG)
          + TAG) + boolean(True) + TAG),
    (OFFSET_FETCH, "request", 9, OF_REQ_ALL,
     carr(cs("g1") + cs(None) + i32(-1) + carr(None) + TAG) + boolean(False) + TAG),
    (OFFSET_FETCH, "response", 0, OF_RESP,
     arr(s("t") + arr(i32(0) + i64(42) + s("md") + i16(0),
                      i32(1) + i64(-1) + s(None) + i16(0)))),
    (OFFSET_FETCH, "response", 1, OF_RESP,
     arr(s("t") + arr(i32(0) + i64(42) + s("md") + i16(0),
                      i32(1) + i64(-1) + s(None) + i16(0)))),
    (OFFSET_FETCH, "response", 7, OF_RESP,
     i32(5) + carr(cs("t") + carr(i32(0) + i64(42) + i32(3) + cs("md") + i16(0) + TAG,
                                  i32(1) + i64(-1) + i32(-1) + cs(None) + i16(0) + TAG) + TAG)
     + i16(0) + TAG),
    (OFFSET_FETCH, "response", 9, OF_RESP,
     i32(5) + carr(cs("g1")
                   + carr(cs("t") + carr(i32(0) + i64(42) + i32(3) + cs("md") + i16(0) + TAG,
                                         i32(1) + i64(-1) + i32(-1) + cs(None) + i16(0) + TAG)
                          + TAG)
                   + i16(0) + TAG) + TAG),

    # JoinGroup
    (JOIN_GROUP, "request", 0, JG_REQ,
     s("g1") + i32(10000) + s("") + s("consumer")
     + arr(s("range") + by(b"\x00\x01abc"), s("roundrobin") + by(b""))),
    (JOIN_GROUP, "request", 7, JG_REQ,
     cs("g1") + i32(10000) + i32(300000) + cs("") + cs(None) + cs("consumer")
     + carr(cs("range") + cby(b"\x00\x01abc") + TAG, cs("roundrobin") + cby(b"") + TAG) + TAG),
    (JOIN_GROUP, "response", 0, JG_RESP,
     i16(0) + i32(4) + s("range") + s("m-1") + s("m-2")
     + arr(s("m-1") + by(b"x"), s("m-2") + by(b"yz"))),
    (JOIN_GROUP, "response", 7, JG_RESP,
     i32(0) + i16(0) + i32(4) + cs("consumer") + cs("range") + cs("m-1") + cs("m-2")
     + carr(cs("m-1") + cs(None) + cby(b"x") + TAG, cs("m-2") + cs("i-2") + cby(b"yz") + TAG)
     + TAG),

    # SyncGroup
    (SYNC_GROUP, "request", 0, SG_REQ,
     s("g1") + i32(4) + s("m-1") + arr(s("m-1") + by(b"A"), s("m-2") + by(b"BB"))),
    (SYNC_GROUP, "request", 5, SG_REQ,
     cs("g1") + i32(4) + cs("m-1") + cs(None) + cs("consumer") + cs("range")
     + carr(cs("m-1") + cby(b"A") + TAG, cs("m-2") + cby(b"BB") + TAG) + TAG),
    (SYNC_GROUP, "response", 0, SG_RESP, i16(0) + by(b"A")),
    (SYNC_GROUP, "response", 5, SG_RESP,
     i32(0) + i16(0) + cs("consumer") + cs("range") + cby(b"A") + TAG),

    # Heartbeat
    (HEARTBEAT, "request", 0, HB_REQ, s("g1") + i32(4) + s("m-1")),
    (HEARTBEAT, "request", 4, HB_REQ, cs("g1") + i32(4) + cs("m-1") + cs("i-1") + TAG),
    (HEARTBEAT, "response", 0, HB_RESP, i16(27)),
    (HEARTBEAT, "response", 4, HB_RESP, i32(3) + i16(27) + TAG),

    # LeaveGroup
    (LEAVE_GROUP, "request", 0, LG_REQ, s("g1") + s("m-1")),
    (LEAVE_GROUP, "request", 3, LG_REQ,
     s("g1") + arr(s("m-1") + s(None), s("m-2") + s("i-2"))),
    (LEAVE_GROUP, "request", 4, LG_REQ,
     cs("g1") + carr(cs("m-1") + cs(None) + TAG, cs("m-2") + cs("i-2") + TAG) + TAG),
    (LEAVE_GROUP, "response", 0, LG_RESP, i16(0)),
    (LEAVE_GROUP, "response", 4, LG_RESP,
     i32(0) + i16(0) + carr(cs("m-1") + cs(None) + i16(0) + TAG,
                            cs("m-2") + cs("i-2") + i16(25) + TAG) + TAG),

    # CreateTopics
    (CREATE_TOPICS, "request", 0, CT_REQ,
     arr(s("a") + i32(3) + i16(2) + arr()
         + arr(s("cleanup.policy") + s("compact"), s("x") + s(None)),
         s("b") + i32(-1) + i16(-1)
         + arr(i32(0) + arr(i32(1), i32(2)), i32(1) + arr(i32(2), i32(3)))
         + arr())
     + i32(30000)),
    (CREATE_TOPICS, "request", 5, CT_REQ,
     carr(cs("a") + i32(3) + i16(2) + carr()
          + carr(cs("cleanup.policy") + cs("compact") + TAG, cs("x") + cs(None) + TAG) + TAG,
          cs("b") + i32(-1) + i16(-1)
          + carr(i32(0) + carr(i32(1), i32(2)) + TAG, i32(1) + carr(i32(2), i32(3)) + TAG)
          + carr() + TAG)
     + i32(30000) + boolean(True) + TAG),
    (CREATE_TOPICS, "response", 0, CT_RESP, arr(s("a") + i16(0), s("b") + i16(36))),
    (CREATE_TOPICS, "response", 5, CT_RESP,
     i32(0)
     + carr(cs("a") + i16(0) + cs(None) + i32(3) + i16(2)
            + carr(cs("cleanup.policy") + cs("compact") + boolean(False) + i8(1)
                   + boolean(False) + TAG) + TAG,
            cs("b") + i16(36) + cs("Topic 'b' already exists.") + i32(-1) + i16(-1)
            + carr(None) + TAG)
     + TAG),

    # DeleteTopics
    (DELETE_TOPICS, "request", 0, DT_REQ, arr(s("a"), s("b")) + i32(30000)),
    (DELETE_TOPICS, "request", 5, DT_REQ, carr(cs("a"), cs("b")) + i32(30000) + TAG),
    (DELETE_TOPICS, "response", 0, DT_RESP, arr(s("a") + i16(0), s("b") + i16(3))),
    (DELETE_TOPICS, "response", 5, DT_RESP,
     i32(0) + carr(cs("a") + i16(0) + cs(None) + TAG, cs("b") + i16(3) + cs("unknown") + TAG)
     + TAG),
]

ALL_APIS = [FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, SYNC_GROUP, HEARTBEAT,
            LEAVE_GROUP, CREATE_TOPICS, DELETE_TOPICS]

# Every (api, kind) with the superset value used for cross-checks over the whole range.
VALUES = [
    (FIND_COORDINATOR, "request", FC_REQ), (FIND_COORDINATOR, "response", FC_RESP),
    (FIND_COORDINATOR, "response", FC_RESP_ERR),
    (OFFSET_COMMIT, "request", OC_REQ), (OFFSET_COMMIT, "response", OC_RESP),
    (OFFSET_FETCH, "request", OF_REQ), (OFFSET_FETCH, "response", OF_RESP),
    (JOIN_GROUP, "request", JG_REQ), (JOIN_GROUP, "response", JG_RESP),
    (SYNC_GROUP, "request", SG_REQ), (SYNC_GROUP, "response", SG_RESP),
    (HEARTBEAT, "request", HB_REQ), (HEARTBEAT, "response", HB_RESP),
    (LEAVE_GROUP, "request", LG_REQ), (LEAVE_GROUP, "response", LG_RESP),
    (CREATE_TOPICS, "request", CT_REQ), (CREATE_TOPICS, "response", CT_RESP),
    (DELETE_TOPICS, "request", DT_REQ), (DELETE_TOPICS, "response", DT_RESP),
]


def _encode(api, kind, version, value) -> bytes:
    parts = getattr(api, f"encode_{kind}")(version, value)
    return b"".join(bytes(p) for p in parts)


def _decode(api, kind, version, data):
    return getattr(api, f"decode_{kind}")(version, data, strict=True)


def _fields(api, kind):
    return api.request_fields if kind == "request" else api.response_fields


def project(fields, version, value):
    """Only the fields a version carries (nested), as plain dicts/lists/bytes."""
    out = {}
    for f in fields:
        if not f.active(version):
            continue
        v = value[f.name]
        if isinstance(f.type, (list, tuple)) and v is not None:
            v = [project(f.type, version, x) for x in v]
        elif isinstance(v, (bytearray, memoryview)):
            v = bytes(v)
        out[f.name] = v
    return out


def _plain(v):
    if hasattr(v, "to_dict"):
        v = v.to_dict()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return v


def _ids(case):
    api, kind, version = case[:3]
    return f"{api.name}-{kind}-v{version}"


# --- golden ---

@pytest.mark.parametrize("case", GOLDEN, ids=[_ids(c) for c in GOLDEN])
def test_golden_encode(case):
    api, kind, version, value, expected = case
    assert _encode(api, kind, version, value) == expected


@pytest.mark.parametrize("case", GOLDEN, ids=[_ids(c) for c in GOLDEN])
def test_golden_decode(case):
    api, kind, version, value, expected = case
    decoded = _decode(api, kind, version, expected)
    fields = _fields(api, kind)
    assert project(fields, version, _plain(decoded)) == project(fields, version, value)


def test_covers_low_and_high_versions():
    for api in ALL_APIS:
        for kind in ("request", "response"):
            versions = {c[2] for c in GOLDEN if c[0] is api and c[1] == kind}
            assert api.min_version in versions and api.max_version in versions, (api, kind)


def test_version_ranges():
    expected = {
        FIND_COORDINATOR: (10, 0, 4, 3), OFFSET_COMMIT: (8, 0, 9, 8),
        OFFSET_FETCH: (9, 0, 9, 6), JOIN_GROUP: (11, 0, 7, 6), SYNC_GROUP: (14, 0, 5, 4),
        HEARTBEAT: (12, 0, 4, 4), LEAVE_GROUP: (13, 0, 4, 4), CREATE_TOPICS: (19, 0, 5, 5),
        DELETE_TOPICS: (20, 0, 5, 4),
    }
    for api, (key, lo, hi, flex) in expected.items():
        assert (api.key, api.min_version, api.max_version, api.flexible_from) == (key, lo, hi, flex)
        assert not api.is_flexible(flex - 1) and api.is_flexible(flex)


# --- round trips over the whole version range ---

@pytest.mark.parametrize("api,kind,value", VALUES,
                         ids=[f"{a.name}-{k}-{i}" for i, (a, k, _) in enumerate(VALUES)])
def test_round_trip_all_versions(api, kind, value):
    fields = _fields(api, kind)
    for version in range(api.min_version, api.max_version + 1):
        data = _encode(api, kind, version, value)
        decoded = _decode(api, kind, version, data)
        assert project(fields, version, _plain(decoded)) == project(fields, version, value), version
        # fields a version does not carry come back as their defaults, so re-encoding is stable
        assert _encode(api, kind, version, decoded) == data, version
        assert _encode(api, kind, version, _plain(decoded)) == data, version


def test_decode_response_of_encode_response():
    for api, kind, value in VALUES:
        if kind != "response":
            continue
        for version in (api.min_version, api.max_version):
            got = api.decode_response(version, b"".join(api.encode_response(version, value)))
            assert project(api.response_fields, version, got.to_dict()) == \
                project(api.response_fields, version, value)


def test_absent_fields_get_defaults():
    fc = FIND_COORDINATOR.decode_response(0, i16(0) + i32(3) + s("h") + i32(9092))
    assert fc.throttle_time_ms == 0 and fc.error_message is None
    assert FIND_COORDINATOR.decode_request(0, s("g")).key_type == 0

    of = OFFSET_FETCH.decode_response(1, arr(s("t") + arr(i32(0) + i64(5) + s("") + i16(0))))
    assert of.error_code == 0 and of.topics[0].partitions[0].committed_leader_epoch == -1
    assert OFFSET_FETCH.decode_request(1, s("g") + arr()).require_stable is False

    oc = OFFSET_COMMIT.decode_request(0, s("g") + arr(s("t") + arr(i32(0) + i64(1) + s(None))))
    assert oc.generation_id_or_member_epoch == -1 and oc.member_id == ""
    assert oc.retention_time_ms == -1 and oc.group_instance_id is None
    p = oc.topics[0].partitions[0]
    assert p.committed_leader_epoch == -1 and p.commit_timestamp == -1

    jg = JOIN_GROUP.decode_response(0, GOLDEN_BYTES[(JOIN_GROUP, "response", 0)])
    assert jg.protocol_type is None and jg.members[0].group_instance_id is None
    jq = JOIN_GROUP.decode_request(0, GOLDEN_BYTES[(JOIN_GROUP, "request", 0)])
    assert jq.rebalance_timeout_ms == -1 and jq.group_instance_id is None

    sg = SYNC_GROUP.decode_response(0, i16(0) + by(b""))
    assert sg.protocol_type is None and sg.protocol_name is None

    lg = LEAVE_GROUP.decode_request(0, s("g") + s("m"))
    assert lg.members == []
    lg3 = LEAVE_GROUP.decode_request(3, s("g") + arr())
    assert lg3.member_id == ""

    ct = CREATE_TOPICS.decode_response(0, arr(s("a") + i16(0)))
    t = ct.topics[0]
    assert t.error_message is None and t.num_partitions == -1 and t.replication_factor == -1
    assert CREATE_TOPICS.decode_request(0, arr() + i32(1)).validate_only is False

    dt = DELETE_TOPICS.decode_response(0, arr(s("a") + i16(0)))
    assert dt.responses[0].error_message is None


GOLDEN_BYTES = {(c[0], c[1], c[2]): c[4] for c in GOLDEN}


def test_encode_uses_defaults_for_missing_fields():
    assert _encode(JOIN_GROUP, "request", 5,
                   {"group_id": "g", "session_timeout_ms": 1, "protocol_type": "consumer",
                    "protocols": []}) == \
        s("g") + i32(1) + i32(-1) + s("") + s(None) + s("consumer") + arr()
    assert _encode(CREATE_TOPICS, "request", 1, {"topics": []}) == arr() + i32(60000) + b"\x00"
    assert _encode(OFFSET_FETCH, "request", 7, {"group_id": "g", "topics": []}) == \
        cs("g") + carr() + b"\x00" + TAG


def test_unknown_tagged_fields_are_skipped():
    # Heartbeat v4 response with one unknown tagged field (tag 5, two bytes)
    data = i32(0) + i16(0) + uv(1) + uv(5) + uv(2) + b"ab"
    hb = HEARTBEAT.decode_response(4, data)
    assert hb.error_code == 0


def test_non_nullable_fields_reject_none():
    with pytest.raises(ValueError):
        _encode(HEARTBEAT, "request", 0, {"group_id": None, "generation_id": 1, "member_id": ""})
    with pytest.raises(ValueError):  # topics is nullable only from v2
        _encode(OFFSET_FETCH, "request", 1, OF_REQ_ALL)
    with pytest.raises(ValueError):  # group_instance_id is nullable, protocol_name before v7 is not
        _encode(JOIN_GROUP, "response", 6, dict(JG_RESP, protocol_name=None))
    _encode(JOIN_GROUP, "response", 7, dict(JG_RESP, protocol_name=None))


# --- cross-checks against kafka-python 3.0.12 ---

try:
    from kafka.protocol import admin as kp_admin
    from kafka.protocol import consumer as kp_consumer
    from kafka.protocol import metadata as kp_metadata
    from kafka.protocol.old import admin as kp_old_admin
    from kafka.protocol.old import commit as kp_old_commit
    from kafka.protocol.old import find_coordinator as kp_old_fc
    from kafka.protocol.old import group as kp_old_group
except ImportError:  # pragma: no cover - kafka-python is a test-only cross-check
    KP_NEW = {}
    _OLD_MODULES = {}
else:
    KP_NEW = {
        FIND_COORDINATOR: (kp_metadata.FindCoordinatorRequest, kp_metadata.FindCoordinatorResponse),
        OFFSET_COMMIT: (kp_consumer.OffsetCommitRequest, kp_consumer.OffsetCommitResponse),
        OFFSET_FETCH: (kp_consumer.OffsetFetchRequest, kp_consumer.OffsetFetchResponse),
        JOIN_GROUP: (kp_consumer.JoinGroupRequest, kp_consumer.JoinGroupResponse),
        SYNC_GROUP: (kp_consumer.SyncGroupRequest, kp_consumer.SyncGroupResponse),
        HEARTBEAT: (kp_consumer.HeartbeatRequest, kp_consumer.HeartbeatResponse),
        LEAVE_GROUP: (kp_consumer.LeaveGroupRequest, kp_consumer.LeaveGroupResponse),
        CREATE_TOPICS: (kp_admin.CreateTopicsRequest, kp_admin.CreateTopicsResponse),
        DELETE_TOPICS: (kp_admin.DeleteTopicsRequest, kp_admin.DeleteTopicsResponse),
    }
    _OLD_MODULES = {
        FIND_COORDINATOR: kp_old_fc, OFFSET_COMMIT: kp_old_commit, OFFSET_FETCH: kp_old_commit,
        JOIN_GROUP: kp_old_group, SYNC_GROUP: kp_old_group, HEARTBEAT: kp_old_group,
        LEAVE_GROUP: kp_old_group, CREATE_TOPICS: kp_old_admin, DELETE_TOPICS: kp_old_admin,
    }

requires_kafka_python = requires(None if KP_NEW else "kafka-python not installed (pip install -e '.[test]')")


def _old_class(api, kind, version):
    return getattr(_OLD_MODULES[api], f"{api.name}{kind.capitalize()}_v{version}", None)


def _kp_new_build(holder, value):
    """Build a kafka-python ApiMessage / nested data object from a plain projected dict."""
    kwargs = {}
    for name, v in value.items():
        f = holder.fields[name]
        if f.is_struct_array() and v is not None:
            v = [_kp_new_build(f.data_class, x) for x in v]
        kwargs[name] = v
    return holder(**kwargs)


def _old_positional(schema, value):
    from kafka.protocol.old.types import Array, Schema
    out = []
    for name, typ in zip(schema.names, schema.fields):
        v = value[name]
        if isinstance(typ, Array) and isinstance(typ.array_of, Schema) and v is not None:
            v = [_old_positional(typ.array_of, x) for x in v]
        out.append(v)
    return tuple(out)


def _kp_values(obj, like):
    """Read the fields named in ``like`` (recursively) off kafka-python's decoded objects."""
    if isinstance(like, dict):
        return {k: _kp_values(getattr(obj, k), v) for k, v in like.items()}
    if isinstance(like, list) and isinstance(obj, list):
        return [_kp_values(o, lk) for o, lk in zip(obj, like)] + obj[len(like):]
    if isinstance(obj, (bytearray, memoryview)):
        return bytes(obj)
    return obj


@requires_kafka_python
@pytest.mark.parametrize("api,kind,value", VALUES,
                         ids=[f"{a.name}-{k}-{i}" for i, (a, k, _) in enumerate(VALUES)])
def test_matches_kafka_python_json_classes(api, kind, value):
    cls = KP_NEW[api][0 if kind == "request" else 1]
    fields = _fields(api, kind)
    for version in range(api.min_version, api.max_version + 1):
        projected = project(fields, version, value)
        ours = _encode(api, kind, version, value)
        theirs = bytes(_kp_new_build(cls, projected).encode(version=version))
        assert ours == theirs, version
        decoded = cls.decode(ours, version=version)
        assert _kp_values(decoded, projected) == projected, version


@requires_kafka_python
@pytest.mark.parametrize("api,kind,value", VALUES,
                         ids=[f"{a.name}-{k}-{i}" for i, (a, k, _) in enumerate(VALUES)])
def test_matches_kafka_python_old_structs(api, kind, value):
    fields = _fields(api, kind)
    checked = 0
    for version in range(api.min_version, api.max_version + 1):
        cls = _old_class(api, kind, version)
        if cls is None:
            continue
        projected = project(fields, version, value)
        assert list(cls.SCHEMA.names) == list(projected), version
        ours = _encode(api, kind, version, value)
        assert ours == bytes(cls(*_old_positional(cls.SCHEMA, projected)).encode()), version
        checked += 1
    assert checked >= 3


@requires_kafka_python
def test_field_names_match_kafka_python():
    """Our snake_case names are the ones kafka-python derives from the same JSON."""
    def check(ours, holder, path):
        theirs = holder.fields
        for f in ours:
            assert f.name in theirs, f"{path}.{f.name}"
            if isinstance(f.type, (list, tuple)):
                assert theirs[f.name].is_struct_array(), f"{path}.{f.name}"
                check(f.type, theirs[f.name].data_class, f"{path}.{f.name}")

    for api, (req, resp) in KP_NEW.items():
        check(api.request_fields, req, f"{api.name}Request")
        check(api.response_fields, resp, f"{api.name}Response")
