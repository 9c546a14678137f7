"""The broker-coordinated group protocol, shared by GroupConsumerConnector and Consumer.

Wire format (:mod:`kclient.protocol.consumer_protocol`): the standard consumer-protocol
Subscription and Assignment.  A kclient member's Subscription user data is
its registration JSON (as written to ZooKeeper, plus ``consumer_id``); a kclient leader's
Assignment user data maps each partition to its thread id (``<consumer_id>-<i>``).
:class:`GroupMembership` runs the core's JoinGroup / SyncGroup / Heartbeat / LeaveGroup
conversations (:mod:`kclient.core.group`) for one member on threads;
:func:`leader_assignment` is the elected leader's job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from kclient.core import group as core_group
from kclient.core.consumer_protocol import (
    COOPERATIVE,
    is_cooperative,
    member_user_data,
    strategies_of,
    subscription_generation,
    subscription_protocols,
)
from kclient.core.group import REJOIN, MemberState
from kclient.errors import FencedInstanceIdError
from kclient.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    decode_subscription_full,
    encode_assignment,
    encode_subscription,
)
from kclient.zkutils import kafka_json

from .assignment import assign
from .membership import topic_thread_ids
from .offsets import Coordinator
from .sticky import resolve_owned, sticky_assign, withhold_transfers

if TYPE_CHECKING:
    from kclient.protocol.messages import JoinGroupResponseMember

__all__ = [
    "GroupMembership",
    "leader_assignment",
    "registration",
    "parse_json",
    "encode_subscription",
    "decode_subscription",
    "encode_assignment",
    "decode_assignment",
    "REJOIN",
    "COOPERATIVE",
    "Subscription",
    "decode_subscription_full",
    "strategies_of",
    "is_cooperative",
    "member_user_data",
    "registration_of",
    "subscription_generation",
    "subscription_protocols",
]


def parse_json(data: bytes) -> Any:
    """Parsed JSON user data, or None (empty, or not JSON: written by another client)."""
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def registration(consumer_id: str, pattern: str, subscription: Mapping[str, int]) -> bytes:
    """A member's Subscription user data: its registration JSON, as written to ZooKeeper."""
    return kafka_json(
        {
            "version": 1,
            "consumer_id": consumer_id,
            "subscription": subscription,
            "pattern": pattern,
            "timestamp": str(int(time.time() * 1000)),
        }
    ).encode()


def registration_of(user_data: bytes) -> dict[str, Any] | None:
    """A kclient member's registration JSON in its user data (with or without the generation
    prefix), or None (another client's member)."""
    reg = parse_json(user_data)
    if reg is None and len(user_data) > 4:
        reg = parse_json(user_data[4:])
    if isinstance(reg, dict) and "consumer_id" in reg and "subscription" in reg:
        return reg
    return None


def _member_units(
    members: list[JoinGroupResponseMember], all_topics: list[str], exclude_internal: bool
) -> tuple[dict[str, list[str]], dict[str, str], dict[str, Subscription]]:
    """``{topic: thread ids}``, thread consumer id -> member id, and each member's
    decoded Subscription."""
    consumers: dict[str, list[str]] = {}
    member_of: dict[str, str] = {}
    subs: dict[str, Subscription] = {}
    for m in members:
        sub = subs[m.member_id] = decode_subscription_full(m.metadata)
        reg = registration_of(sub.user_data)
        if reg is not None:
            cid = reg["consumer_id"]
            wanted = topic_thread_ids(
                cid, reg.get("pattern", "static"), reg["subscription"], all_topics, exclude_internal
            )
        else:
            cid = m.member_id
            wanted = {t: [f"{cid}-0"] for t in sub.topics if t in all_topics}
        member_of[cid] = m.member_id
        for topic, threads in wanted.items():
            consumers.setdefault(topic, []).extend(threads)
    return {t: sorted(ts) for t, ts in consumers.items()}, member_of, subs


def _sticky_decision(
    consumers: dict[str, list[str]],
    parts: dict[str, list[int]],
    member_of: dict[str, str],
    subs: dict[str, Subscription],
) -> dict[tuple[str, int], str]:
    """cooperative-sticky over thread ids: each member's counted owned partitions spread over
    its own threads, kept; the rest balanced; transfers withheld for the next generation."""
    claims = {
        mid: [(t, p) for t, ps in sub.owned_partitions.items() for p in ps]
        for mid, sub in subs.items()
    }
    counted = resolve_owned(
        {mid: (subscription_generation(subs[mid]), tps) for mid, tps in claims.items()}
    )
    threads_of: dict[tuple[str, str], list[str]] = {}
    for topic, threads in consumers.items():
        for th in threads:
            threads_of.setdefault((member_of[th.rpartition("-")[0]], topic), []).append(th)
    owned_units: dict[str, list[tuple[str, int]]] = {}
    for mid, tps in counted.items():
        for i, (t, p) in enumerate(sorted(tps)):
            ths = threads_of.get((mid, t))
            if ths:
                owned_units.setdefault(ths[i % len(ths)], []).append((t, p))
    decision = sticky_assign(consumers, parts, owned_units)
    by_member: dict[str, set[tuple[str, int]]] = {mid: set() for mid in subs}
    for tp, th in decision.items():
        by_member[member_of[th.rpartition("-")[0]]].add(tp)
    kept = withhold_transfers(by_member, claims)
    return {tp: th for tp, th in decision.items() if tp in kept[member_of[th.rpartition("-")[0]]]}


