"""Static membership (KIP-345) in the GroupCoordinator: instance ids, restarts without a
rebalance, fencing, LeaveGroup by instance id, session expiry."""

from __future__ import annotations

import time

import pytest

from kclient.broker.coordinator import GroupCoordinator
from kclient.broker.group import PREPARING_REBALANCE, STABLE, JoinRequest
from kclient.consumer.group_protocol import encode_subscription
from kclient.protocol import errors as E

FENCED = E.FencedInstanceIdError.errno
UNKNOWN_MEMBER_ID = E.UnknownMemberIdError.errno
REBALANCE_IN_PROGRESS = E.RebalanceInProgressError.errno
WAIT = 5
CONFIG = {"group.min.session.timeout.ms": "50", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture
def coord(tmp_path):
    with GroupCoordinator(tmp_path, 0, CONFIG) as c:
        yield c


def join(coord, member_id="", instance=None, topics=("t",), session=10_000, client="c", owned=None):
    meta = encode_subscription(list(topics), b"", owned, -1 if owned is None else 3)
    return coord.join_group(
        JoinRequest(
            "g",
            member_id,
            "consumer",
            [("range", meta)],
            session,
            -1,
            client,
            group_instance_id=instance,
            require_known_member=True,
        )
    )


def stable_pair(coord, session=10_000):
    """Dynamic leader l and static follower s (instance "i1"), Stable with assignments."""
    rl = join(coord, client="l", session=session).result(WAIT)
    if rl["error_code"]:  # v4: the member id comes first
        rl = join(coord, rl["member_id"], client="l", session=session).result(WAIT)
    fs = join(coord, instance="i1", client="s", session=session)
    fl = join(coord, rl["member_id"], client="l", session=session)
    rl, rs = fl.result(WAIT), fs.result(WAIT)
    assert rl["error_code"] == rs["error_code"] == 0 and rl["leader"] == rl["member_id"]
    gen = rl["generation_id"]
    f = coord.sync_group("g", gen, rs["member_id"], group_instance_id="i1")
    coord.sync_group("g", gen, rl["member_id"], {rl["member_id"]: b"L", rs["member_id"]: b"S"})
    assert f.result(WAIT)["assignment"] == b"S"
    return rl, rs


def test_static_restart_takes_over_without_a_rebalance(coord):
    rl, rs = stable_pair(coord)
    gen = rl["generation_id"]
    # the restarted process: same instance id, no member id, owned partitions now empty
    r2 = join(coord, instance="i1", client="s2", owned={}).result(WAIT)
    assert r2["error_code"] == 0 and r2["member_id"] != rs["member_id"]
    assert r2["generation_id"] == gen and r2["leader"] == rl["member_id"] and r2["members"] == []
    assert coord.group_state("g") == STABLE
    s = coord.sync_group("g", gen, r2["member_id"], group_instance_id="i1").result(WAIT)
    assert s["error_code"] == 0 and s["assignment"] == b"S"
    # the leader heard nothing: its heartbeat is clean, the generation unchanged
    assert coord.heartbeat("g", gen, rl["member_id"]) == 0
    assert coord.describe_group("g")["generation_id"] == gen
    # the old member id is fenced everywhere
    assert coord.heartbeat("g", gen, rs["member_id"], "i1") == FENCED
    assert (
        coord.sync_group("g", gen, rs["member_id"], group_instance_id="i1").result(WAIT)[
            "error_code"
        ]
        == FENCED
    )
    assert join(coord, rs["member_id"], instance="i1").result(WAIT)["error_code"] == FENCED
    assert coord.commit_offsets("g", gen, rs["member_id"], {}, group_instance_id="i1") == FENCED
    assert coord.heartbeat("g", gen, r2["member_id"], "i1") == 0
    assert coord.commit_offsets("g", gen, r2["member_id"], {}, group_instance_id="i1") == 0


def test_static_restart_with_other_topics_keeps_the_generation(coord):
    """Kafka rebalances a Stable group on a static restart only when the group's protocol
    would change, not for other topics (the leader notices those on its own)."""
    rl, rs = stable_pair(coord)
    r2 = join(coord, instance="i1", topics=("t", "u")).result(WAIT)
    assert r2["error_code"] == 0 and r2["generation_id"] == rl["generation_id"]
    assert coord.group_state("g") == STABLE
    assert coord.heartbeat("g", rl["generation_id"], rl["member_id"]) == 0


def test_static_restart_with_another_protocol_rebalances(coord):
    meta = encode_subscription(["t"], b"", None, -1)
    both = [("range", meta), ("roundrobin", meta)]

    def member(member_id="", instance=None, protocols=both):
        return coord.join_group(
            JoinRequest(
                "g",
                member_id,
                "consumer",
                protocols,
                10_000,
                -1,
                "c",
                group_instance_id=instance,
                require_known_member=True,
            )
        )

    lid = member().result(WAIT)["member_id"]  # v4: the member id comes first
    fs, fl = member(instance="i1"), member(lid)
    rs, rl = fs.result(WAIT), fl.result(WAIT)
    assert rl["protocol_name"] == "range"
    gen, leader = rl["generation_id"], rl["leader"]
    sids = {lid: None, rs["member_id"]: "i1"}
    futures = [
        coord.sync_group(
            "g",
            gen,
            m,
            {lid: b"L", rs["member_id"]: b"S"} if m == leader else {},
            group_instance_id=i,
        )
        for m, i in sids.items()
    ]
    assert all(f.result(WAIT)["error_code"] == 0 for f in futures)
    member(instance="i1", protocols=[("roundrobin", meta)])  # the group's protocol must change
    assert coord.group_state("g") == PREPARING_REBALANCE
    assert coord.heartbeat("g", gen, lid) == REBALANCE_IN_PROGRESS
    r = member(lid).result(WAIT)
    assert r["generation_id"] == gen + 1 and r["protocol_name"] == "roundrobin"


def test_static_leader_restart_keeps_the_generation(coord):
    """JoinGroup before v9: the restarted leader is told the previous leader id, so it runs no
    assignment; the generation and its assignment stay."""
    r = join(coord, instance="lead").result(WAIT)
    gen = r["generation_id"]
    coord.sync_group(
        "g", gen, r["member_id"], {r["member_id"]: b"X"}, group_instance_id="lead"
    ).result(WAIT)
    r2 = join(coord, instance="lead").result(WAIT)
    assert r2["error_code"] == 0 and r2["generation_id"] == gen and r2["members"] == []
    assert r2["leader"] == r["member_id"] != r2["member_id"]
    assert coord.group_state("g") == STABLE
    s = coord.sync_group("g", gen, r2["member_id"], group_instance_id="lead").result(WAIT)
    assert s["error_code"] == 0 and s["assignment"] == b"X"
    assert coord.describe_group("g")["leader"] == r2["member_id"]


def test_leave_group_by_instance_id_and_fencing(coord):
    rl, rs = stable_pair(coord)
    assert coord.leave_group("g", [("", "nobody")]) == (0, [UNKNOWN_MEMBER_ID])
    assert coord.leave_group("g", [("someone-else", "i1")]) == (0, [FENCED])
    assert coord.leave_group("g", [("", "i1")]) == (0, [0])
    assert coord.group_state("g") == PREPARING_REBALANCE
    assert rs["member_id"] not in coord.describe_group("g")["members"]
    # the instance id is free again: a new static member joins as new
    r = join(coord, instance="i1")
    rl2 = join(coord, rl["member_id"]).result(WAIT)
    assert r.result(WAIT)["error_code"] == 0 and rl2["generation_id"] == rl["generation_id"] + 1


def test_static_member_session_expiry_rebalances(coord):
    rl, rs = stable_pair(coord, session=300)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # only the leader heartbeats
        if coord.heartbeat("g", rl["generation_id"], rl["member_id"]) == REBALANCE_IN_PROGRESS:
            break
        time.sleep(0.05)
    assert coord.group_state("g") == PREPARING_REBALANCE
    assert rs["member_id"] not in coord.describe_group("g")["members"]
    r = join(coord, rl["member_id"], session=300).result(WAIT)
    assert r["generation_id"] == rl["generation_id"] + 1 and len(r["members"]) == 1
