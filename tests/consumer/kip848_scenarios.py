"""KIP-848 (``group.protocol=consumer``) scenarios run against Kafka 4's own group coordinator
(integration/test_consumer_group_kip848.py) and the mini-broker's
(tests/consumer/test_kip848_members.py): the core's ConsumerGroupHeartbeat conversations through
both drivers, then kclient members sharing a topic while a producer writes (joining, leaving,
killed, a static member's restart), nothing lost or doubled, and mixed groups with Java's
KafkaConsumer and confluent-kafka.  Both brokers run at test speed (heartbeat 500 ms, session
10 s: kclient.testing.kafka.KIP848_TEST_SPEED).

``server`` is anything with a ``bootstrap``; ``make_topic(partitions)`` creates a topic and
returns its name."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kclient import TopicPartition
from kclient.admin import AdminClient
from kclient.connection import ConnectionSettings
from kclient.core import consumer_group as cg
from kclient.core.coordinator import CoordinatorState
from kclient.core.offsets import commit_offsets, fetch_offsets
from kclient.errors import FencedMemberEpochError, StaleMemberEpochError, UnknownMemberIdError
from kclient.protocol.apis import CONSUMER_GROUP_HEARTBEAT
from kclient.testing import KafkaTools, java_clients_problem
from tests.conftest import CliRunner
from tests.consumer.aio_member import BlockingAIOConsumer, aio_member
from tests.consumer.coop_scenario import Writer, member, members, run_handover
from tests.consumer.helpers import produce_spread
from tests.consumer.java_member import ConfluentMember, JavaMember, run_mixed_group
from tests.consumer.test_consumer_cooperative import check_once_each
from tests.consumer.test_mixed_java_group import check_mixed
from tests.core.conftest import driver
from tests.needs import missing
from tests.waiting import wait_until


def conf(server, auto_commit: bool = True) -> dict:
    return {
        "bootstrap.servers": server.bootstrap,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": auto_commit,
        "auto.commit.interval.ms": 500,
        "fetch.wait.max.ms": 50,
        "group.protocol": "consumer",
    }


def drivers(server: Any, kind: str) -> Callable[[Any], Any]:
    """``drive(conversation_factory)`` on a fresh connection to ``server`` by ``kind``."""
    return driver(kind, server.bootstrap, ConnectionSettings(client_id="kip848-core"))


def _until_stable(m: cg.ConsumerMember, coord: CoordinatorState):
    """Heartbeats (the coordinator's interval apart) until the member holds its assignment."""
    for _ in range(60):
        yield from cg.heartbeat(m, coord)
        if m.state == cg.RECONCILING:
            if m.unresolved():
                yield from cg.resolve_topics(m)
            cg.acknowledge(m, cg.reconcile(m))
            continue
        if m.state == cg.STABLE and m.owned:
            return m
        from kclient.core.steps import Sleep

        yield Sleep(m.wait_s())
    raise AssertionError(f"not stable: {m}")


def join_assignment_ack_and_leave_through_both_drivers(server, make_topic, drive):
    topic = make_topic(3)
    m = cg.ConsumerMember(f"g-{uuid.uuid4().hex[:8]}", server_assignor="uniform")
    m.subscribe([topic])
    coord = CoordinatorState(m.group, 0, 30, 0.5)  # a fresh cluster: not ready at once
    drive(lambda: _until_stable(m, coord))
    assert m.owned == {(topic, p) for p in range(3)}
    assert m.epoch >= 1 and m.interval_ms == 500
    drive(lambda: cg.leave(m, coord))
    assert (m.state, m.owned) == (cg.UNSUBSCRIBED, frozenset())


def a_stale_epoch_is_fenced_and_an_unknown_member_refused(server, make_topic, drive):
    topic = make_topic(1)
    group = f"g-{uuid.uuid4().hex[:8]}"
    m = cg.ConsumerMember(group)
    m.subscribe([topic])
    coord = CoordinatorState(group, 0, 30, 0.5)
    drive(lambda: _until_stable(m, coord))

    def beat(member_id, epoch):
        def conversation():
            from kclient.core.coordinator import coordinated

            return (
                yield from coordinated(
                    coord,
                    CONSUMER_GROUP_HEARTBEAT,
                    {"group_id": group, "member_id": member_id, "member_epoch": epoch},
                    lambda r: 0,
                )
            )

        return drive(conversation)

    assert beat(m.member_id, m.epoch + 5).error_code == FencedMemberEpochError.errno
    assert beat(cg.new_member_id(), 1).error_code == UnknownMemberIdError.errno
    # the core's answer to fencing: lost, then joined again with epoch 0 and the same id
    cg.apply_answer(m, beat(m.member_id, m.epoch + 5), m.owned_ids)
    assert m.state == cg.FENCED
    member_id = m.member_id
    assert cg.lost(m) == {(topic, 0)}
    drive(lambda: _until_stable(m, coord))
    assert m.member_id == member_id and m.owned == {(topic, 0)}
    drive(lambda: cg.leave(m, coord))


def offset_fetch_names_the_member(server, make_topic, drive):
    """OffsetFetch v9 under the consumer protocol: the member's id and epoch go with the
    fetch; the coordinator answers the offsets, STALE_MEMBER_EPOCH for another epoch
    (retried, then raised) and UNKNOWN_MEMBER_ID for a stranger."""
    topic = make_topic(1)
    m = cg.ConsumerMember(f"g-{uuid.uuid4().hex[:8]}")
    m.subscribe([topic])
    coord = CoordinatorState(m.group, 0, 30, 0.1)
    drive(lambda: _until_stable(m, coord))
    tp = (topic, 0)
    drive(lambda: commit_offsets(coord, m.group, {tp: 7}, m.generation))
    assert drive(lambda: fetch_offsets(coord, m.group, [tp], m.generation)) == {tp: 7}
    ahead = lambda: (m.epoch + 1, m.member_id)  # noqa: E731
    with pytest.raises(StaleMemberEpochError):
        drive(lambda: fetch_offsets(coord, m.group, [tp], ahead, retries=1))
    with pytest.raises(UnknownMemberIdError):
        drive(lambda: fetch_offsets(coord, m.group, [tp], lambda: (m.epoch, "stranger")))
    drive(lambda: cg.leave(m, coord))
    # not in the group any more: asked as no member, as an admin would
    assert drive(lambda: fetch_offsets(coord, m.group, [tp], m.generation)) == {tp: 7}


def kill(m) -> None:
    """Stop a member's heartbeats (and polls) as a killed process would: its session expires."""
    m.stop(close=False)
    consumer = m.consumer
    if isinstance(consumer, BlockingAIOConsumer):
        consumer._loop.call_soon_threadsafe(consumer.aio._heartbeat.cancel)
    else:
        consumer._kip848.stop()


def a_member_joins_a_running_member(server, make_topic, driver: str = "asyncio"):
    topic = make_topic(4)
    run = run_handover(server.bootstrap, topic, 4, conf(server), members(driver))
    # (an empty first assignment, as the coordinator may answer a join, is reported too)
    a = [(kind, ps) for _, who, kind, ps in run.events if who == "a" and (ps or kind != "assigned")]
    b = [(kind, ps) for _, who, kind, ps in run.events if who == "b"]
    assert a[0] == ("assigned", [0, 1, 2, 3]), run.events
    # incremental by construction: only the moved partitions are revoked, none is lost
    assert [ps for kind, ps in a if kind == "revoked"] == [sorted(run.moved)]
    assert not any(kind == "lost" for kind, _ in a + b)
    assert sorted(p for kind, ps in b if kind == "assigned" for p in ps) == sorted(run.moved)
    print(
        f"KIP-848 handover: rebalance {run.rebalance_s:.3f}s, kept max gap "
        f"{run.kept_max_gap_s:.3f}s"
    )
    check_once_each(run)


def three_members_join_leave_and_one_is_killed(server, make_topic):
    """a, b, c share 6 partitions; c leaves (close), b is killed (no heartbeats: its session
    expires), a ends with everything; every record read once except after b's death, where
    what b read but never committed is read again by its successor (at least once).  a and c
    are kclient.Consumers, b an AIOConsumer."""
    topic = make_topic(6)
    group = f"three-{uuid.uuid4().hex[:8]}"
    c_conf = dict(conf(server), **{"group.id": group})
    events: list = []
    writer = Writer(server.bootstrap, topic, 6, every_s=0.02)
    writer.start()
    a, b, c = (
        member("a", c_conf, events),
        aio_member("b", c_conf, events),
        member("c", c_conf, events),
    )
    try:
        for m in (a, b, c):
            m.start(topic)
        wait_until(
            lambda: [len(m.partitions()) for m in (a, b, c)] == [2, 2, 2],
            120,
            "three members with two partitions each",
        )
        c.stop()  # leaves: epoch -1
        wait_until(
            lambda: sorted(len(m.partitions()) for m in (a, b)) == [3, 3],
            120,
            "a and b share after c left",
        )
        kill(b)
        killed_at = time.monotonic()
        wait_until(lambda: len(a.partitions()) == 6, 120, "a owns everything after b expired")
        assert time.monotonic() - killed_at > 5  # the session ran out first
        sent = writer.stop()
        wait_until(
            lambda: (
                sum(len({o for m in (a, b, c) for o, _ in m.arrivals.get(p, ())}) for p in range(6))
                >= sent
            ),
            60,
            "every record read",
        )
        assert not a.errors and not c.errors
        offsets = {
            p: sorted({o for m in (a, b, c) for o, _ in m.arrivals.get(p, ())}) for p in range(6)
        }
        assert sum(len(v) for v in offsets.values()) == sent  # nothing lost
        for p, offs in offsets.items():
            assert offs == list(range(len(offs))), f"partition {p}: a gap"
        # doubles only where b died without committing
        b_parts = {p for p in range(6) if b.arrivals.get(p)}
        for p in set(range(6)) - b_parts:
            seen = [o for m in (a, c) for o, _ in m.arrivals.get(p, ())]
            assert len(seen) == len(set(seen)), f"partition {p} read twice"
        assert not any(kind == "lost" for _, who, kind, _ in events if who in "ac")
    finally:
        writer.stop()
        a.stop()
        b.consumer.close(autocommit=False)


def a_static_member_restarts_and_gets_its_partitions_back_silently(server, make_topic):
    topic = make_topic(4)
    group = f"static-{uuid.uuid4().hex[:8]}"
    base = dict(conf(server), **{"group.id": group})
    static = dict(base, **{"group.instance.id": "inst-a"})
    events: list = []
    writer = Writer(server.bootstrap, topic, 4, every_s=0.05)
    writer.start()
    b = member("b", base, events)
    a = aio_member("a", static, events)
    try:
        b.start(topic)
        a.start(topic)
        wait_until(
            lambda: len(a.partitions()) == 2 and len(b.partitions()) == 2,
            60,
            "static a and b share",
        )
        wait_until(lambda: all(a.arrivals.get(p) for p in a.partitions()), 30, "a reads")
        a_parts = a.partitions()
        a.stop(close=False)
        a.consumer.commit()
        a.consumer.close()  # static leave: epoch -2
        b_events = [e for e in events if e[1] == "b"]
        a2 = member("a2", static, events)
        a2.start(topic)
        wait_until(
            lambda: a2.partitions() == a_parts and all(a2.arrivals.get(p) for p in a_parts),
            30,
            "a2 took a's place",
        )
        assert [e for e in events if e[1] == "b"] == b_events, "b's listener was called"
        _check_described(server, group, topic, a_parts)
        sent = writer.stop()
        wait_until(
            lambda: sum(len(v) for m in (a, a2, b) for v in m.arrivals.values()) >= sent,
            60,
            "every record read",
        )
        offsets = {
            p: sorted(o for m in (a, a2, b) for o, _ in m.arrivals.get(p, ())) for p in range(4)
        }
        for p, offs in offsets.items():
            assert offs == list(range(len(offs))), f"partition {p}: duplicates or a gap"
        a2.stop()
    finally:
        writer.stop()
        b.stop()


def _check_described(server, group: str, topic: str, a_parts: set[int]) -> None:
    """describe_consumer_groups and ``kclient groups describe --members --verbose`` show the
    member epochs and current and target assignments of the stable group."""
    with AdminClient(server.bootstrap) as admin:
        d = admin.describe_consumer_groups([group])[group]
    assert (d.group_type, d.state) == ("consumer", "Stable")
    assert d.group_epoch >= 2 and d.assignment_epoch == d.group_epoch
    by_instance = {m.group_instance_id: m for m in d.members}
    assert set(by_instance) == {"inst-a", None}
    mine = {TopicPartition(topic, p) for p in a_parts}
    assert set(by_instance["inst-a"].assignment) == mine
    assert set(by_instance[None].assignment) == {TopicPartition(topic, p) for p in range(4)} - mine
    for m in d.members:
        assert m.member_epoch >= 1 and m.target_assignment == m.assignment
        assert m.member_type == "consumer" and m.subscribed_topics == (topic,)
    out = CliRunner(server.bootstrap).out("groups", "describe", group, "--members", "--verbose")
    lines = out.splitlines()
    header = next(line.split() for line in lines if "CONSUMER-ID" in line)
    assert header == [
        "GROUP",
        "CONSUMER-ID",
        "GROUP-INSTANCE-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "CURRENT-EPOCH",
        "CURRENT-ASSIGNMENT",
        "TARGET-EPOCH",
        "TARGET-ASSIGNMENT",
    ]
    row = next(line.split() for line in lines if "inst-a" in line)
    text = f"{topic}:" + ",".join(str(p) for p in sorted(a_parts))
    assert row[-4:] == [
        str(by_instance["inst-a"].member_epoch),
        text,
        str(d.assignment_epoch),
        text,
    ]


def _producer(server, topic: str):
    rounds = iter(range(1000))

    def produce(n: int) -> None:
        produce_spread(server.bootstrap, topic, 4, n, prefix=f"r{next(rounds)}")

    return produce


def mixed_group_with_javas_kafka_consumer(server, make_topic):
    """Java's KafkaConsumer (group.protocol=consumer) alone, a kclient.Consumer joins, Java
    leaves, a second Java member joins: each record counted once on one side."""
    problem = java_clients_problem()
    if problem:
        missing(problem)
    topic = make_topic(4)
    run = run_mixed_group(
        lambda group: JavaMember(KafkaTools(server.bootstrap), topic, group, "consumer"),
        topic,
        4,
        conf(server),
        _producer(server, topic),
        make=member,
    )
    check_mixed(run)


def mixed_group_with_confluent_kafka(server, make_topic):
    """The same with confluent-kafka (librdkafka, group.protocol=consumer) and an
    AIOConsumer."""
    _mixed_with_confluent(server, make_topic, "consumer", aio_member)


def _mixed_with_confluent(server, make_topic, protocol: str, make) -> None:
    """run_mixed_group with confluent-kafka members of ``protocol`` and kclient members
    ``make`` makes (group.protocol=consumer)."""
    topic = make_topic(4)
    run = run_mixed_group(
        lambda group: ConfluentMember(server.bootstrap, topic, group, protocol),
        topic,
        4,
        conf(server),
        _producer(server, topic),
        make=make,
    )
    check_mixed(run)


def classic_and_consumer_protocol_members_share_a_group(server, make_topic):
    """Online migration (KIP-848, ``group.consumer.migration.policy`` bidirectional, Kafka
    4.x's default): confluent-kafka with the classic protocol (cooperative-sticky) alone; a
    kclient.Consumer with group.protocol=consumer joins (the classic group with members
    becomes a consumer group); the classic member leaves; a second classic one joins the
    consumer group (JoinGroup to a consumer group).  Each record counted once."""
    _mixed_with_confluent(server, make_topic, "classic", member)
