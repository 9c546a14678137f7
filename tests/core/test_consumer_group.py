"""The KIP-848 member's state machine (kclient.core.consumer_group) on answers decoded from wire
bytes: full vs incremental heartbeats, reconciliation order, fencing, leaving.  The same
conversations run against Kafka 4.x through both drivers in
integration/test_consumer_group_kip848.py."""

from __future__ import annotations

import re

import pytest

from kclient.core import consumer_group as cg
from kclient.errors import (
    GroupMaxSizeReachedError,
    UnreleasedInstanceIdError,
)
from kclient.protocol.apis import CONSUMER_GROUP_HEARTBEAT

A, B = bytes(range(16)), bytes(range(16, 32))


def answer(error_code=0, epoch=1, interval=500, assignment=None, member_id=None, version=1):
    """A ConsumerGroupHeartbeat answer as the coordinator's bytes decode."""
    body = {
        "throttle_time_ms": 0,
        "error_code": error_code,
        "error_message": None,
        "member_id": member_id,
        "member_epoch": epoch,
        "heartbeat_interval_ms": interval,
        "assignment": None
        if assignment is None
        else {
            "topic_partitions": [{"topic_id": t, "partitions": ps} for t, ps in assignment.items()]
        },
    }
    wire = b"".join(CONSUMER_GROUP_HEARTBEAT.encode_response(version, body))
    return CONSUMER_GROUP_HEARTBEAT.decode_response(version, wire)


def joined(**kw):
    m = cg.ConsumerMember("g", **kw)
    m.subscribe(["a", "b"])
    return m


def test_member_id_is_a_kafka_uuid_string_generated_by_the_client():
    ids = {cg.new_member_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)


def test_join_sends_every_field_then_only_what_changed():
    m = joined(rack_id="r1", server_assignor="uniform", instance_id="i1")
    first = cg.heartbeat_body(m, 1)
    assert first == {
        "group_id": "g",
        "member_id": m.member_id,
        "member_epoch": 0,
        "instance_id": "i1",
        "rack_id": "r1",
        "rebalance_timeout_ms": 300000,
        "subscribed_topic_names": ["a", "b"],
        "server_assignor": "uniform",
        "topic_partitions": [],
    }
    cg.apply_answer(m, answer(epoch=3), frozenset())
    assert (m.state, m.epoch, m.interval_ms) == (cg.STABLE, 3, 500)
    # unchanged fields are left out (they encode as null: "did not change")
    assert cg.heartbeat_body(m, 1) == {
        "group_id": "g",
        "member_id": m.member_id,
        "member_epoch": 3,
        "instance_id": "i1",
    }
    m.subscribe(["c"])
    assert cg.heartbeat_body(m, 1)["subscribed_topic_names"] == ["c"]


def test_a_regex_subscription_is_sent_broker_side_and_cleared_when_dropped():
    m = cg.ConsumerMember("g")
    m.subscribe(regex="orders-.*")
    body = cg.heartbeat_body(m, 1)
    assert (body["subscribed_topic_regex"], body["subscribed_topic_names"]) == ("orders-.*", [])
    cg.apply_answer(m, answer(epoch=1), frozenset())
    m.subscribe(["x"])
    body = cg.heartbeat_body(m, 1)
    assert (body["subscribed_topic_regex"], body["subscribed_topic_names"]) == ("", ["x"])
    m2 = cg.ConsumerMember("g")
    m2.subscribe(regex="x")
    with pytest.raises(Exception, match="regex subscription needs ConsumerGroupHeartbeat v1"):
        cg.heartbeat_body(m2, 0)


