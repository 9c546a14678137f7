"""Differential case "OffsetCommit while the group rebalances" (see test_differential.py):
a classic group of one member, a second joining, and OffsetCommit of the current, an old and a
future generation and of strangers while the group is Stable, PreparingRebalance (the new
generation not formed yet) and CompletingRebalance, on Kafka 4.x and a mini-broker alike."""

from __future__ import annotations

import time
from typing import Any

from kclient.protocol.apis import (
    DESCRIBE_GROUPS,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
)

from .differential import Twin
from .differential_support import LONG_MS, check, create, wait_coordinator

CASE = "OffsetCommit while the group rebalances"
GROUP, TOPIC = "g-commit-rebalance", "rebalance-commits"
SIDES = ("real", "mini")


def _join_body(member: str) -> dict[str, Any]:
    return {
        "group_id": GROUP,
        "session_timeout_ms": LONG_MS,
        "rebalance_timeout_ms": LONG_MS,
        "member_id": member,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"m"}],
    }


def _join_new(twin: Twin, side: str, conn: Any = None) -> tuple[Any, int]:
    """JoinGroup v5 for a new member on one side: its id (MEMBER_ID_REQUIRED), then the join
    sent without waiting; (connection, correlation id)."""
    conn = conn or getattr(twin, side)
    first = conn.request(JOIN_GROUP, _join_body(""), 5)
    return conn, conn.send(JOIN_GROUP, _join_body(first.member_id), 5)


def _commit(
    twin: Twin,
    members: dict[str, str],
    generation: int,
    label: str,
    offset: int,
    instance: str | None = None,
) -> None:
    def body(side: str) -> dict[str, Any]:
        return {
            "group_id": GROUP,
            "generation_id_or_member_epoch": generation,
            "member_id": members[side],
            "group_instance_id": instance,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
                    ],
                }
            ],
        }

    twin.request(OFFSET_COMMIT, 7, body, label)


def _member_ids(twin: Twin, futures: dict[str, tuple[Any, int]]) -> dict[str, Any]:
    return {side: conn.receive(corr) for side, (conn, corr) in futures.items()}


def test_offset_commit_while_rebalancing(twin4):
    twin4.case = CASE
    create(twin4, TOPIC)
    wait_coordinator(twin4, GROUP)
    joined = _member_ids(twin4, {side: _join_new(twin4, side) for side in SIDES})
    a = {side: r.member_id for side, r in joined.items()}
    assert all(r.error_code == 0 and r.generation_id == 1 for r in joined.values()), joined
    twin4.request(
        SYNC_GROUP,
        3,
        lambda s: {
            "group_id": GROUP,
            "generation_id": 1,
            "member_id": a[s],
            "assignments": [{"member_id": a[s], "assignment": b"A"}],
        },
        "leader, generation 1",
    )
    _commit(twin4, a, 1, "Stable", 10)
    # a second member joins: the group prepares a rebalance until the first rejoins
    others = {side: twin4._connect(getattr(twin4, side + "_address")) for side in SIDES}
    pending = {side: _join_new(twin4, side, others[side]) for side in SIDES}
    time.sleep(0.5)
    twin4.request(
        HEARTBEAT,
        3,
        lambda s: {"group_id": GROUP, "generation_id": 1, "member_id": a[s]},
        "preparing",
    )
    _commit(twin4, a, 1, "PreparingRebalance, current generation", 11)
    _commit(twin4, a, 0, "PreparingRebalance, old generation", 12)
    _commit(twin4, a, 2, "PreparingRebalance, next generation", 13)
    _commit(twin4, dict.fromkeys(SIDES, "stranger"), 1, "PreparingRebalance, unknown member", 14)
    _commit(twin4, a, 1, "PreparingRebalance, unknown instance id", 15, instance="nobody")
    # the first rejoins: generation 2 is formed and awaits the leader's SyncGroup
    twin4.request(
        JOIN_GROUP,
        5,
        lambda s: _join_body(a[s]),
        "rejoin",
        view=lambda r: {k: r[k] for k in ("error_code", "generation_id")},
    )
    b = {side: r.member_id for side, r in _member_ids(twin4, pending).items()}
    _commit(twin4, a, 2, "CompletingRebalance, current generation", 16)
    _commit(twin4, a, 1, "CompletingRebalance, old generation", 17)
    _commit(twin4, dict.fromkeys(SIDES, "stranger"), 2, "CompletingRebalance, unknown member", 18)
    twin4.request(
        SYNC_GROUP,
        3,
        lambda s: {
            "group_id": GROUP,
            "generation_id": 2,
            "member_id": a[s],
            "assignments": [
                {"member_id": a[s], "assignment": b"A"},
                {"member_id": b[s], "assignment": b""},
            ],
        },
        "leader, generation 2",
    )
    _commit(twin4, a, 2, "Stable again", 19)
    twin4.request(
        OFFSET_FETCH,
        7,
        {"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}]},
        "stored",
    )
    twin4.request(
        LEAVE_GROUP,
        3,
        lambda s: {"group_id": GROUP, "members": [{"member_id": a[s]}, {"member_id": b[s]}]},
        "both leave",
    )
    for conn in others.values():
        conn.close()
    # the group is Empty now; Kafka keeps its protocol type
    twin4.request(
        LIST_GROUPS,
        5,
        {"states_filter": [], "types_filter": []},
        "after leaving",
        view=lambda r: [g for g in r["groups"] if g["group_id"] == GROUP],
    )
    twin4.request(
        DESCRIBE_GROUPS, 5, {"groups": [GROUP], "include_authorized_operations": False}, "Empty"
    )
    check(CASE, twin4)
