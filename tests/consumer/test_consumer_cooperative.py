"""kclient.Consumer with cooperative-sticky on the mini-broker: an incremental rebalance where
the member that keeps partitions never stops consuming them."""

import uuid

import pytest

from ..waiting import LOAD_SLACK, still
from .coop_scenario import DRIVERS, members, run_handover, run_static_restart


def conf(broker, strategy):
    return {
        "bootstrap.servers": broker.bootstrap,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 500,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
        "rebalance.backoff.ms": 100,
        "fetch.wait.max.ms": 50,
        "partition.assignment.strategy": strategy,
    }


def check_once_each(run):
    """Every record produced was delivered exactly once (the moved partitions resumed at the
    offset committed when they were revoked)."""
    total = sum(len(v) for v in run.offsets.values())
    assert total == run.sent
    for p, offs in run.offsets.items():
        assert offs == list(range(len(offs))), f"partition {p}: duplicates or a gap"


@pytest.mark.parametrize("driver", DRIVERS)
def test_cooperative_handover_keeps_consuming_kept_partitions(mini_broker, driver):
    topic = f"coop-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    run = run_handover(
        mini_broker.bootstrap, topic, 4, conf(mini_broker, "cooperative-sticky"), members(driver)
    )
    a = [(kind, ps) for _, who, kind, ps in run.events if who == "a"]
    b = [(kind, ps) for _, who, kind, ps in run.events if who == "b"]
    # a: everything, then only the moved ones revoked, never a kept one; nothing lost
    assert a[0] == ("assigned", [0, 1, 2, 3])
    revoked = [ps for kind, ps in a if kind == "revoked"]
    assert revoked == [sorted(run.moved)]
    assert not any(kind == "lost" for kind, _ in a)
    assert all(not (set(ps) & run.kept) for kind, ps in a[1:] if kind == "assigned")
    # b: nothing while a still owned them, then the moved partitions; never revoked
    assert [k for k, _ in b if k != "assigned"] == []
    assert sorted(p for _, ps in b for p in ps) == sorted(run.moved)
    # listener order over a's revocation: revoked (the moved ones) before b gets them
    t_revoked = next(t for t, who, kind, _ in run.events if who == "a" and kind == "revoked")
    t_b_gets = next(t for t, who, kind, ps in run.events if who == "b" and ps)
    assert t_revoked < t_b_gets
    # a's kept partitions flowed throughout: their longest gap is a fraction of the rebalance
    print(
        f"cooperative: rebalance {run.rebalance_s:.3f}s, kept max gap "
        f"{run.kept_max_gap_s:.3f}s, min records per kept partition during it "
        f"{run.kept_records_during}"
    )
    assert run.kept_max_gap_s < max(0.5, run.rebalance_s / 2), run
    assert run.kept_records_during > 0  # each kept partition delivered while it ran
    check_once_each(run)


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("strategy", ["range"])
def test_eager_handover_for_comparison(mini_broker, strategy, driver):
    topic = f"eager-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    run = run_handover(
        mini_broker.bootstrap, topic, 4, conf(mini_broker, strategy), members(driver)
    )
    a = [(kind, ps) for _, who, kind, ps in run.events if who == "a"]
    # eager: a revokes everything, kept partitions included, before rejoining
    assert ("revoked", [0, 1, 2, 3]) in a
    print(f"eager: rebalance {run.rebalance_s:.3f}s, kept max gap {run.kept_max_gap_s:.3f}s")
    check_once_each(run)


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_static_member_restart_without_a_rebalance(mini_broker, strategy, driver):
    from kclient.errors import FencedInstanceIdError

    from .helpers import produce_spread

    topic = f"static-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    rounds = iter(range(100))

    def produce(n):
        produce_spread(mini_broker.bootstrap, topic, 4, n, prefix=f"r{next(rounds)}")

    c = dict(conf(mini_broker, strategy), **{"enable.auto.commit": False})
    run = run_static_restart(mini_broker.bootstrap, topic, 4, c, produce, members(driver))
    assert run.generation_after == run.generation_before
    assert run.first_offsets == run.committed  # resumed at the committed offsets
    a2 = [(kind, ps) for _, who, kind, ps in run.events if who == "a2"]
    assert a2[0] == ("assigned", sorted(run.moved_back))
    assert isinstance(run.fenced_error, FencedInstanceIdError)
    assert "group.instance.id 'inst-a'" in str(run.fenced_error)


