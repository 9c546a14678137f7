"""GroupCoordinator driven directly: joins, syncs, heartbeats, expiry, leaves and commits."""

from __future__ import annotations

import time

import pytest

from kclient.broker.coordinator import GroupCoordinator
from kclient.broker.group import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    JoinRequest,
)
from kclient.broker.offsets import OffsetEntry
from kclient.protocol import errors as E
from tests.waiting import wait_until

ILLEGAL_GENERATION = E.IllegalGenerationError.errno
UNKNOWN_MEMBER_ID = E.UnknownMemberIdError.errno
REBALANCE_IN_PROGRESS = E.RebalanceInProgressError.errno
MEMBER_ID_REQUIRED = E.MemberIdRequiredError.errno
INCONSISTENT_GROUP_PROTOCOL = E.InconsistentGroupProtocolError.errno
INVALID_SESSION_TIMEOUT = E.InvalidSessionTimeoutError.errno
INVALID_GROUP_ID = E.InvalidGroupIdError.errno
NOT_COORDINATOR = E.NotCoordinatorError.errno

CONFIG = {"group.min.session.timeout.ms": "50", "group.initial.rebalance.delay.ms": "0"}
WAIT = 5


@pytest.fixture
def coord(tmp_path):
    with GroupCoordinator(tmp_path, 0, CONFIG) as c:
        yield c


def join(
    coord,
    member_id="",
    *,
    group="g",
    protocols=(("range", b"meta"),),
    session=10_000,
    rebalance=-1,
    client="client",
    v4=False,
    protocol_type="consumer",
):
    """Send a JoinGroup and return its future."""
    return coord.join_group(
        JoinRequest(
            group,
            member_id,
            protocol_type,
            list(protocols),
            session,
            rebalance,
            client,
            require_known_member=v4,
        )
    )


def two_members(coord, **kw):
    """Join two members into generation 1; returns their join results (leader first)."""
    f1 = join(coord, client="a", **kw)
    r1 = f1.result(WAIT)
    assert r1["error_code"] == 0 and r1["generation_id"] == 1
    # the group is CompletingRebalance: a second member starts generation 2
    f2 = join(coord, client="b", **kw)
    assert not f2.done()
    f1b = join(coord, r1["member_id"], **kw)
    return f1b.result(WAIT), f2.result(WAIT)


def stabilize(coord, leader, follower, assignment=None):
    """Sync both members with the leader's assignment; returns both sync results."""
    assignment = assignment or {leader["member_id"]: b"A", follower["member_id"]: b"B"}
    gen = leader["generation_id"]
    fs = coord.sync_group("g", gen, follower["member_id"])
    assert not fs.done()
    fl = coord.sync_group("g", gen, leader["member_id"], assignment)
    return fl.result(WAIT), fs.result(WAIT)


def test_single_member_join_sync_heartbeat(coord):
    r = join(coord).result(WAIT)
    assert r["error_code"] == 0 and r["member_id"].startswith("client-")
    assert r["leader"] == r["member_id"] and r["protocol_name"] == "range"
    assert r["members"] == [
        {"member_id": r["member_id"], "group_instance_id": None, "metadata": b"meta"}
    ]
    assert coord.group_state("g") == COMPLETING_REBALANCE
    s = coord.sync_group("g", 1, r["member_id"], {r["member_id"]: b"all"}).result(WAIT)
    assert s == {
        "error_code": 0,
        "assignment": b"all",
        "protocol_type": "consumer",
        "protocol_name": "range",
    }
    assert coord.group_state("g") == STABLE
    assert coord.heartbeat("g", 1, r["member_id"]) == 0


def test_two_members_join_and_sync(coord):
    leader, follower = two_members(coord)
    assert leader["generation_id"] == follower["generation_id"] == 2
    assert leader["leader"] == follower["leader"] == leader["member_id"]
    assert {m["member_id"] for m in leader["members"]} == {
        leader["member_id"],
        follower["member_id"],
    }
    assert follower["members"] == []
    ls, fs = stabilize(coord, leader, follower)
    assert ls["assignment"] == b"A" and fs["assignment"] == b"B"
    # a late sync in Stable gets its assignment directly
    again = coord.sync_group("g", 2, follower["member_id"]).result(WAIT)
    assert again["assignment"] == b"B"


