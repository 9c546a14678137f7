"""Share groups (KIP-932) on the mini-broker over the wire: heartbeats and the assignment,
share sessions, acquisition with delivery counts, release to another member, reject and
archive, lock expiry, ListGroups / ShareGroupDescribe / the offsets admin APIs, group configs,
and the share-partition state surviving a broker restart."""

from __future__ import annotations

import pytest

from kclient import Producer
from kclient.broker import MiniBroker
from kclient.protocol import error_codes as E
from kclient.protocol.apis import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_GROUPS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_CONFIGS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    LIST_GROUPS,
    SHARE_GROUP_DESCRIBE,
)
from tests.waiting import wait_until

from .share_support import ACCEPT, REJECT, RELEASE, ShareMember, acquired, set_group_config, values

TOPIC = "jobs"
CONFIG = {
    "group.share.min.record.lock.duration.ms": "100",
    "group.share.min.session.timeout.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with MiniBroker(log_dir=tmp_path_factory.mktemp("share"), config=CONFIG) as b:
        b.create_topic(TOPIC, partitions=2)
        with Producer(bootstrap_servers=b.bootstrap, producer_type="sync") as p:
            for i in range(20):
                p.produce(TOPIC, f"job-{i}".encode(), partition=i % 2)
            p.flush()
        yield b


def one_record_topic(broker, topic):
    broker.create_topic(topic)
    with Producer(bootstrap_servers=broker.bootstrap, producer_type="sync") as p:
        p.produce(topic, b"job")
        p.flush()


def member(broker, raw_client, group, name):
    return ShareMember(raw_client(broker.bootstrap), group, name)


def test_heartbeat_assigns_every_partition_to_every_member(broker, raw_client):
    a, b = (member(broker, raw_client, "hb", n) for n in ("a", "b"))
    ra = a.heartbeat([TOPIC])
    tid = broker.cluster.topic_id(TOPIC)
    assert (ra.error_code, ra.member_id, ra.member_epoch) == (0, "a", 1)
    assert [(t.topic_id, t.partitions) for t in ra.assignment.topic_partitions] == [(tid, [0, 1])]
    rb = b.heartbeat([TOPIC])
    assert rb.member_epoch == 2 and rb.assignment.topic_partitions[0].partitions == [0, 1]
    assert a.heartbeat().assignment is None  # nothing new for a
    assert a.heartbeat(epoch=7).error_code == E.FencedMemberEpochError.errno
    d = a.client.request(SHARE_GROUP_DESCRIBE, 1, {"group_ids": ["hb", "nope"]})
    [hb, nope] = d.groups
    assert (hb.group_state, sorted(m.member_id for m in hb.members)) == ("Stable", ["a", "b"])
    assert hb.members[0].assignment.topic_partitions[0].topic_name == TOPIC
    assert nope.error_code == E.GroupIdNotFoundError.errno
    listed = a.client.request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
    assert ("hb", "share", "Stable") in [
        (g.group_id, g.group_type, g.group_state) for g in listed.groups
    ]
    classic = a.client.request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["classic"]})
    assert "hb" not in [g.group_id for g in classic.groups]
    assert b.heartbeat(epoch=-1).error_code == 0  # b leaves
    assert a.heartbeat().assignment is None


