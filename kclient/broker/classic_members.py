"""Classic members of a KIP-848 consumer group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup
sent to a consumer group that has members, as Kafka's GroupMetadataManager answers them
(classicGroupJoinToConsumerGroup and its siblings).  A mixin of
:class:`~kclient.broker.consumer_coordinator.ConsumerGroups`.

A classic member is a member like the others whose every JoinGroup is a full heartbeat: its
Subscription (the consumer protocol's bytes) gives its topics, rack and the partitions it still
owns; the coordinator computes the target at once and reconciles the member, and the JoinGroup
answer carries its member epoch as the generation (no leader: the coordinator assigns).
SyncGroup hands out the member's current partitions.  Heartbeat answers REBALANCE_IN_PROGRESS
when the member must join again: the group epoch moved past it, it has partitions to give up,
or partitions it waited for are free.  Commits are checked against the member epoch
(ILLEGAL_GENERATION, as for a classic group).  Kafka accepts these members whatever
``group.consumer.migration.policy`` says: the policy governs converting a whole group.
"""

from __future__ import annotations

import base64
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kclient.protocol import errors as E
from kclient.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription_full,
    encode_assignment,
)

from .consumer_group import UNRELEASED, UNREVOKED, ConsumerGroup, ConsumerMember, reconcile
from .group import JoinRequest, join_error, sync_result

__all__ = ["ClassicMembers", "ClassicRefusal", "ClassicImage", "ClassicMemberImage"]

PROTOCOL_TYPE = "consumer"


class ClassicRefusal(Exception):
    """A classic request refused: Kafka's error code and message."""

    def __init__(self, error: type[E.BrokerResponseError], message: str = "") -> None:
        super().__init__(message)
        self.code = error.errno