def test_an_assignment_is_reconciled_revoking_first_then_acknowledged_at_once():
    m = joined()
    cg.heartbeat_body(m, 1)
    cg.apply_answer(m, answer(epoch=2, assignment={A: [0, 1]}), frozenset())
    assert m.state == cg.RECONCILING
    assert cg.reconcile(m) is None and m.unresolved() == {A}  # names come from Metadata
    m.names.update({A: "a", B: "b"})
    first = cg.reconcile(m)
    assert (first.revoked, first.added) == (frozenset(), {("a", 0), ("a", 1)})
    cg.acknowledge(m, first)
    assert (m.state, m.wait_s()) == (cg.ACKNOWLEDGING, 0.0)  # the ack goes out now
    ack = cg.heartbeat_body(m, 1)
    assert ack["topic_partitions"] == [{"topic_id": A, "partitions": [0, 1]}]
    cg.apply_answer(m, answer(epoch=2), m.owned_ids)
    assert m.state == cg.STABLE and m.wait_s() == 0.5
    # the coordinator moves a/1 away and adds b/0: a/1 is revoked before anything is acked
    cg.apply_answer(m, answer(epoch=3, assignment={A: [0], B: [0]}), m.owned_ids)
    second = cg.reconcile(m)
    assert (second.revoked, second.added) == ({("a", 1)}, {("b", 0)})
    assert m.owned == {("a", 0), ("a", 1)}  # still owned until acknowledged
    assert "topic_partitions" not in cg.heartbeat_body(m, 1)
    cg.acknowledge(m, second)
    assert cg.heartbeat_body(m, 1)["topic_partitions"] == [
        {"topic_id": A, "partitions": [0]},
        {"topic_id": B, "partitions": [0]},
    ]
    cg.apply_answer(m, answer(epoch=3), m.owned_ids)
    # a new epoch with the same partitions: nothing to tell the listener, nothing to ack
    cg.apply_answer(m, answer(epoch=4, assignment={A: [0], B: [0]}), m.owned_ids)
    assert cg.reconcile(m) is None and (m.state, m.epoch) == (cg.STABLE, 4)


def test_a_first_empty_assignment_is_still_reported_and_acknowledged():
    m = joined()
    cg.heartbeat_body(m, 1)
    cg.apply_answer(m, answer(epoch=1, assignment={}), frozenset())
    done = cg.reconcile(m)
    assert done is not None and done.assignment == frozenset()


def test_an_answer_to_a_heartbeat_sent_before_the_ack_keeps_acknowledging():
    m = joined()
    m.names[A] = "a"
    cg.heartbeat_body(m, 1)
    cg.apply_answer(m, answer(epoch=2, assignment={A: [0]}), frozenset())
    before = m.owned_ids
    cg.acknowledge(m, cg.reconcile(m))
    cg.apply_answer(m, answer(epoch=2), before)  # in flight when the ack was made
    assert m.state == cg.ACKNOWLEDGING and m.wait_s() == 0.0


@pytest.mark.parametrize("code", [110, 25], ids=["FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"])
def test_fencing_loses_the_partitions_and_rejoins_with_epoch_0_and_the_same_id(code):
    m = joined()
    m.names[A] = "a"
    cg.heartbeat_body(m, 1)
    cg.apply_answer(m, answer(epoch=4, assignment={A: [0, 1]}), frozenset())
    cg.acknowledge(m, cg.reconcile(m))
    member_id = m.member_id
    cg.apply_answer(m, answer(error_code=code, epoch=-1), m.owned_ids)
    assert m.state == cg.FENCED and not m.active  # no heartbeat until lost()
    assert cg.lost(m) == {("a", 0), ("a", 1)}
    assert (m.state, m.epoch, m.member_id, m.owned) == (cg.JOINING, 0, member_id, frozenset())
    rejoin = cg.heartbeat_body(m, 1)
    assert rejoin["member_epoch"] == 0 and rejoin["subscribed_topic_names"] == ["a", "b"]
    assert rejoin["topic_partitions"] == []


@pytest.mark.parametrize(
    "code,error", [(111, UnreleasedInstanceIdError), (81, GroupMaxSizeReachedError)]
)
def test_fatal_answers_end_the_member(code, error):
    m = joined()
    cg.heartbeat_body(m, 1)
    with pytest.raises(error):
        cg.apply_answer(m, answer(error_code=code, epoch=-1), frozenset())
    assert m.state == cg.FATAL and isinstance(m.error, error) and not m.active


def test_commits_carry_the_member_epoch():
    m = joined()
    cg.heartbeat_body(m, 1)
    cg.apply_answer(m, answer(epoch=7, member_id=None), frozenset())
    assert m.generation() == (7, m.member_id)
