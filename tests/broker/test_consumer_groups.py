"""KIP-848 consumer groups on the mini-broker, over the wire: ConsumerGroupHeartbeat sequences
(join, assignment, revocation before hand-over, leave, fencing, static members, regex
subscriptions, topics created and deleted), ConsumerGroupDescribe, ListGroups / DescribeGroups
types, member-epoch checks of OffsetCommit, session expiry and a restart keeping the group."""

from __future__ import annotations

import uuid

import pytest

from kclient.broker import MiniBroker
from kclient.protocol import errors as E
from kclient.protocol.apis import (
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_HEARTBEAT,
    DESCRIBE_GROUPS,
    HEARTBEAT,
    JOIN_GROUP,
    LIST_GROUPS,
    METADATA,
    OFFSET_COMMIT,
)
from kclient.protocol.consumer_protocol import encode_subscription
from tests.conftest import FAST_GROUPS, RawKafkaClient
from tests.waiting import wait_until

CONFIG = dict(
    FAST_GROUPS,
    **{
        "group.consumer.heartbeat.interval.ms": "300",
        "group.consumer.session.timeout.ms": "3000",
        "group.consumer.assignment.interval.ms": "0",
    },
)


@pytest.fixture
def broker(tmp_path):
    with MiniBroker(log_dir=tmp_path / "b", config=CONFIG) as b:
        yield b


@pytest.fixture
def client(broker):
    c = RawKafkaClient(broker.bootstrap)
    yield c
    c.close()


def hb(client, group, member, epoch, topics=None, owned=None, **extra):
    """One ConsumerGroupHeartbeat v1; a join (epoch 0) sends the full request."""
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": topics,
        "topic_partitions": [] if epoch == 0 else owned,
    }
    body.update(extra)
    return client.request(CONSUMER_GROUP_HEARTBEAT, 1, body)


def parts(resp):
    """The response's assignment as {topic id: [partitions]} (None when absent)."""
    if resp.assignment is None:
        return None
    return {bytes(t.topic_id): sorted(t.partitions) for t in resp.assignment.topic_partitions}


def owned(assignment):
    return [{"topic_id": t, "partitions": ps} for t, ps in (assignment or {}).items()]


def count(assignment):
    return sum(len(ps) for ps in (assignment or {}).values())


def new_ids():
    return f"g-{uuid.uuid4().hex[:6]}", str(uuid.uuid4()), str(uuid.uuid4())


