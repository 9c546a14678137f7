"""Group/offset handlers through the wire schemas, every version, with a stand-in broker."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from kclient.broker.coordinator import GroupCoordinator
from kclient.broker.handlers import (
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    offset_commit,
    offset_fetch,
    sync_group,
)
from kclient.protocol import apis
from kclient.protocol import errors as E
from kclient.protocol.framing import Request, RequestHeader

WAIT = 5


class FakeBroker(SimpleNamespace):
    """The attributes of a broker the handlers use."""

    def coordinator_for(self, group_id, listener=""):
        if group_id.startswith("remote"):
            return (7, "otherhost", 9999)
        return (self.node_id, self.host, self.port)


@pytest.fixture
def broker(tmp_path):
    coord = GroupCoordinator(
        tmp_path, 0, {"group.min.session.timeout.ms": "50", "group.initial.rebalance.delay.ms": "0"}
    )
    coord.start()
    topics = {"t": [0, 1, 2]}
    yield FakeBroker(
        node_id=0,
        host="127.0.0.1",
        port=9092,
        coordinator=coord,
        cluster=SimpleNamespace(
            partitions=lambda name: dict.fromkeys(topics[name], 0) if name in topics else None
        ),
    )
    coord.close()


def call(broker, module, api, version, body, client_id="cli"):
    """Encode the request, decode it as the server would, handle, and round-trip the reply."""
    raw = b"".join(api.encode_request(version, body))
    req = Request(
        RequestHeader(api.key, version, 1, client_id), api.decode_request(version, raw), api
    )
    resp = module.handle(broker, req)
    if isinstance(resp, Future):
        resp = resp.result(WAIT)
    return api.decode_response(version, b"".join(api.encode_response(version, resp)))


def join_body(member_id="", group="g", meta=b"m"):
    return {
        "group_id": group,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": meta}],
    }


@pytest.mark.parametrize("version", range(4))
def test_find_coordinator(broker, version):
    r = call(broker, find_coordinator, apis.FIND_COORDINATOR, version, {"key": "g"})
    assert (r.error_code, r.node_id, r.host, r.port) == (0, 0, "127.0.0.1", 9092)
    r = call(broker, find_coordinator, apis.FIND_COORDINATOR, version, {"key": "remote-g"})
    assert (r.node_id, r.host, r.port) == (7, "otherhost", 9999)
    if version >= 1:
        r = call(
            broker, find_coordinator, apis.FIND_COORDINATOR, version, {"key": "tx", "key_type": 1}
        )  # a transactional id: same hashing
        assert (r.error_code, r.error_message, r.node_id, r.port) == (0, "NONE", 0, 9092)
        r = call(
            broker,
            find_coordinator,
            apis.FIND_COORDINATOR,
            version,
            {"key": "remote-tx", "key_type": 1},
        )
        assert (r.error_code, r.node_id, r.port) == (0, 7, 9999)
        r = call(
            broker, find_coordinator, apis.FIND_COORDINATOR, version, {"key": "tx", "key_type": 5}
        )
        assert r.error_code == E.InvalidRequestError.errno


@pytest.mark.parametrize("version", range(8))
def test_join_sync_heartbeat_leave_each_version(broker, version):
    jv, sv, hv, lv = version, min(version, 5), min(version, 4), min(version, 4)
    r = call(broker, join_group, apis.JOIN_GROUP, jv, join_body())
    if version >= 4:
        assert r.error_code == E.MemberIdRequiredError.errno and r.member_id.startswith("cli-")
        r = call(broker, join_group, apis.JOIN_GROUP, jv, join_body(r.member_id))
    assert r.error_code == 0 and r.generation_id == 1 and r.leader == r.member_id
    assert [m.metadata for m in r.members] == [b"m"]
    me = r.member_id
    sync = {
        "group_id": "g",
        "generation_id": 1,
        "member_id": me,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": me, "assignment": b"plan"}],
    }
    s = call(broker, sync_group, apis.SYNC_GROUP, sv, sync)
    assert s.error_code == 0 and s.assignment == b"plan"
    if sv >= 5:
        assert (s.protocol_type, s.protocol_name) == ("consumer", "range")
        bad = call(broker, sync_group, apis.SYNC_GROUP, sv, dict(sync, protocol_name="rr"))
        assert bad.error_code == E.InconsistentGroupProtocolError.errno
    hb = {"group_id": "g", "generation_id": 1, "member_id": me}
    assert call(broker, heartbeat, apis.HEARTBEAT, hv, hb).error_code == 0
    assert (
        call(broker, heartbeat, apis.HEARTBEAT, hv, dict(hb, generation_id=0)).error_code
        == E.IllegalGenerationError.errno
    )
    leave = {"group_id": "g", "member_id": me, "members": [{"member_id": me}]}
    r = call(broker, leave_group, apis.LEAVE_GROUP, lv, leave)
    assert r.error_code == 0
    if lv >= 3:
        assert [(m.member_id, m.error_code) for m in r.members] == [(me, 0)]
    assert (
        call(broker, heartbeat, apis.HEARTBEAT, hv, hb).error_code == E.UnknownMemberIdError.errno
    )


def test_join_unknown_member_error_encodes_in_old_versions(broker):
    for version in range(8):
        r = call(broker, join_group, apis.JOIN_GROUP, version, join_body("ghost"))
        assert r.error_code == E.UnknownMemberIdError.errno


def test_not_coordinator_everywhere(broker):
    nc = E.NotCoordinatorError.errno
    assert call(broker, join_group, apis.JOIN_GROUP, 5, join_body(group="remote")).error_code == nc
    assert (
        call(
            broker,
            heartbeat,
            apis.HEARTBEAT,
            1,
            {"group_id": "remote", "generation_id": 1, "member_id": "x"},
        ).error_code
        == nc
    )
    assert (
        call(
            broker,
            sync_group,
            apis.SYNC_GROUP,
            1,
            {"group_id": "remote", "generation_id": 1, "member_id": "x", "assignments": []},
        ).error_code
        == nc
    )
    assert (
        call(
            broker, leave_group, apis.LEAVE_GROUP, 1, {"group_id": "remote", "member_id": "x"}
        ).error_code
        == nc
    )
    commit = {
        "group_id": "remote",
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }
    r = call(broker, offset_commit, apis.OFFSET_COMMIT, 2, commit)
    assert r.topics[0].partitions[0].error_code == nc
    r = call(
        broker,
        offset_fetch,
        apis.OFFSET_FETCH,
        1,
        {"group_id": "remote", "topics": [{"name": "t", "partition_indexes": [0]}]},
    )
    assert r.topics[0].partitions[0].error_code == nc
    r = call(broker, offset_fetch, apis.OFFSET_FETCH, 3, {"group_id": "remote", "topics": None})
    assert r.error_code == nc


def commit_body(group="c", offset=5, topic="t", partition=0, metadata="meta"):
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "committed_offset": offset,
                        "committed_metadata": metadata,
                        "commit_timestamp": -1,
                    }
                ],
            }
        ],
    }


@pytest.mark.parametrize("version", range(9))
def test_offset_commit_then_fetch_each_version(broker, version):
    r = call(broker, offset_commit, apis.OFFSET_COMMIT, version, commit_body(offset=version + 5))
    assert r.topics[0].partitions[0].error_code == 0
    fv = min(version, 7)
    r = call(
        broker,
        offset_fetch,
        apis.OFFSET_FETCH,
        fv,
        {"group_id": "c", "topics": [{"name": "t", "partition_indexes": [0, 1]}]},
    )
    parts = {p.partition_index: p for p in r.topics[0].partitions}
    assert parts[0].committed_offset == version + 5 and parts[0].metadata == "meta"
    assert parts[1].committed_offset == -1 and parts[1].error_code == 0


def test_offset_commit_unknown_partition_and_large_metadata(broker):
    body = commit_body(partition=9)
    body["topics"].append(
        {"name": "nosuch", "partitions": [{"partition_index": 0, "committed_offset": 1}]}
    )
    body["topics"].append(
        {
            "name": "t",
            "partitions": [
                {"partition_index": 1, "committed_offset": 1, "committed_metadata": "x" * 5000},
                {"partition_index": 2, "committed_offset": 3},
            ],
        }
    )
    r = call(broker, offset_commit, apis.OFFSET_COMMIT, 3, body)
    codes = [[p.error_code for p in t.partitions] for t in r.topics]
    unknown = E.UnknownTopicOrPartitionError.errno
    # as Kafka's response builder: unknown partitions first, one entry per topic name
    assert [t.name for t in r.topics] == ["t", "nosuch"]
    assert codes == [[unknown, E.OffsetMetadataTooLargeError.errno, 0], [unknown]]


def test_offset_fetch_all_topics_when_null(broker):
    call(broker, offset_commit, apis.OFFSET_COMMIT, 2, commit_body(partition=2, offset=8))
    call(broker, offset_commit, apis.OFFSET_COMMIT, 2, commit_body(partition=0, offset=4))
    for version in range(2, 8):
        r = call(
            broker, offset_fetch, apis.OFFSET_FETCH, version, {"group_id": "c", "topics": None}
        )
        assert r.error_code == 0
        assert [
            (t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
            for t in r.topics
        ] == [("t", [(0, 4), (2, 8)])]
    r = call(broker, offset_fetch, apis.OFFSET_FETCH, 3, {"group_id": "empty", "topics": None})
    assert r.topics == [] and r.error_code == 0


def test_offset_commit_with_group_membership(broker):
    r = call(broker, join_group, apis.JOIN_GROUP, 3, join_body())
    body = commit_body(group="g")
    body.update(generation_id_or_member_epoch=1, member_id=r.member_id)
    code = call(broker, offset_commit, apis.OFFSET_COMMIT, 2, body).topics[0].partitions[0]
    assert code.error_code == E.RebalanceInProgressError.errno  # not synced yet
    call(
        broker,
        sync_group,
        apis.SYNC_GROUP,
        1,
        {"group_id": "g", "generation_id": 1, "member_id": r.member_id, "assignments": []},
    )
    code = call(broker, offset_commit, apis.OFFSET_COMMIT, 2, body).topics[0].partitions[0]
    assert code.error_code == 0
    body.update(generation_id_or_member_epoch=0)
    code = call(broker, offset_commit, apis.OFFSET_COMMIT, 2, body).topics[0].partitions[0]
    assert code.error_code == E.IllegalGenerationError.errno
    # v0 has no generation: always a simple commit
    code = call(broker, offset_commit, apis.OFFSET_COMMIT, 0, commit_body(group="g", offset=77))
    assert code.topics[0].partitions[0].error_code == 0


def test_offset_commit_retention_and_v1_timestamp(broker):
    body = commit_body(group="r")
    body["retention_time_ms"] = 60_000
    call(broker, offset_commit, apis.OFFSET_COMMIT, 2, body)
    entry = broker.coordinator.fetch_offsets("r")[("t", 0)]
    assert entry.expire_ms == entry.commit_ms + 60_000
    body = commit_body(group="s")
    body["topics"][0]["partitions"][0]["commit_timestamp"] = 12345
    call(broker, offset_commit, apis.OFFSET_COMMIT, 1, body)
    assert broker.coordinator.fetch_offsets("s")[("t", 0)].commit_ms == 12345


def test_offset_commit_checks_partitions_cluster_wide(broker):
    broker.cluster = SimpleNamespace(partitions=lambda t: {0: 1, 1: 2} if t == "t" else None)
    ok = call(broker, offset_commit, apis.OFFSET_COMMIT, 2, commit_body(partition=1))
    assert ok.topics[0].partitions[0].error_code == 0  # led by another broker: still stored
    bad = call(broker, offset_commit, apis.OFFSET_COMMIT, 2, commit_body(partition=2))
    assert bad.topics[0].partitions[0].error_code == E.UnknownTopicOrPartitionError.errno