def leader_assignment(
    strategy: str,
    members: Iterable[JoinGroupResponseMember],
    all_topics: list[str],
    partitions: Mapping[str, Iterable[int]],
    exclude_internal: bool = True,
) -> list[dict[str, Any]]:
    """The leader's job: the group's assignment over every member's thread ids.

    A kclient member counts with the threads of its registration; another client's member
    (the Java consumer) as one thread over the topics its Subscription lists."""
    members = list(members)
    consumers, member_of, subs = _member_units(members, all_topics, exclude_internal)
    parts = {t: sorted(partitions[t]) for t in consumers if t in partitions}
    if strategy == COOPERATIVE:
        decision = _sticky_decision(consumers, parts, member_of, subs)
    else:
        decision = assign(strategy, consumers, parts)
    per_member: dict[str, dict[str, dict[str, str]]] = {m.member_id: {} for m in members}
    for (t, p), th in decision.items():
        per_member[member_of[th.rpartition("-")[0]]].setdefault(t, {})[str(p)] = th
    out = []
    for member, owned in per_member.items():
        tps = {t: [int(p) for p in ps] for t, ps in owned.items()}
        out.append(
            {"member_id": member, "assignment": encode_assignment(tps, kafka_json(owned).encode())}
        )
    return out


class GroupMembership:
    """One member's JoinGroup / SyncGroup / Heartbeat / LeaveGroup at the group coordinator:
    the conversations of :mod:`kclient.core.group` over a :class:`MemberState`, run on the
    calling thread.

    With ``group_instance_id`` the member is static (KIP-345): every request carries the
    instance id, and a FENCED_INSTANCE_ID answer (another process took the instance id) raises
    :class:`FencedInstanceIdError`, which the consumers treat as fatal."""

    def __init__(
        self,
        coordinator: Coordinator,
        group: str,
        session_timeout_ms: int,
        group_instance_id: str | None = None,
    ) -> None:
        self.coordinator, self.group = coordinator, group
        self.state = MemberState(group, session_timeout_ms, group_instance_id or None)

    @property
    def group_instance_id(self) -> str | None:
        return self.state.instance_id

    @property
    def session_timeout(self) -> int:
        return self.state.session_timeout_ms

    @property
    def member_id(self) -> str:
        return self.state.member_id

    @member_id.setter
    def member_id(self, value: str) -> None:
        self.state.member_id = value

    @property
    def generation_id(self) -> int:
        return self.state.generation_id

    @property
    def protocol(self) -> str | None:
        """The protocol the coordinator chose at the last join."""
        return self.state.protocol

    def generation(self) -> tuple[int, str]:
        """(generation id, member id): what OffsetCommit sends."""
        return self.state.generation()

    def join_and_sync(
        self,
        protocols: Sequence[tuple[str, bytes]],
        attempts: int,
        exclude_internal: bool = True,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> bytes | None:
        """JoinGroup and SyncGroup (assigning with :func:`leader_assignment` when leader):
        this member's Assignment bytes, or None (the group kept moving)."""
        return self.coordinator.run(
            core_group.join_and_sync(
                self.state,
                self.coordinator.state,
                protocols,
                partial(leader_assignment, exclude_internal=exclude_internal),
                attempts,
                cancelled,
            )
        )

    def heartbeats(
        self,
        interval_s: float,
        active: Callable[[], bool],
        on_rejoin: Callable[[str, int], None],
        on_fenced: Callable[[FencedInstanceIdError], None],
        stopped: Callable[[], bool],
    ) -> None:
        """The heartbeat loop (:func:`kclient.core.group.heartbeats`) on this thread."""
        self.coordinator.run(
            core_group.heartbeats(
                self.state,
                self.coordinator.state,
                interval_s,
                active,
                on_rejoin,
                on_fenced,
                stopped,
            )
        )

    def heartbeat(self) -> int:
        """One Heartbeat; its error code (UNKNOWN_MEMBER_ID also forgets the member id;
        FENCED_INSTANCE_ID raises)."""
        return self.coordinator.run(core_group.heartbeat(self.state, self.coordinator.state))

    def leave(self) -> None:
        """LeaveGroup (no retries), then forget the member id and generation."""
        self.coordinator.run(core_group.leave(self.state, self.coordinator.state))

    def forget(self) -> None:
        """Drop the member id and generation without telling the coordinator (a static
        member's close: its session holds the instance's place until it expires)."""
        self.state.forget()