def test_join_gets_every_partition_with_topic_ids(broker, client):
    broker.create_topic("t", partitions=4)
    group, a, _ = new_ids()
    r = hb(client, group, a, 0, ["t"])
    assert r.error_code == 0 and r.member_epoch == 2 and r.heartbeat_interval_ms == 300
    tid = broker.cluster.topic_id("t")
    assert parts(r) == {tid: [0, 1, 2, 3]}
    meta = client.request(
        METADATA,
        12,
        {
            "topics": [{"topic_id": tid, "name": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    assert meta.topics[0].name == "t" and bytes(meta.topics[0].topic_id) == tid
    r = hb(client, group, a, 2, owned=owned(parts(r)))
    assert r.member_epoch == 2 and r.assignment is None  # nothing changed: no assignment


def test_second_member_gets_partitions_only_after_revocation(broker, client):
    broker.create_topic("t", partitions=4)
    group, a, b = new_ids()
    ra = hb(client, group, a, 0, ["t"])
    rb = hb(client, group, b, 0, ["t"])
    assert rb.error_code == 0 and rb.member_epoch == 3 and count(parts(rb)) == 0  # a holds all
    ra2 = hb(client, group, a, 2, owned=owned(parts(ra)))
    assert ra2.member_epoch == 2 and count(parts(ra2)) == 2  # revoke 2, keep epoch 2
    rb2 = hb(client, group, b, 3, owned=[])
    assert count(parts(rb2)) == 0 if rb2.assignment else True  # a has not revoked yet
    ra3 = hb(client, group, a, 2, owned=owned(parts(ra2)))  # a acknowledges
    assert ra3.member_epoch == 3
    rb3 = hb(client, group, b, 3, owned=[])
    assert count(parts(rb3)) == 2
    assert ra3.assignment is None  # unchanged: kept ones
    a_has, b_has = parts(ra2), parts(rb3)
    assert not {(t, p) for t, ps in a_has.items() for p in ps} & {
        (t, p) for t, ps in b_has.items() for p in ps
    }
    described = client.request(
        CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}
    ).groups[0]
    assert described.group_state == "Stable" and described.group_epoch == 3
    assert described.assignor_name == "uniform"
    assert {m.member_id for m in described.members} == {a, b}
    assert all(m.assignment.topic_partitions[0].topic_name == "t" for m in described.members)


def test_leave_and_fencing_answers(broker, client):
    broker.create_topic("t", partitions=2)
    group, a, b = new_ids()
    r = hb(client, group, a, 0, ["t"])
    assert hb(client, group, a, 5, owned=[]).error_code == E.FencedMemberEpochError.errno
    assert hb(client, group, b, 1, owned=[]).error_code == E.UnknownMemberIdError.errno
    assert hb(client, "nope", a, 1, owned=[]).error_code == E.GroupIdNotFoundError.errno
    bad = hb(client, group, a, 0, None)
    assert bad.error_code == E.InvalidRequestError.errno and bad.error_message
    assert (
        hb(client, group, b, 0, ["t"], server_assignor="sticky").error_code
        == E.UnsupportedAssignorError.errno
    )
    assert (
        hb(client, group, b, 0, None, subscribed_topic_regex="(").error_code
        == E.InvalidRegularExpressionError.errno
    )
    left = hb(client, group, a, -1, owned=owned(parts(r)))
    assert (left.error_code, left.member_epoch) == (0, -1)
    assert hb(client, group, a, 1, owned=[]).error_code == E.UnknownMemberIdError.errno
    listed = client.request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})
    assert [
        (g.group_id, g.protocol_type, g.group_state, g.group_type)
        for g in listed.groups
        if g.group_id == group
    ] == [(group, "consumer", "Empty", "consumer")]
    described = client.request(
        DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False}
    )
    assert described.groups[0].group_state == "Dead"
    v6 = client.request(
        DESCRIBE_GROUPS, 6, {"groups": [group], "include_authorized_operations": False}
    )
    assert v6.groups[0].error_code == E.GroupIdNotFoundError.errno


def test_static_member_restart_gets_its_partitions_back(broker, client):
    broker.create_topic("t", partitions=4)
    group, a, b = new_ids()
    ra = hb(client, group, a, 0, ["t"], instance_id="i1")
    rb = hb(client, group, b, 0, ["t"], instance_id="i2")
    ra = hb(client, group, a, 2, owned=owned(parts(ra)))  # asked to revoke two
    mine = parts(ra)
    assert hb(client, group, a, 2, owned=owned(mine)).member_epoch == 3
    rb = hb(client, group, b, 3, owned=[])
    assert count(mine) == 2 and count(parts(rb)) == 2
    assert hb(client, group, a, -2, owned=owned(mine), instance_id="i1").member_epoch == -2
    a2 = str(uuid.uuid4())
    back = hb(client, group, a2, 0, ["t"], instance_id="i1")
    assert back.error_code == 0 and parts(back) == mine and back.member_epoch == 3
    other = hb(client, group, b, 3, owned=owned(parts(rb)))
    assert other.member_epoch == 3 and other.assignment is None  # b heard nothing
    taken = hb(client, group, str(uuid.uuid4()), 0, ["t"], instance_id="i1")
    assert taken.error_code == E.UnreleasedInstanceIdError.errno
    assert (
        hb(client, group, a, 3, owned=[], instance_id="i1").error_code
        == E.FencedInstanceIdError.errno
    )