def test_release_goes_to_another_member_reject_archives(broker, raw_client):
    group = "work"
    a, b = (member(broker, raw_client, group, n) for n in ("a", "b"))
    assert set_group_config(a.client, group, share_auto_offset_reset="earliest").error_code == 0
    tid = broker.cluster.topic_id(TOPIC)
    a.heartbeat([TOPIC]), b.heartbeat([TOPIC])
    first = a.fetch(tid, [0, 1])
    assert acquired(first) == {0: [(0, 9, 1)], 1: [(0, 9, 1)]}
    assert values(first)[0][:2] == [(0, b"job-0"), (1, b"job-2")]
    assert acquired(b.fetch(tid, [0, 1])) == {}  # all locked by a
    ack = a.acknowledge(tid, {0: [(0, 0, RELEASE), (1, 1, REJECT), (2, 9, ACCEPT)]})
    assert [p.error_code for t in ack.responses for p in t.partitions] == [0]
    assert acquired(b.fetch(tid, [0, 1])) == {0: [(0, 0, 2)]}  # one more delivery
    bad = b.acknowledge(tid, {1: [(0, 0, ACCEPT)]})  # held by a, not b
    assert bad.responses[0].partitions[0].error_code == E.InvalidRecordStateError.errno
    assert b.acknowledge(tid, {0: [(0, 0, ACCEPT)]}).responses[0].partitions[0].error_code == 0
    piggy = a.fetch(tid, [0, 1], acks={1: [(0, 9, ACCEPT)]})  # acknowledged in a fetch
    assert {
        p.partition_index: p.acknowledge_error_code for t in piggy.responses for p in t.partitions
    } == {0: 0, 1: 0}
    assert acquired(piggy) == {}
    d = a.client.request(
        DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": group, "topics": None}]}
    )
    starts = {p.partition_index: (p.start_offset, p.lag) for p in d.groups[0].topics[0].partitions}
    assert starts == {0: (10, 0), 1: (10, 0)}


def test_lock_expiry_and_delivery_limit_archive(broker, raw_client):
    group, topic = "flaky", "flaky-jobs"
    one_record_topic(broker, topic)
    a, b = (member(broker, raw_client, group, n) for n in ("a", "b"))
    set_group_config(
        a.client,
        group,
        share_auto_offset_reset="earliest",
        share_record_lock_duration_ms="300",
        share_delivery_count_limit="2",
    )
    tid = broker.cluster.topic_id(topic)
    a.heartbeat([topic]), b.heartbeat([topic])
    assert acquired(a.fetch(tid, [0])) == {0: [(0, 0, 1)]}
    got = wait_until(
        lambda: acquired(b.fetch(tid, [0])),
        timeout=10,
        interval=0.05,
        what="the expired lock's record to come back",
    )
    assert got == {0: [(0, 0, 2)]}  # the second delivery
    late = a.acknowledge(tid, {0: [(0, 0, ACCEPT)]})  # a's lock is gone
    assert late.responses[0].partitions[0].error_code == E.InvalidRecordStateError.errno
    wait_until(
        lambda: broker.share.start_offsets(group, [(topic, 0)])[(topic, 0)][0] == 1,
        timeout=10,
        interval=0.05,
        what="the record archived after its second lock",
    )
    assert acquired(a.fetch(tid, [0])) == {}  # never delivered again


def test_session_epochs(broker, raw_client):
    a = member(broker, raw_client, "sess", "a")
    a.heartbeat([TOPIC])
    tid = broker.cluster.topic_id(TOPIC)
    assert a.fetch(tid, [0], epoch=5).error_code == E.ShareSessionNotFoundError.errno
    a.fetch(tid, [0])
    assert a.fetch(tid, [0], epoch=7).error_code == E.InvalidShareSessionEpochError.errno
    assert (
        a.fetch(tid, [0], acks={0: [(0, 0, ACCEPT)]}, epoch=0).error_code
        == E.InvalidRequestError.errno
    )


