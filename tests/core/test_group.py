"""Group membership and committed offsets as core conversations, through both drivers against
the mini-broker: JoinGroup with the member id the coordinator asks for, the leader's assignment,
heartbeats that report a rebalance or a lost generation, static membership and fencing,
LeaveGroup, OffsetCommit / OffsetFetch with generation checks; and the listener order."""

from __future__ import annotations

import uuid
from functools import partial

import pytest

from kclient.broker.group import JoinRequest
from kclient.consumer.group_protocol import leader_assignment, registration
from kclient.core import group as g
from kclient.core.consumer_protocol import COOPERATIVE, subscription_protocols
from kclient.core.coordinator import CoordinatorState
from kclient.core.offsets import commit_offsets, fetch_offsets
from kclient.errors import FencedInstanceIdError, IllegalGenerationError, UnknownMemberIdError
from kclient.protocol.consumer_protocol import decode_assignment, decode_subscription_full


def names():
    u = uuid.uuid4().hex[:8]
    return f"t-{u}", f"g-{u}"


def protocols(topic, strategy="range", owned=(), gen=-1):
    return subscription_protocols(
        [strategy], [topic], registration("c1", "static", {topic: 1}), owned, gen
    )


ASSIGN = partial(leader_assignment, exclude_internal=True)


def test_join_asks_again_with_the_member_id_and_the_leader_assigns_everything(drive, mini_broker):
    topic, group = names()
    mini_broker.create_topic(topic, partitions=3)
    member, coord = g.MemberState(group, 10000), CoordinatorState(group)

    def conversation():
        data = yield from g.join_and_sync(member, coord, protocols(topic), ASSIGN)
        return data, (yield from g.heartbeat(member, coord))

    data, beat = drive(conversation)
    mine, _ = decode_assignment(data)
    assert mine == {topic: [0, 1, 2]}
    assert member.member_id and member.generation_id == 1 and member.protocol == "range"
    assert coord.address is not None and coord.address.node_id == 0
    assert beat == 0


def test_heartbeat_reports_a_rebalance_then_a_lost_generation(drive, mini_broker):
    topic, group = names()
    mini_broker.create_topic(topic, partitions=2)
    member, coord = g.MemberState(group, 10000), CoordinatorState(group)
    drive(lambda: g.join_and_sync(member, coord, protocols(topic), ASSIGN))
    # another member joins (in the broker's process): a rebalance is now under way
    other = mini_broker.coordinator.join_group(
        JoinRequest(group, "", "consumer", protocols(topic), 10000, 10000)
    )
    beat = drive(lambda: g.heartbeat(member, coord))
    assert g.rejoin_reason(beat) == "revoke"
    member.generation_id += 5  # as if this member missed generations
    assert g.rejoin_reason(drive(lambda: g.heartbeat(member, coord))) == "lost"
    other.cancel()


def test_a_static_member_taking_the_instance_id_fences_the_first(drive, mini_broker):
    topic, group = names()
    mini_broker.create_topic(topic, partitions=2)
    first = g.MemberState(group, 10000, instance_id="inst-1")
    second = g.MemberState(group, 10000, instance_id="inst-1")
    coord = CoordinatorState(group)
    drive(lambda: g.join_and_sync(first, coord, protocols(topic), ASSIGN))
    old_id = first.member_id
    drive(lambda: g.join_and_sync(second, coord, protocols(topic), ASSIGN))
    assert second.member_id != old_id
    with pytest.raises(FencedInstanceIdError, match="inst-1"):
        drive(lambda: g.heartbeat(first, coord))


def test_leave_forgets_the_member_and_its_commits_are_refused(drive, mini_broker):
    topic, group = names()
    mini_broker.create_topic(topic, partitions=1)
    member, coord = g.MemberState(group, 10000), CoordinatorState(group)

    def conversation():
        yield from g.join_and_sync(member, coord, protocols(topic), ASSIGN)
        yield from commit_offsets(coord, group, {(topic, 0): 7}, member.generation)
        committed = yield from fetch_offsets(coord, group, [(topic, 0), (topic, 9)])
        stale = member.generation_id, member.member_id
        yield from g.leave(member, coord)
        try:
            yield from commit_offsets(coord, group, {(topic, 0): 8}, lambda: stale)
        except (IllegalGenerationError, UnknownMemberIdError) as exc:
            refused = exc
        else:
            refused = None
        return committed, refused

    committed, refused = drive(conversation)
    assert committed == {(topic, 0): 7, (topic, 9): -1}
    assert member.member_id == "" and member.generation_id == -1
    assert isinstance(refused, UnknownMemberIdError), "a commit of a member that left"


def test_the_cooperative_subscription_carries_owned_partitions(drive, mini_broker):
    topic, group = names()
    mini_broker.create_topic(topic, partitions=2)
    member, coord = g.MemberState(group, 10000), CoordinatorState(group)
    data = drive(lambda: g.join_and_sync(member, coord, protocols(topic, COOPERATIVE), ASSIGN))
    mine, _ = decode_assignment(data)
    change = g.take_assignment(member, ((topic, p) for p in mine[topic]))
    assert change.added == {(topic, 0), (topic, 1)} and not change.revoked
    assert not change.rejoin and member.owned_generation == member.generation_id
    meta = dict(
        subscription_protocols([COOPERATIVE], [topic], b"", member.owned, member.owned_generation)
    )[COOPERATIVE]
    sub = decode_subscription_full(meta)
    assert sub.owned_partitions == {topic: [0, 1]} and sub.generation_id == 1


def test_listener_order_eager_and_cooperative():
    eager = g.MemberState("g", 10000, protocol="range", generation_id=3)
    g.take_assignment(eager, [("t", 0), ("t", 1)])
    assert g.give_up(eager) == {("t", 0), ("t", 1)} and eager.owned_generation == -1
    coop = g.MemberState("g", 10000, protocol=COOPERATIVE, generation_id=4)
    g.take_assignment(coop, [("t", 0), ("t", 1)])
    coop.generation_id = 5
    change = g.take_assignment(coop, [("t", 1), ("t", 2)])
    assert change.revoked == {("t", 0)} and change.added == {("t", 2)} and change.rejoin
    assert coop.owned == {("t", 1), ("t", 2)} and coop.owned_generation == 5
    assert g.give_up_some(coop, [("t", 2), ("u", 0)]) == {("t", 2)}
    assert g.rejoin_reason(0) is None


def test_the_heartbeat_loop_beats_until_the_coordinator_asks_for_a_rebalance(drive, mini_broker):
    topic, group = names()
    mini_broker.create_topic(topic, partitions=2)
    member, coord = g.MemberState(group, 10000), CoordinatorState(group)
    drive(lambda: g.join_and_sync(member, coord, protocols(topic), ASSIGN))
    rejoins: list[tuple[str, int]] = []
    beats = {"n": 0}

    def active():
        beats["n"] += 1
        if beats["n"] == 3:  # two quiet beats, then another member joins
            mini_broker.coordinator.join_group(
                JoinRequest(group, "", "consumer", protocols(topic), 10000, 10000)
            )
        return True

    drive(
        lambda: g.heartbeats(
            member,
            coord,
            0.02,
            active,
            lambda how, code: rejoins.append((how, code)),
            pytest.fail,
            stopped=lambda: bool(rejoins) or beats["n"] > 50,
        )
    )
    assert rejoins == [("revoke", 27)] and beats["n"] >= 3