def test_protocol_selection_uses_leader_preference_among_common(coord):
    f1 = join(
        coord, client="a", protocols=[("roundrobin", b"1"), ("range", b"2"), ("sticky", b"3")]
    )
    r1 = f1.result(WAIT)
    f2 = join(coord, client="b", protocols=[("sticky", b"x"), ("range", b"y")])
    r1b = join(
        coord, r1["member_id"], protocols=[("roundrobin", b"1"), ("range", b"2"), ("sticky", b"3")]
    ).result(WAIT)
    r2 = f2.result(WAIT)
    assert r1b["protocol_name"] == r2["protocol_name"] == "range"
    metas = {m["member_id"]: m["metadata"] for m in r1b["members"]}
    assert metas == {r1["member_id"]: b"2", r2["member_id"]: b"y"}


def test_inconsistent_protocols_rejected(coord):
    r = join(coord).result(WAIT)
    bad = join(coord, protocols=[("other", b"")]).result(WAIT)
    assert bad["error_code"] == INCONSISTENT_GROUP_PROTOCOL
    bad = join(coord, protocol_type="connect").result(WAIT)
    assert bad["error_code"] == INCONSISTENT_GROUP_PROTOCOL
    assert join(coord, protocols=[]).result(WAIT)["error_code"] == INCONSISTENT_GROUP_PROTOCOL
    assert coord.describe_group("g")["members"] == [r["member_id"]]


def test_invalid_requests(coord):
    assert join(coord, group="").result(WAIT)["error_code"] == INVALID_GROUP_ID
    assert join(coord, session=10).result(WAIT)["error_code"] == INVALID_SESSION_TIMEOUT
    assert join(coord, "nobody").result(WAIT)["error_code"] == UNKNOWN_MEMBER_ID


def test_member_id_required_two_step_join(coord):
    first = join(coord, client="cons", v4=True).result(WAIT)
    assert first["error_code"] == MEMBER_ID_REQUIRED
    assert first["member_id"].startswith("cons-")
    assert coord.group_state("g") == EMPTY
    second = join(coord, first["member_id"], v4=True).result(WAIT)
    assert second["error_code"] == 0 and second["member_id"] == first["member_id"]
    assert second["generation_id"] == 1


def test_pending_member_id_expires(tmp_path):
    with GroupCoordinator(tmp_path, 0, CONFIG) as coord:
        first = join(coord, v4=True, session=100).result(WAIT)
        wait_until(
            lambda: first["member_id"] not in getattr(coord._groups.get("g"), "pending", {}),
            10,
            "the pending id expired",
        )
        late = join(coord, first["member_id"], v4=True, session=100).result(WAIT)
        assert late["error_code"] == UNKNOWN_MEMBER_ID


def test_heartbeat_errors_and_rebalance_in_progress(coord):
    leader, follower = two_members(coord)
    stabilize(coord, leader, follower)
    assert coord.heartbeat("g", 2, follower["member_id"]) == 0
    assert coord.heartbeat("g", 1, follower["member_id"]) == ILLEGAL_GENERATION
    assert coord.heartbeat("g", 2, "stranger") == UNKNOWN_MEMBER_ID
    assert coord.heartbeat("nogroup", 2, "stranger") == UNKNOWN_MEMBER_ID
    third = join(coord, client="c")
    assert coord.group_state("g") == PREPARING_REBALANCE
    assert coord.heartbeat("g", 2, follower["member_id"]) == REBALANCE_IN_PROGRESS
    assert (
        coord.sync_group("g", 2, follower["member_id"]).result(WAIT)["error_code"]
        == REBALANCE_IN_PROGRESS
    )
    f1 = join(coord, leader["member_id"])
    f2 = join(coord, follower["member_id"])
    results = [f.result(WAIT) for f in (f1, f2, third)]
    assert {r["generation_id"] for r in results} == {3}
    assert sum(1 for r in results if r["members"]) == 1