def test_group_configs_and_offset_admin(broker, raw_client):
    group = "admin"
    a = member(broker, raw_client, group, "a")
    bad = set_group_config(a.client, group, share_auto_offset_reset="sometimes")
    assert bad.error_code == E.InvalidConfigurationError.errno
    set_group_config(a.client, group, share_auto_offset_reset="earliest")
    described = a.client.request(
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": group,
                    "configuration_keys": ["share.auto.offset.reset"],
                }
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    assert [(c.name, c.value) for c in described.results[0].configs] == [
        ("share.auto.offset.reset", "earliest")
    ]
    a.heartbeat([TOPIC])
    refused = a.client.request(
        ALTER_SHARE_GROUP_OFFSETS,
        0,
        {
            "group_id": group,
            "topics": [
                {"topic_name": TOPIC, "partitions": [{"partition_index": 0, "start_offset": 5}]}
            ],
        },
    )
    assert refused.error_code == E.NonEmptyGroupError.errno
    a.heartbeat(epoch=-1)
    r = a.client.request(
        ALTER_SHARE_GROUP_OFFSETS,
        0,
        {
            "group_id": group,
            "topics": [
                {"topic_name": TOPIC, "partitions": [{"partition_index": 0, "start_offset": 5}]}
            ],
        },
    )
    assert r.responses[0].partitions[0].error_code == 0
    assert broker.share.start_offsets(group, [(TOPIC, 0)]) == {(TOPIC, 0): (5, 5)}
    a.epoch = 0
    a.heartbeat([TOPIC])
    assert acquired(a.fetch(broker.cluster.topic_id(TOPIC), [0]))[0] == [(5, 9, 1)]
    a.heartbeat(epoch=-1)
    d = a.client.request(
        DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": TOPIC}]}
    )
    assert (d.error_code, d.responses[0].error_code) == (0, 0)
    assert broker.share.start_offsets(group, [(TOPIC, 0)]) == {(TOPIC, 0): (-1, -1)}
    gone = a.client.request(DELETE_GROUPS, 2, {"groups_names": [group]})
    assert gone.results[0].error_code == 0 and not broker.share.is_share_group(group)


def test_state_survives_a_restart(tmp_path, raw_client):
    with MiniBroker(log_dir=tmp_path, config=CONFIG) as b:
        b.create_topic(TOPIC)
        tid = b.cluster.topic_id(TOPIC)
        with Producer(bootstrap_servers=b.bootstrap, producer_type="sync") as p:
            for i in range(6):
                p.produce(TOPIC, f"r{i}".encode())
            p.flush()
        a = ShareMember(raw_client(b.bootstrap), "keep", "a")
        set_group_config(a.client, "keep", share_auto_offset_reset="earliest")
        a.heartbeat([TOPIC])
        assert acquired(a.fetch(tid, [0])) == {0: [(0, 5, 1)]}
        a.acknowledge(tid, {0: [(0, 1, ACCEPT), (2, 2, RELEASE), (3, 3, ACCEPT)]})
        b.stop()
        b.start()
        assert b.cluster.topic_id(TOPIC) == tid
        a = ShareMember(raw_client(b.bootstrap), "keep", "a2")
        a.heartbeat([TOPIC])
        # 0-1 and 3 accepted; 2 released (one delivery); 4-5 were locked: available again
        assert acquired(a.fetch(tid, [0])) == {0: [(2, 2, 2), (4, 5, 2)]}
        assert b.share.start_offsets("keep", [(TOPIC, 0)])[(TOPIC, 0)][0] == 2


def test_state_survives_kill_9(tmp_path, raw_client):
    from kclient.protocol.apis import METADATA
    from kclient.testing import free_port

    from .test_server_crash import BrokerProcess

    proc = BrokerProcess(tmp_path / "data", free_port())
    (tmp_path / "data").mkdir()
    proc.start()
    try:
        with Producer(bootstrap_servers=proc.bootstrap, producer_type="sync") as p:
            for i in range(6):
                p.produce("crashjobs", f"r{i}".encode())
            p.flush()
        client = raw_client(proc.bootstrap)
        md = client.request(
            METADATA,
            12,
            {
                "topics": [{"name": "crashjobs", "topic_id": bytes(16)}],
                "allow_auto_topic_creation": False,
            },
        )
        tid = md.topics[0].topic_id
        a = ShareMember(client, "crashers", "a")
        set_group_config(client, "crashers", share_auto_offset_reset="earliest")
        a.heartbeat(["crashjobs"])
        assert acquired(a.fetch(tid, [0])) == {0: [(0, 5, 1)]}
        r = a.acknowledge(tid, {0: [(0, 1, ACCEPT), (2, 2, REJECT)]})
        assert r.responses[0].partitions[0].error_code == 0
        proc.kill9()
        proc.start()
        client = raw_client(proc.bootstrap)
        md = client.request(
            METADATA,
            12,
            {
                "topics": [{"name": "crashjobs", "topic_id": bytes(16)}],
                "allow_auto_topic_creation": False,
            },
        )
        assert md.topics[0].topic_id == tid
        b = ShareMember(client, "crashers", "b")
        b.heartbeat(["crashjobs"])
        assert acquired(b.fetch(tid, [0])) == {0: [(3, 5, 2)]}
        d = client.request(
            DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": "crashers", "topics": None}]}
        )
        assert d.groups[0].topics[0].partitions[0].start_offset == 3
    finally:
        proc.cleanup()