def test_regex_subscription_follows_created_and_deleted_topics(broker, client):
    broker.create_topic("rx-1", partitions=2)
    broker.create_topic("other", partitions=2)
    group, a, _ = new_ids()
    r = hb(client, group, a, 0, None, subscribed_topic_regex="rx-.*")
    assert parts(r) == {broker.cluster.topic_id("rx-1"): [0, 1]}
    broker.create_topic("rx-2", partitions=1)
    r = hb(client, group, a, r.member_epoch, owned=owned(parts(r)))
    assert r.member_epoch == 3 and count(parts(r)) == 3
    broker.delete_topic("rx-1")
    r = hb(client, group, a, r.member_epoch, owned=owned(parts(r)))
    assert parts(r) == {broker.cluster.topic_id("rx-2"): [0]}


def test_offset_commit_checks_member_epoch(broker, client):
    broker.create_topic("t", partitions=2)
    group, a, b = new_ids()
    ra = hb(client, group, a, 0, ["t"])

    def commit(version, epoch, member=a, partition=0):
        body = {
            "group_id": group,
            "generation_id_or_member_epoch": epoch,
            "member_id": member,
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": partition,
                            "committed_offset": 5,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        }
        return client.request(OFFSET_COMMIT, version, body).topics[0].partitions[0].error_code

    assert commit(9, 2) == 0
    assert commit(9, 3) == E.StaleMemberEpochError.errno  # ahead of the member
    assert commit(9, 2, member="stranger") == E.UnknownMemberIdError.errno
    assert commit(8, 2) == E.UnsupportedVersionError.errno
    hb(client, group, b, 0, ["t"])  # epoch 3
    ra = hb(client, group, a, 2, owned=owned(parts(ra)))  # a gives one back
    assert hb(client, group, a, 2, owned=owned(parts(ra))).member_epoch == 3
    kept = parts(ra)[broker.cluster.topic_id("t")][0]
    assert hb(client, group, b, 3, owned=[]).error_code == 0  # b gets the other at 3
    # an older epoch: only for partitions the member has held since then (Kafka 4.4)
    assert commit(9, 2, partition=kept) == 0
    assert commit(9, 2, partition=1 - kept) == E.StaleMemberEpochError.errno
    assert commit(9, 2, member=b, partition=1 - kept) == E.StaleMemberEpochError.errno
    assert commit(9, 3, member=b, partition=1 - kept) == 0


def test_session_expiry_frees_partitions(broker, client):
    broker.create_topic("t", partitions=2)
    group, a, b = new_ids()
    hb(client, group, a, 0, ["t"])
    rb = hb(client, group, b, 0, ["t"])

    def b_has_everything():
        nonlocal rb
        rb = hb(
            client, group, b, rb.member_epoch, owned=owned(parts(rb)) if rb.assignment else None
        )
        return rb.assignment is not None and count(parts(rb)) == 2

    wait_until(
        b_has_everything, timeout=20, what="b owning both partitions after a expired", interval=0.2
    )


def test_restart_keeps_the_group(tmp_path):
    with MiniBroker(log_dir=tmp_path / "r", config=CONFIG) as b:
        b.create_topic("t", partitions=3)
        group, a, _ = new_ids()
        c = RawKafkaClient(b.bootstrap)
        r = hb(c, group, a, 0, ["t"])
        c.close()
        before = parts(r)
    with MiniBroker(log_dir=tmp_path / "r", config=CONFIG) as b:
        c = RawKafkaClient(b.bootstrap)
        again = hb(
            c,
            group,
            a,
            2,
            owned=owned(before),
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["t"],
        )
        c.close()
    assert again.error_code == 0 and again.member_epoch == 2 and parts(again) == before