def test_sync_illegal_generation_and_unknown_member(coord):
    leader, follower = two_members(coord)
    assert (
        coord.sync_group("g", 1, leader["member_id"]).result(WAIT)["error_code"]
        == ILLEGAL_GENERATION
    )
    assert coord.sync_group("g", 2, "x").result(WAIT)["error_code"] == UNKNOWN_MEMBER_ID


def test_session_expiry_triggers_rebalance(tmp_path):
    with GroupCoordinator(tmp_path, 0, CONFIG) as coord:
        leader, follower = two_members(coord, session=300)
        stabilize(coord, leader, follower)
        deadline = time.monotonic() + WAIT
        code = 0
        while time.monotonic() < deadline:  # only the leader keeps heartbeating
            code = coord.heartbeat("g", 2, leader["member_id"])
            if code == REBALANCE_IN_PROGRESS:
                break
            time.sleep(0.05)
        assert code == REBALANCE_IN_PROGRESS
        r = join(coord, leader["member_id"], session=300).result(WAIT)
        assert r["generation_id"] == 3
        assert [m["member_id"] for m in r["members"]] == [leader["member_id"]]
        assert coord.heartbeat("g", 2, follower["member_id"]) == UNKNOWN_MEMBER_ID


def test_rebalance_timeout_drops_members_that_do_not_rejoin(tmp_path):
    with GroupCoordinator(tmp_path, 0, CONFIG) as coord:
        leader, follower = two_members(coord, session=5000, rebalance=300)
        stabilize(coord, leader, follower)
        f = join(
            coord,
            leader["member_id"],
            protocols=[("range", b"changed")],
            session=5000,
            rebalance=300,
        )
        assert not f.done()  # waits for the follower, which never rejoins
        r = f.result(WAIT)
        assert r["generation_id"] == 3 and len(r["members"]) == 1
        assert coord.describe_group("g")["members"] == [leader["member_id"]]


def test_leave_triggers_rebalance_and_new_leader(coord):
    leader, follower = two_members(coord)
    stabilize(coord, leader, follower)
    assert coord.leave_group("g", [leader["member_id"], "ghost"]) == (0, [0, UNKNOWN_MEMBER_ID])
    assert coord.heartbeat("g", 2, follower["member_id"]) == REBALANCE_IN_PROGRESS
    r = join(coord, follower["member_id"]).result(WAIT)
    assert r["generation_id"] == 3 and r["leader"] == follower["member_id"]
    assert coord.leave_group("g", [follower["member_id"]]) == (0, [0])
    assert coord.group_state("g") == EMPTY
    assert coord.describe_group("g")["generation_id"] == 4
    # as Kafka, the Empty group keeps its protocol type (ListGroups, DescribeGroups)
    assert ("g", "consumer", EMPTY) in coord.list_groups()
    assert coord.group_summary("g")["protocol_type"] == "consumer"
    # and the next first member sets it anew
    r = coord.join_group(JoinRequest("g", "", "connect", [("x", b"")], 10_000)).result(WAIT)
    assert r["error_code"] == 0 and r["protocol_type"] == "connect"


def test_leave_while_others_wait_completes_their_join(coord):
    leader, follower = two_members(coord)
    stabilize(coord, leader, follower)
    f = join(coord, leader["member_id"], protocols=[("range", b"new")])
    assert not f.done()
    coord.leave_group("g", [follower["member_id"]])
    r = f.result(WAIT)
    assert r["error_code"] == 0 and len(r["members"]) == 1


def test_rejoin_in_completing_rebalance_returns_current_generation(coord):
    r = join(coord).result(WAIT)
    again = join(coord, r["member_id"]).result(WAIT)
    assert again["generation_id"] == 1 and again["members"]


def test_rebalance_during_sync_fails_waiting_followers(coord):
    leader, follower = two_members(coord)
    fs = coord.sync_group("g", 2, follower["member_id"])
    join(coord, client="late")
    assert fs.result(WAIT)["error_code"] == REBALANCE_IN_PROGRESS