def test_read_committed_leaves_aborted_and_open_transactions_out(tmp_path, raw_client):
    from .txn_support import TXN_CONFIG, committed_aborted_open

    with MiniBroker(log_dir=tmp_path, config={**TXN_CONFIG, **CONFIG}) as b:
        b.create_topic("tx", 1)  # c0 c1 (committed) marker, a0 (aborted) marker, plain, o0
        committed_aborted_open(b, "tx", "tx-id")
        tid = b.cluster.topic_id("tx")
        client = raw_client(b.bootstrap)
        set_group_config(
            client, "rc", share_auto_offset_reset="earliest", share_isolation_level="read_committed"
        )
        set_group_config(client, "ru", share_auto_offset_reset="earliest")
        committed, uncommitted = ShareMember(client, "rc", "a"), ShareMember(client, "ru", "a")
        committed.heartbeat(["tx"]), uncommitted.heartbeat(["tx"])
        got = committed.fetch(tid, [0])
        assert acquired(got) == {0: [(0, 1, 1), (5, 5, 1)]}
        assert [v for _, v in values(got)[0]] == [b"c0", b"c1", b"plain"]
        assert acquired(uncommitted.fetch(tid, [0])) == {0: [(0, 1, 1), (3, 3, 1), (5, 6, 1)]}


def test_a_member_whose_session_times_out_loses_its_records(broker, raw_client):
    group, topic = "dead", "dead-jobs"
    one_record_topic(broker, topic)
    a, b = (member(broker, raw_client, group, n) for n in ("a", "b"))
    set_group_config(
        a.client, group, share_auto_offset_reset="earliest", share_session_timeout_ms="1000"
    )
    tid = broker.cluster.topic_id(topic)
    a.heartbeat([topic]), b.heartbeat([topic])
    assert acquired(a.fetch(tid, [0])) == {0: [(0, 0, 1)]}  # a then stops heartbeating

    def b_alive_and_fetching():
        b.heartbeat()
        return acquired(b.fetch(tid, [0]))

    assert wait_until(
        b_alive_and_fetching,
        timeout=15,
        interval=0.1,
        what="a's record released at its session timeout",
    ) == {0: [(0, 0, 2)]}
    assert list(broker.share.describe(group).members) == ["b"]
    assert a.fetch(tid, [0]).error_code == E.ShareSessionNotFoundError.errno


def test_a_consumer_group_id_is_not_a_share_group(broker, raw_client):
    from kclient.protocol.apis import CONSUMER_GROUP_HEARTBEAT

    client = raw_client(broker.bootstrap)
    joined = client.request(
        CONSUMER_GROUP_HEARTBEAT,
        1,
        {
            "group_id": "kip848",
            "member_id": "c1",
            "member_epoch": 0,
            "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": [TOPIC],
            "topic_partitions": [],
        },
    )
    assert joined.error_code == 0
    share = ShareMember(client, "kip848", "s1").heartbeat([TOPIC])
    assert share.error_code == E.GroupIdNotFoundError.errno
    assert not broker.share.is_share_group("kip848")