def test_assignment_waits_for_the_assignment_interval(tmp_path):
    config = dict(CONFIG, **{"group.consumer.assignment.interval.ms": "1500"})
    with MiniBroker(log_dir=tmp_path / "i", config=config) as b:
        b.create_topic("t", partitions=2)
        group, a, m = new_ids()
        c = RawKafkaClient(b.bootstrap)
        try:
            ra = hb(c, group, a, 0, ["t"])
            rm = hb(c, group, m, 0, ["t"])  # within the interval: the old target
            assert (ra.member_epoch, rm.member_epoch, count(parts(rm))) == (2, 2, 0)

            def describe():
                return c.request(
                    CONSUMER_GROUP_DESCRIBE,
                    1,
                    {"group_ids": [group], "include_authorized_operations": False},
                ).groups[0]

            assert describe().group_state == "Assigning"

            def assigned():
                hb(c, group, m, 2, owned=[])  # a heartbeat after the interval
                return describe().assignment_epoch == 3

            wait_until(
                assigned,
                timeout=20,
                interval=0.2,
                what="the target assignment computed once the interval passed",
            )
            assert hb(c, group, a, 2, owned=owned(parts(ra))).member_epoch == 2  # revoking
        finally:
            c.close()


def test_member_that_does_not_revoke_in_time_is_fenced(broker, client):
    broker.create_topic("t", partitions=2)
    group, a, b = new_ids()
    ra = hb(client, group, a, 0, ["t"], rebalance_timeout_ms=1000)
    hb(client, group, b, 0, ["t"])
    asked = hb(client, group, a, 2, owned=owned(parts(ra)))
    assert asked.member_epoch == 2 and count(parts(asked)) == 1  # asked to give one back
    # a keeps reporting both partitions: after its rebalance timeout it is fenced
    wait_until(
        lambda: (
            hb(client, group, a, 2, owned=owned(parts(ra))).error_code
            == E.UnknownMemberIdError.errno
        ),
        timeout=20,
        interval=0.2,
        what="a fenced after its rebalance timeout",
    )
    rb = hb(client, group, b, 3, owned=[])
    assert rb.member_epoch == 4 and count(parts(rb)) == 2


def _classic_member(client, group):
    """A classic consumer (JoinGroup v3: no member id round trip, then SyncGroup as leader)."""
    sub = encode_subscription(["t"], None)
    joined = client.request(
        JOIN_GROUP,
        3,
        {
            "group_id": group,
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": sub}],
        },
    )
    assert joined.error_code == 0
    return joined


@pytest.mark.parametrize("policy", ["disabled", "downgrade", "upgrade", "bidirectional"])
def test_migration_policy_decides_whether_a_classic_group_upgrades(tmp_path, policy):
    config = dict(CONFIG, **{"group.consumer.migration.policy": policy})
    with MiniBroker(log_dir=tmp_path / policy, config=config) as b:
        b.create_topic("t", partitions=2)
        c = RawKafkaClient(b.bootstrap)
        group, a, _ = new_ids()
        classic = _classic_member(c, group)
        r = hb(c, group, a, 0, ["t"])
        if policy in ("disabled", "downgrade"):  # Kafka: the classic group stays
            assert r.error_code == E.GroupIdNotFoundError.errno
            assert r.error_message == f"Group {group} is not a consumer group"
        else:  # a consumer group now; the classic member is told to join again
            assert r.error_code == 0 and r.member_epoch == 2
            beat = c.request(
                HEARTBEAT,
                3,
                {
                    "group_id": group,
                    "generation_id": classic.generation_id,
                    "member_id": classic.member_id,
                },
            )
            assert beat.error_code == E.RebalanceInProgressError.errno
        c.close()


def test_an_unknown_migration_policy_is_refused(tmp_path):
    config = dict(CONFIG, **{"group.consumer.migration.policy": "sideways"})
    with pytest.raises(ValueError, match="group.consumer.migration.policy: 'sideways'"):
        MiniBroker(log_dir=tmp_path / "p", config=config).start()
