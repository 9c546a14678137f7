"""Differential case "ConsumerGroupHeartbeat sequences" (see test_differential.py): a KIP-848
group on Kafka 4.x and on a mini-broker driven by the same ConsumerGroupHeartbeat v1 requests
(member ids are the client's, so both sides get the same ones): a join and its assignment, a
second member whose partitions come only after the first revoked them, fenced and unknown
epochs and members, invalid requests, a static member leaving for now and rejoining, commits
with member epochs, ListGroups / DescribeGroups / ConsumerGroupDescribe, and leaving."""
from __future__ import annotations

import uuid
from typing import Any

from kclient.protocol.apis import (
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_HEARTBEAT,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    OFFSET_COMMIT,
)

from .differential import Twin
from .test_differential import check, create, twin4, wait_coordinator  # noqa: F401

CASE = "ConsumerGroupHeartbeat sequences"
GROUP, TOPIC = "g-kip848-diff", "kip848-diff"
SIDES = ("real", "mini")


def _owned(twin: Twin, side: str) -> list[dict[str, Any]]:
    """The partitions the last answer assigned on one side, as the next request's owned."""
    answer = twin.last[side]
    if answer.assignment is None:
        return []
    return [{"topic_id": bytes(t.topic_id), "partitions": list(t.partitions)}
            for t in answer.assignment.topic_partitions]


def _hb(twin: Twin, label: str, member: str, epoch: int, *, owned: Any = None,
        topics: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """ConsumerGroupHeartbeat v1 to both; ``owned`` a dict side -> owned partitions, or a
    list for both.  Returns each side's owned partitions after the answer."""
    def body(side: str) -> dict[str, Any]:
        mine = owned.get(side) if isinstance(owned, dict) else owned
        return {"group_id": extra.get("group_id", GROUP),
                "member_id": member, "member_epoch": epoch,
                "instance_id": extra.get("instance_id"), "rack_id": None,
                "rebalance_timeout_ms": extra.get("rebalance_timeout_ms",
                                                  60000 if epoch == 0 else -1),
                "subscribed_topic_names": topics,
                "subscribed_topic_regex": extra.get("regex"),
                "server_assignor": extra.get("assignor"),
                "topic_partitions": [] if epoch == 0 and mine is None else mine}
    twin.request(CONSUMER_GROUP_HEARTBEAT, 1, body, label)
    return {side: _owned(twin, side) for side in SIDES}


def _commit(twin: Twin, member: str, epoch: int, version: int, label: str) -> None:
    twin.request(OFFSET_COMMIT, version, {
        "group_id": GROUP, "generation_id_or_member_epoch": epoch, "member_id": member,
        "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]}, label)


def _describe(twin: Twin, label: str) -> None:
    def view(r: Any) -> Any:
        for g in r["groups"]:
            g["members"] = sorted(g["members"], key=lambda m: m["member_id"])
        return r
    twin.request(CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [GROUP, "g-kip848-none"],
                                              "include_authorized_operations": False},
                 label, view=view)


def test_consumer_group_heartbeat_sequences(twin4):  # noqa: F811
    twin4.case = CASE
    create(twin4, TOPIC, partitions=4)
    wait_coordinator(twin4, GROUP)
    a, b, c, c2 = (str(uuid.uuid4()) for _ in range(4))
    owned_a = _hb(twin4, "a joins", a, 0, topics=[TOPIC])
    _hb(twin4, "a heartbeats", a, 1, owned=owned_a)
    _hb(twin4, "b joins", b, 0, topics=[TOPIC])
    owned_a = _hb(twin4, "a is asked to revoke", a, 1, owned=owned_a)
    _hb(twin4, "b waits for the revoked partitions", b, 2, owned=[])
    owned_a = _hb(twin4, "a acknowledges", a, 1, owned=owned_a)
    owned_b = _hb(twin4, "b gets the released partitions", b, 2, owned=[])
    _hb(twin4, "fenced: a future epoch", a, 7, owned=owned_a)
    _hb(twin4, "fenced: an old epoch", b, 1, owned=owned_b)
    _hb(twin4, "unknown member", str(uuid.uuid4()), 2, owned=[])
    _hb(twin4, "unknown group", a, 2, owned=[], group_id="g-kip848-none")
    _hb(twin4, "join without subscription", c, 0)
    _hb(twin4, "join owning partitions", c, 0, topics=[TOPIC], owned=owned_a)
    _hb(twin4, "unsupported assignor", c, 0, topics=[TOPIC], assignor="sticky")
    _hb(twin4, "invalid regex", c, 0, regex="(")
    _hb(twin4, "epoch -3", a, -3, owned=[])
    _hb(twin4, "static leave without instance id", a, -2, owned=[])
    _commit(twin4, a, 2, 9, "current epoch")
    _commit(twin4, a, 1, 9, "stale epoch")
    _commit(twin4, "stranger", 2, 9, "unknown member")
    twin4.request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]},
                  "consumer groups",
                  view=lambda r: [g for g in r["groups"] if g["group_id"] == GROUP])
    for version in (5, 6):
        twin4.request(DESCRIBE_GROUPS, version, {"groups": [GROUP],
                                                 "include_authorized_operations": False},
                      "a consumer group")
    _describe(twin4, "two members")
    owned_b = _hb(twin4, "b heartbeats before a leaves", b, 2, owned=owned_b)
    _hb(twin4, "a leaves", a, -1, owned=owned_a)
    owned_b = _hb(twin4, "b after a left", b, 2, owned=owned_b)
    owned_c = _hb(twin4, "static c joins", c, 0, topics=[TOPIC], instance_id="ci")
    owned_b = _hb(twin4, "b revokes for c", b, 3, owned=owned_b)
    owned_b = _hb(twin4, "b acknowledges", b, 3, owned=owned_b)
    owned_c = _hb(twin4, "c gets its partitions", c, 4, owned=[], instance_id="ci")
    _hb(twin4, "c leaves for now", c, -2, owned=owned_c, instance_id="ci")
    _hb(twin4, "another takes ci", c2, 0, topics=[TOPIC], instance_id="ci")
    _hb(twin4, "the old c is fenced", c, 4, owned=owned_c, instance_id="ci")
    _hb(twin4, "b hears nothing", b, 4, owned=owned_b)
    _describe(twin4, "after the static rejoin")
    _hb(twin4, "b leaves", b, -1, owned=owned_b)
    _hb(twin4, "c2 leaves", c2, -1, owned=[], instance_id="ci")
    twin4.request(LIST_GROUPS, 5, {"states_filter": ["Empty"], "types_filter": []}, "Empty",
                  view=lambda r: [g for g in r["groups"] if g["group_id"] == GROUP])
    check(CASE, twin4)