def test_kept_partitions_flow_while_a_slow_member_holds_the_rebalance(mini_broker):
    """A member that does not rejoin holds the join phase until its rebalance timeout; the
    cooperative member keeps reading its partitions all along, and close() does not wait."""
    import time

    from kclient.broker.group import JoinRequest
    from kclient.consumer.group_protocol import encode_subscription

    from .coop_scenario import Writer, member
    from .helpers import wait_for

    topic, group = f"slow-{uuid.uuid4().hex[:6]}", f"slow-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=2)
    writer = Writer(mini_broker.bootstrap, topic, 2)
    writer.start()
    events: list = []
    a = member("a", dict(conf(mini_broker, "cooperative-sticky"), **{"group.id": group}), events)
    try:
        a.start(topic)
        wait_for(
            lambda: len(a.partitions()) == 2 and all(a.arrivals.get(p) for p in (0, 1)),
            timeout=30,
            message="a reads both partitions",
        )
        # a raw member joins once and never again: it holds every later join phase for 8 s
        meta = encode_subscription([topic], b"", {}, -1)
        mini_broker.coordinator.join_group(
            JoinRequest(group, "", "consumer", [("cooperative-sticky", meta)], 30000, 8000, "slow")
        )
        wait_for(
            lambda: any(kind == "revoked" for _, _, kind, _ in events),
            timeout=30,
            message="a gave one partition up for the slow member",
        )
        kept = a.partitions()
        assert len(kept) == 1
        # a's follow-up join is now held by the slow member; a keeps reading its partition
        still(
            lambda: a.consumer._joining is not None and not a.consumer._joining.done(),
            2.0,
            "a's follow-up join held by the slow member",
        )
        now = time.monotonic()
        (p,) = kept
        assert a.max_gap(p, now - 2.0, now) < 1.5  # reading stopped: the whole 2 s
        assert a.consumer._joining is not None and not a.consumer._joining.done()
        a.stop_event.set()
        a.thread.join(10)
        t0 = time.monotonic()
        a.consumer.close()
        assert time.monotonic() - t0 < LOAD_SLACK, "close() waited for the held rebalance"
    finally:
        writer.stop()
        a.stop_event.set()


def test_upgrade_path_mixed_eager_and_cooperative_members(mini_broker):
    """Kafka's rolling upgrade: a member with "cooperative-sticky,range" (eager: not every
    listed assignor is cooperative) beside one with only cooperative-sticky; the group picks
    cooperative-sticky, the eager member revokes everything before rejoining, the cooperative
    one only what moves."""
    from kclient import Consumer

    from .coop_scenario import Member
    from .helpers import wait_for

    topic, group = f"upg-{uuid.uuid4().hex[:6]}", f"upg-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    events: list = []
    eager = Member(
        "eager",
        Consumer(dict(conf(mini_broker, "cooperative-sticky,range"), **{"group.id": group})),
        events,
    )
    coop = Member(
        "coop",
        Consumer(dict(conf(mini_broker, "cooperative-sticky"), **{"group.id": group})),
        events,
    )
    try:
        assert not eager.consumer.cooperative and coop.consumer.cooperative
        coop.start(topic)
        wait_for(lambda: len(coop.partitions()) == 4, timeout=30, message="coop owns all")
        eager.start(topic)
        wait_for(
            lambda: len(coop.partitions()) == 2 and len(eager.partitions()) == 2,
            timeout=30,
            message="two each",
        )
        assert coop.consumer.membership.protocol == "cooperative-sticky"
        assert eager.consumer.membership.protocol == "cooperative-sticky"
        c = [(k, ps) for _, who, k, ps in events if who == "coop"]
        assert ("revoked", sorted(eager.partitions())) in c
        assert ("revoked", [0, 1, 2, 3]) not in c
        # the eager member's next rebalance revokes all it owns first
        kept = sorted(eager.partitions())
        coop.stop()
        wait_for(lambda: len(eager.partitions()) == 4, timeout=30, message="eager owns all")
        e = [(k, ps) for _, who, k, ps in events if who == "eager"]
        assert ("revoked", kept) in e and e[-1] == ("assigned", [0, 1, 2, 3])
    finally:
        eager.stop()
        coop.stop()