@dataclass
class ClassicMemberImage:
    """What a classic group knows of one member, handed over in an online upgrade."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    assignment: bytes


@dataclass
class ClassicImage:
    """A classic group with members, taken from the classic coordinator to be upgraded."""

    group_id: str
    generation_id: int
    protocol_name: str | None
    members: list[ClassicMemberImage]


class ClassicMembers:
    """JoinGroup / SyncGroup / Heartbeat / LeaveGroup of classic members in consumer groups."""

    groups: dict[str, ConsumerGroup]
    topics: Callable[[], dict[str, tuple[bytes, int]]]
    _lock: threading.Lock

    # provided by ConsumerGroups
    def _subscribed_topics(self, group: ConsumerGroup) -> dict[str, tuple[bytes, int]]:
        raise NotImplementedError

    def _assign(self, group: ConsumerGroup) -> None:
        raise NotImplementedError

    def _revoke_timer(self, group: ConsumerGroup, member: ConsumerMember, now: float) -> None:
        raise NotImplementedError

    def _fence(self, group: ConsumerGroup, member: ConsumerMember, why: str) -> None:
        raise NotImplementedError

    def _persist(self, group: ConsumerGroup) -> None:
        raise NotImplementedError

    def serves_classic(self, group_id: str) -> bool:
        """Whether a classic SyncGroup / Heartbeat / LeaveGroup for ``group_id`` is this
        coordinator's (a consumer group by that id exists; JoinGroup: ``give_way``)."""
        with self._lock:
            return group_id in self.groups

    # -- the online upgrade -------------------------------------------------------------------

    def _upgrade(self, image: ClassicImage, now: float) -> ConsumerGroup:
        """ConsumerGroup.fromClassicGroup: every classic member becomes a classic member of a
        consumer group at the generation's epoch, owning what its last SyncGroup gave it
        (also its target); the joining heartbeat then bumps the epoch and rebalances."""
        ids = {name: tid for name, (tid, _) in self.topics().items()}
        group = ConsumerGroup(image.group_id, image.generation_id, image.generation_id)
        for m in image.members:
            metadata = next((b for n, b in m.protocols if n == image.protocol_name), None)
            sub = decode_subscription_full(metadata if metadata is not None else m.protocols[0][1])
            parts, _ = decode_assignment(m.assignment)
            assigned = {ids[t]: set(ps) for t, ps in parts.items() if t in ids and ps}
            group.members[m.member_id] = ConsumerMember(
                m.member_id,
                instance_id=m.instance_id,
                rack_id=sub.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                topic_names=list(sub.topics),
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                member_epoch=image.generation_id,
                previous_epoch=image.generation_id,
                assigned=assigned,
                partition_epochs={
                    (t, p): image.generation_id for t, ps in assigned.items() for p in ps
                },
                classic_session_ms=m.session_timeout_ms,
                classic_protocols=list(m.protocols),
            )
            group.target[m.member_id] = {t: set(ps) for t, ps in assigned.items()}
            group.session_deadlines[m.member_id] = now + m.session_timeout_ms / 1000
        group.topics = self._subscribed_topics(group)
        self.groups[group.group_id] = group
        return group

    # -- JoinGroup ---------------------------------------------------------------------------

    def classic_join(self, req: JoinRequest) -> dict[str, Any]:
        """A JoinGroup answer (a response body without throttle time)."""
        with self._lock:
            group = self.groups.get(req.group_id)
            try:
                if group is None:
                    raise ClassicRefusal(E.UnknownMemberIdError)
                return self._join(group, req, time.monotonic())
            except ClassicRefusal as exc:
                return join_error(exc.code, req.member_id)

    def _join(self, group: ConsumerGroup, req: JoinRequest, now: float) -> dict[str, Any]:
        member_id = req.member_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip(
            "="
        )
        names = [name for name, _ in req.protocols]
        if req.protocol_type != PROTOCOL_TYPE or not self._supported(group, member_id, names):
            raise ClassicRefusal(E.InconsistentGroupProtocolError)
        if not req.member_id and req.require_known_member and req.group_instance_id is None:
            return join_error(E.MemberIdRequiredError.errno, member_id)
        try:
            sub = decode_subscription_full(req.protocols[0][1])
        except (ValueError, IndexError, UnicodeDecodeError) as exc:
            raise ClassicRefusal(E.InconsistentGroupProtocolError, str(exc)) from None
        member = self._joining_member(group, member_id, req)
        before = member.subscription()
        new = member.member_id not in group.members
        member.instance_id, member.assignor, member.topic_regex = req.group_instance_id, None, None
        member.topic_names = list(sub.topics)
        if sub.rack_id is not None:
            member.rack_id = sub.rack_id
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.client_id, member.client_host = req.client_id, req.client_host
        member.classic_session_ms, member.classic_protocols = req.session_timeout_ms, req.protocols
        group.members[member.member_id] = member
        topics = self._subscribed_topics(group)
        if new or before != member.subscription() or topics != group.topics:
            group.topics = topics
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._assign(group)
            group.assigned_at = now
        ids = {name: tid for name, (tid, _) in self.topics().items()}
        owned = [(ids[t], ps) for t, ps in sub.owned_partitions.items() if t in ids]
        target = group.target.get(member.member_id, {})
        reconcile(member, group.assignment_epoch, target, owned, group.owner)
        self._revoke_timer(group, member, now)
        group.session_deadlines[member.member_id] = now + req.session_timeout_ms / 1000
        self._persist(group)
        return {
            "error_code": 0,
            "generation_id": member.member_epoch,
            "protocol_type": PROTOCOL_TYPE,
            "protocol_name": names[0],
            "leader": "",
            "member_id": member.member_id,
            "members": [],
        }

    @staticmethod
    def _supported(group: ConsumerGroup, member_id: str, names: Iterable[str]) -> bool:
        """supportsClassicProtocols: one of the protocols every other classic member has."""
        others = [m for m in group.members.values() if m.classic and m.member_id != member_id]
        wanted = set(names)
        for m in others:
            wanted &= {n for n, _ in m.classic_protocols}
        return bool(wanted)

    @staticmethod
    def _joining_member(group: ConsumerGroup, member_id: str, req: JoinRequest) -> ConsumerMember:
        """The member a JoinGroup speaks for: known, new, or a static member's replacement."""
        if req.group_instance_id is None:
            member = group.members.get(member_id)
            if member is None:  # new, or the id MEMBER_ID_REQUIRED gave (Kafka keeps none)
                return ConsumerMember(member_id)
            if not member.classic:
                raise ClassicRefusal(E.UnknownMemberIdError)
            return member
        existing = group.static_member(req.group_instance_id)
        if existing is None:
            return group.members.get(member_id) or ConsumerMember(member_id)
        if existing.member_id == member_id:
            return existing
        if req.member_id:
            raise ClassicRefusal(E.FencedInstanceIdError)
        # a restarted static member takes its instance's place and partitions
        del group.members[existing.member_id]
        for timers in (group.session_deadlines, group.revoke_deadlines):
            timers.pop(existing.member_id, None)
        target = group.target.pop(existing.member_id, None)
        if target is not None:
            group.target[member_id] = target
        existing.member_id = member_id
        return existing

    # -- SyncGroup, Heartbeat, LeaveGroup ----------------------------------------------------

    def _classic_member(
        self, group_id: str, member_id: str, instance_id: str | None
    ) -> tuple[ConsumerGroup, ConsumerMember]:
        """validateConsumerGroupMember, and the member must be a classic one."""
        group = self.groups.get(group_id)
        member = None
        if group is not None:
            if instance_id is None:
                member = group.members.get(member_id)
            else:
                member = group.static_member(instance_id)
                if member is not None and member.member_id != member_id:
                    raise ClassicRefusal(E.FencedInstanceIdError)
        if group is None or member is None or not member.classic:
            raise ClassicRefusal(E.UnknownMemberIdError)
        return group, member

    def classic_sync(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        instance_id: str | None,
    ) -> dict[str, Any]:
        """A SyncGroup answer: the member's current partitions in the consumer protocol."""
        with self._lock:
            try:
                group, member = self._classic_member(group_id, member_id, instance_id)
                if generation_id != member.member_epoch:
                    raise ClassicRefusal(E.IllegalGenerationError)
                names = [n for n, _ in member.classic_protocols]
                if protocol_type not in (None, PROTOCOL_TYPE) or (
                    protocol_name is not None and protocol_name not in names
                ):
                    raise ClassicRefusal(E.InconsistentGroupProtocolError)
                if group.group_epoch > member.member_epoch and member.state != UNREVOKED:
                    raise ClassicRefusal(E.RebalanceInProgressError)
            except ClassicRefusal as exc:
                return sync_result(exc.code)
            self._touch(group, member)
            named = {tid: name for name, (tid, _) in self.topics().items()}
            partitions = {named[t]: sorted(ps) for t, ps in member.assigned.items() if t in named}
            version = max(0, int.from_bytes(member.classic_protocols[0][1][:2], "big", signed=True))
            return {
                "error_code": 0,
                "assignment": encode_assignment(partitions, None, version),
                "protocol_type": PROTOCOL_TYPE,
                "protocol_name": protocol_name or names[0],
            }

    def classic_heartbeat(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None
    ) -> int:
        """A Heartbeat's error code: REBALANCE_IN_PROGRESS when the member must join again."""
        with self._lock:
            try:
                group, member = self._classic_member(group_id, member_id, instance_id)
                if generation_id != member.member_epoch:
                    raise ClassicRefusal(E.IllegalGenerationError)
            except ClassicRefusal as exc:
                return exc.code
            self._touch(group, member)
            waiting = member.state == UNRELEASED and any(
                group.owner(t, p) not in (None, member.member_id)
                for t, ps in group.target.get(member.member_id, {}).items()
                for p in ps
                if p not in member.assigned.get(t, ())
            )
            if (
                member.member_epoch < group.group_epoch
                or member.state == UNREVOKED
                or (member.state == UNRELEASED and not waiting)
            ):
                return E.RebalanceInProgressError.errno
            return 0

    def _touch(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        group.session_deadlines[member.member_id] = (
            time.monotonic() + (member.classic_session_ms or 0) / 1000
        )

    def classic_leave(self, group_id: str, members: Iterable[tuple[str, str | None]]) -> list[int]:
        """LeaveGroup of classic members (by member id, or by instance id): a code each."""
        codes = []
        with self._lock:
            for member_id, instance_id in members:
                try:
                    group = self.groups.get(group_id)
                    if instance_id is not None and not member_id and group is not None:
                        found = group.static_member(instance_id)
                        member_id = found.member_id if found is not None else ""
                    group, member = self._classic_member(group_id, member_id, instance_id)
                except ClassicRefusal as exc:
                    codes.append(exc.code)
                    continue
                self._fence(group, member, "left the group (LeaveGroup)")
                codes.append(0)
        return codes
