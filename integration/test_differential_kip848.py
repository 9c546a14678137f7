"""Differential case "ConsumerGroupHeartbeat sequences" (see test_differential.py): a KIP-848
group on Kafka 4.x and on a mini-broker driven by the same ConsumerGroupHeartbeat v1 requests
(member ids are the client's, so both sides get the same ones): a join and its assignment, a
second member whose partitions come only after the first revoked them, fenced and unknown
epochs and members, invalid requests, a static member leaving for now and rejoining, commits
with member epochs, ListGroups / DescribeGroups / ConsumerGroupDescribe, and leaving.

Kafka 4.x computes a group's target assignment at most once per
``group.consumer.assignment.interval.ms`` (1 s), at a heartbeat, so the answer to a join
depends on when the last one was computed: those answers are compared by error code only, and
the case then heartbeats the member that joined (uncompared) until both sides have computed
the new target (ConsumerGroupDescribe's assignment epoch reaches the group epoch) before the
heartbeats that are compared whole."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kclient.protocol.apis import (
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_HEARTBEAT,
    DESCRIBE_GROUPS,
    JOIN_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_FETCH,
)
from kclient.protocol.consumer_protocol import encode_subscription
from tests.waiting import wait_until

from .differential import Twin
from .differential_support import check, create, wait_coordinator

CASE = "ConsumerGroupHeartbeat sequences"
GROUP, TOPIC = "g-kip848-diff", "kip848-diff"
SIDES = ("real", "mini")


def _code(r: Any) -> Any:
    return {"error_code": r["error_code"]} if isinstance(r, dict) else r


class Member:
    """One member id on both sides, with each side's epoch and owned partitions as its last
    answers gave them."""

    def __init__(self, twin: Twin, instance: str | None = None) -> None:
        self.twin, self.id, self.instance = twin, str(uuid.uuid4()), instance
        self.epoch = dict.fromkeys(SIDES, 0)
        self.owned: dict[str, list[dict[str, Any]]] = {s: [] for s in SIDES}

    def hb(
        self,
        label: str,
        epoch: int | None = None,
        *,
        topics: list[str] | None = None,
        owned: Any = "mine",
        whole: bool = True,
        **extra: Any,
    ) -> None:
        """ConsumerGroupHeartbeat v1 to both (``epoch`` None: each side's own);
        ``whole=False`` compares the error code only."""

        def body(side: str) -> dict[str, Any]:
            e = self.epoch[side] if epoch is None else epoch
            mine = self.owned[side] if owned == "mine" else owned
            return {
                "group_id": extra.get("group_id", GROUP),
                "member_id": self.id,
                "member_epoch": e,
                "instance_id": extra.get("instance_id", self.instance),
                "rack_id": None,
                "rebalance_timeout_ms": 60000 if e == 0 else -1,
                "subscribed_topic_names": topics,
                "subscribed_topic_regex": extra.get("regex"),
                "server_assignor": extra.get("assignor"),
                "topic_partitions": [] if e == 0 and owned == "mine" else mine,
            }

        self.twin.request(CONSUMER_GROUP_HEARTBEAT, 1, body, label, view=None if whole else _code)
        for side in SIDES:
            answer = self.twin.last[side]
            if answer.error_code == 0 and answer.member_epoch >= 0 and epoch is None:
                self.epoch[side] = answer.member_epoch
                if answer.assignment is not None:
                    self.owned[side] = [
                        {"topic_id": bytes(t.topic_id), "partitions": list(t.partitions)}
                        for t in answer.assignment.topic_partitions
                    ]


def _settle(twin: Twin, member: Member) -> None:
    """Heartbeat ``member`` (each side on its own, not compared) until both sides computed
    the target of the current group epoch."""
    for side in SIDES:
        conn = getattr(twin, side)

        def settled(conn: Any = conn, side: str = side) -> bool:
            answer = conn.request(
                CONSUMER_GROUP_HEARTBEAT,
                {
                    "group_id": GROUP,
                    "member_id": member.id,
                    "member_epoch": member.epoch[side],
                    "instance_id": None,
                    "rack_id": None,
                    "rebalance_timeout_ms": -1,
                    "subscribed_topic_names": None,
                    "subscribed_topic_regex": None,
                    "server_assignor": None,
                    "topic_partitions": member.owned[side],
                },
                1,
            )
            assert answer.error_code == 0, (side, answer)
            member.epoch[side] = answer.member_epoch
            g = conn.request(
                CONSUMER_GROUP_DESCRIBE,
                {"group_ids": [GROUP], "include_authorized_operations": False},
                1,
            ).groups[0]
            return g.assignment_epoch == g.group_epoch

        wait_until(
            settled, timeout=30, what=f"{side}: the target assignment computed", interval=0.3
        )


def _commit(twin: Twin, member: Member, delta: int, label: str, stranger: bool = False) -> None:
    twin.request(
        OFFSET_COMMIT,
        9,
        lambda s: {
            "group_id": GROUP,
            "generation_id_or_member_epoch": member.epoch[s] + delta,
            "member_id": "stranger" if stranger else member.id,
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}
                    ],
                }
            ],
        },
        label,
    )


def _fetch(twin: Twin, label: str, member_id: str | None, epoch: Callable[[str], int]) -> None:
    """OffsetFetch v9 of the group's topic as ``member_id`` with ``epoch(side)``."""
    twin.request(
        OFFSET_FETCH,
        9,
        lambda s: {
            "groups": [
                {
                    "group_id": GROUP,
                    "member_id": member_id,
                    "member_epoch": epoch(s),
                    "topics": [{"name": TOPIC, "partition_indexes": [0, 1]}],
                }
            ],
            "require_stable": False,
        },
        label,
    )


def _describe(twin: Twin, label: str) -> None:
    def view(r: Any) -> Any:
        for g in r["groups"]:
            g["members"] = sorted(g["members"], key=repr)
        return r

    twin.request(
        CONSUMER_GROUP_DESCRIBE,
        1,
        {"group_ids": [GROUP, "g-kip848-none"], "include_authorized_operations": False},
        label,
        order_by={"groups": "group_id"},
        view=view,
    )


def test_consumer_group_heartbeat_sequences(twin4):
    twin4.case = CASE
    create(twin4, TOPIC, partitions=4)
    wait_coordinator(twin4, GROUP)
    a, b, c, c2 = Member(twin4), Member(twin4), Member(twin4, "ci"), Member(twin4, "ci")
    a.hb("a joins", topics=[TOPIC])
    a.hb("a heartbeats")
    b.hb("b joins", topics=[TOPIC], whole=False)
    _settle(twin4, b)
    a.hb("a is asked to revoke")
    b.hb("b waits for the revoked partitions", owned=[])
    a.hb("a acknowledges")
    b.hb("b gets the released partitions")
    a.hb("fenced: a future epoch", 7)
    b.hb("fenced: an old epoch", 1)
    Member(twin4).hb("unknown member", 2, owned=[])
    a.hb("unknown group", 2, owned=[], group_id="g-kip848-none")
    c.hb("join without subscription", 0, owned=[], instance_id=None)
    c.hb(
        "join owning partitions",
        0,
        topics=[TOPIC],
        owned=[{"topic_id": bytes(16), "partitions": [0]}],
    )
    c.hb("unsupported assignor", 0, topics=[TOPIC], owned=[], assignor="sticky")
    c.hb("invalid regex", 0, owned=[], regex="(")
    a.hb("epoch -3", -3, owned=[])
    a.hb("static leave without instance id", -2, owned=[])
    _commit(twin4, a, 0, "current epoch")
    _commit(twin4, a, -1, "an older epoch, partition held since")
    _commit(twin4, b, -1, "an older epoch, partition assigned since")
    _commit(twin4, a, 1, "a newer epoch")
    _commit(twin4, a, 0, "unknown member", stranger=True)
    _fetch(twin4, "current epoch", a.id, lambda s: a.epoch[s])
    _fetch(twin4, "another epoch", a.id, lambda s: a.epoch[s] + 1)
    _fetch(twin4, "unknown member", "stranger", lambda s: a.epoch[s])
    _fetch(twin4, "no member", None, lambda s: -1)
    twin4.request(
        LIST_GROUPS,
        5,
        {"states_filter": [], "types_filter": ["consumer"]},
        "consumer groups",
        view=lambda r: [g for g in r["groups"] if g["group_id"] == GROUP],
    )
    for version in (5, 6):
        twin4.request(
            DESCRIBE_GROUPS,
            version,
            {"groups": [GROUP], "include_authorized_operations": False},
            "a consumer group",
        )
    _describe(twin4, "two members")
    for label, protocol_type in (
        ("a classic member of another protocol type", "connect"),
        ("a classic consumer joins the consumer group", "consumer"),
    ):
        twin4.request(
            JOIN_GROUP,
            7,
            {
                "group_id": GROUP,
                "session_timeout_ms": 10000,
                "rebalance_timeout_ms": 10000,
                "member_id": "",
                "group_instance_id": None,
                "protocol_type": protocol_type,
                "protocols": [{"name": "range", "metadata": encode_subscription([TOPIC], None)}],
            },
            label,
            view=_code,  # the member id MEMBER_ID_REQUIRED hands out is random
        )
    a.hb("a leaves", -1)
    _settle(twin4, b)
    b.hb("b gets a's partitions")
    c.hb("static c joins", topics=[TOPIC], whole=False)
    _settle(twin4, c)
    b.hb("b is asked to revoke for c")
    b.hb("b acknowledges")
    c.hb("c gets its partitions")
    c.hb("c leaves for now", -2)
    c2.hb("another member id takes instance ci", topics=[TOPIC])
    c.hb("the old member id of ci is fenced")
    b.hb("b hears nothing")
    _describe(twin4, "after the static rejoin")
    b.hb("b leaves", -1)
    c2.hb("c2 leaves", -1)
    twin4.request(
        LIST_GROUPS,
        5,
        {"states_filter": ["Empty"], "types_filter": []},
        "Empty",
        view=lambda r: [g for g in r["groups"] if g["group_id"] == GROUP],
    )
    check(CASE, twin4)