def test_initial_rebalance_delay_collects_members(tmp_path):
    config = dict(CONFIG, **{"group.initial.rebalance.delay.ms": "300"})
    with GroupCoordinator(tmp_path, 0, config) as coord:
        f1 = join(coord, client="a", rebalance=5000)
        f2 = join(coord, client="b", rebalance=5000)
        assert not f1.done()
        r1, r2 = f1.result(WAIT), f2.result(WAIT)
        assert r1["generation_id"] == r2["generation_id"] == 1
        assert len(r1["members"]) + len(r2["members"]) == 2


def test_offset_commit_rules(coord):
    entry = {("t", 0): OffsetEntry(10)}
    assert coord.commit_offsets("simple", -1, "", entry) == 0
    assert coord.commit_offsets("nogroup", 3, "m", entry) == ILLEGAL_GENERATION
    leader, follower = two_members(coord)
    assert coord.commit_offsets("g", 2, leader["member_id"], entry) == REBALANCE_IN_PROGRESS
    # CompletingRebalance answers REBALANCE_IN_PROGRESS only after Kafka's member and
    # generation checks
    assert coord.commit_offsets("g", 1, leader["member_id"], entry) == ILLEGAL_GENERATION
    assert coord.commit_offsets("g", 2, "who", entry) == UNKNOWN_MEMBER_ID
    stabilize(coord, leader, follower)
    assert coord.commit_offsets("g", 2, leader["member_id"], entry) == 0
    assert coord.commit_offsets("g", 1, leader["member_id"], entry) == ILLEGAL_GENERATION
    assert coord.commit_offsets("g", 2, "who", entry) == UNKNOWN_MEMBER_ID
    assert coord.commit_offsets("g", -1, "", entry) == UNKNOWN_MEMBER_ID
    assert coord.commit_offsets("g", -1, "", entry, check_membership=False) == 0
    assert coord.fetch_offsets("g")[("t", 0)].offset == 10
    assert coord.fetch_offsets("simple", [("t", 0), ("t", 1)]) == {("t", 0): OffsetEntry(10)}


def test_offset_commit_while_preparing_a_rebalance(coord):
    """Kafka takes a commit of the current generation while the next one is not yet formed."""
    leader, follower = two_members(coord)
    stabilize(coord, leader, follower)
    pending = join(coord, client="c")  # a newcomer: PreparingRebalance
    assert coord.group_state("g") == "PreparingRebalance"
    entry = {("t", 0): OffsetEntry(7)}
    assert coord.commit_offsets("g", 2, follower["member_id"], entry) == 0
    assert coord.commit_offsets("g", 1, follower["member_id"], entry) == ILLEGAL_GENERATION
    assert coord.commit_offsets("g", 3, follower["member_id"], entry) == ILLEGAL_GENERATION
    assert coord.fetch_offsets("g")[("t", 0)].offset == 7
    assert not pending.done()


def test_offsets_survive_restart(tmp_path):
    with GroupCoordinator(tmp_path, 0, CONFIG) as coord:
        coord.commit_offsets("g", -1, "", {("t", 0): OffsetEntry(42, "m")})
    with GroupCoordinator(tmp_path, 0, CONFIG) as coord:
        assert coord.fetch_offsets("g")[("t", 0)] == OffsetEntry(42, "m")
        assert ("g", "", EMPTY) in coord.list_groups()


def test_close_answers_waiting_members(tmp_path):
    coord = GroupCoordinator(tmp_path, 0, CONFIG)
    coord.start()
    r = join(coord, client="a").result(WAIT)
    f2 = join(coord, client="b")
    coord.close()
    assert f2.result(WAIT)["error_code"] == NOT_COORDINATOR
    assert coord.heartbeat("g", 1, r["member_id"]) == NOT_COORDINATOR


def test_groups_that_never_formed_are_forgotten(coord):
    assert join(coord, "ghost", group="stray").result(WAIT)["error_code"] == UNKNOWN_MEMBER_ID
    deadline = time.monotonic() + WAIT
    while coord.describe_group("stray") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert coord.describe_group("stray") is None
