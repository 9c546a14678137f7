"""KIP-848 consumer groups: the data model and the reconciliation of a member's assignment.

A :class:`ConsumerGroup` has a group epoch (bumped when membership, subscriptions or the
subscribed topics change), a target assignment computed at the target assignment epoch, and
members each with a member epoch and the partitions they currently own.  :func:`reconcile` moves
a member towards its target as Kafka's CurrentAssignmentBuilder does: partitions to revoke are
asked back first (the member keeps its epoch until it acknowledges, state
``UNREVOKED_PARTITIONS``); partitions still owned by another member are withheld until released
(``UNRELEASED_PARTITIONS``) and handed over at a later heartbeat; otherwise the member reaches
the target epoch (``STABLE``).  Pure data and functions: :mod:`.consumer_coordinator` drives them.
"""

from __future__ import annotations

import json
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .assignors import Assignment

__all__ = [
    "ConsumerGroup",
    "ConsumerMember",
    "reconcile",
    "STABLE_MEMBER",
    "UNREVOKED",
    "UNRELEASED",
    "EMPTY",
    "ASSIGNING",
    "RECONCILING",
    "STABLE",
    "DEAD",
    "group_records",
    "record_key",
    "parse_key",
]

#: Kafka's ConsumerGroupState names (ListGroups, DescribeGroups, ConsumerGroupDescribe)
EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD = (
    "Empty",
    "Assigning",
    "Reconciling",
    "Stable",
    "Dead",
)
#: Kafka's MemberState
STABLE_MEMBER, UNREVOKED, UNRELEASED = "stable", "unrevoked_partitions", "unreleased_partitions"

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2


@dataclass
class ConsumerMember:
    """One member: identity, subscription, epochs and the partitions it owns or must give up."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topic_names: list[str] = field(default_factory=list)
    topic_regex: str | None = None
    assignor: str | None = None
    rebalance_timeout_ms: int = 300_000
    member_epoch: int = 0
    previous_epoch: int = 0
    state: str = STABLE_MEMBER
    assigned: Assignment = field(default_factory=dict)
    revoking: Assignment = field(default_factory=dict)
    #: (topic id, partition) -> the member epoch it was assigned at (assigned or revoking)
    partition_epochs: dict[tuple[bytes, int], int] = field(default_factory=dict)
    #: a classic member (JoinGroup / SyncGroup / Heartbeat, Kafka's ClassicMemberMetadata):
    #: its session timeout and JoinGroup protocols (name, metadata); None for the others
    classic_session_ms: int | None = None
    classic_protocols: list[tuple[str, bytes]] = field(default_factory=list)

    @property
    def classic(self) -> bool:
        """Whether the member speaks the classic protocol."""
        return self.classic_session_ms is not None

    def subscription(self) -> tuple[Any, ...]:
        """What the group epoch depends on."""
        return (tuple(sorted(self.topic_names)), self.topic_regex, self.assignor, self.rack_id)

    def metadata_value(self) -> dict[str, Any]:
        """The ConsumerGroupMemberMetadata record's content."""
        return {
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "topics": sorted(self.topic_names),
            "regex": self.topic_regex,
            "assignor": self.assignor,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "classic": None
            if self.classic_session_ms is None
            else {
                "session_timeout_ms": self.classic_session_ms,
                "protocols": [[n, m.hex()] for n, m in self.classic_protocols],
            },
        }

    def assignment_value(self) -> dict[str, Any]:
        """The ConsumerGroupCurrentMemberAssignment record's content."""
        return {
            "epoch": self.member_epoch,
            "previous_epoch": self.previous_epoch,
            "state": self.state,
            "assigned": encode_assignment(self.assigned),
            "revoking": encode_assignment(self.revoking),
            "partition_epochs": [
                [t.hex(), p, e] for (t, p), e in sorted(self.partition_epochs.items())
            ],
        }

    def load_metadata(self, value: Mapping[str, Any]) -> None:
        """Replay a ConsumerGroupMemberMetadata record."""
        self.instance_id, self.rack_id = value["instance_id"], value["rack_id"]
        self.client_id, self.client_host = value["client_id"], value["client_host"]
        self.topic_names, self.topic_regex = list(value["topics"]), value["regex"]
        self.assignor = value["assignor"]
        self.rebalance_timeout_ms = value["rebalance_timeout_ms"]
        classic = value.get("classic")
        if classic is not None:
            self.classic_session_ms = classic["session_timeout_ms"]
            self.classic_protocols = [(n, bytes.fromhex(m)) for n, m in classic["protocols"]]

    def load_assignment(self, value: Mapping[str, Any]) -> None:
        """Replay a ConsumerGroupCurrentMemberAssignment record."""
        self.member_epoch, self.previous_epoch = value["epoch"], value["previous_epoch"]
        self.state = value["state"]
        self.assigned = decode_assignment(value["assigned"])
        self.revoking = decode_assignment(value["revoking"])
        self.partition_epochs = {
            (bytes.fromhex(t), p): e for t, p, e in value.get("partition_epochs", ())
        }


@dataclass
class ConsumerGroup:
    """A consumer group's hard state (persisted) and the timers of its members (soft)."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    #: the subscribed topics' (id, partition count) the last epoch was computed from
    topics: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    session_deadlines: dict[str, float] = field(default_factory=dict)
    revoke_deadlines: dict[str, float] = field(default_factory=dict)
    #: when the target was last computed (the assignment interval counts from it)
    assigned_at: float = float("-inf")
    #: the records last written, by key, so a change writes only what differs
    persisted: dict[bytes, bytes] = field(default_factory=dict)

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        """The member holding a group.instance.id."""
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def state(self) -> str:
        """Empty, Assigning (target behind the group epoch), Reconciling or Stable."""
        if not self.members:
            return EMPTY
        if self.assignment_epoch < self.group_epoch:
            return ASSIGNING
        if any(
            m.member_epoch != self.assignment_epoch or m.state != STABLE_MEMBER
            for m in self.members.values()
        ):
            return RECONCILING
        return STABLE

    def owner(self, topic_id: bytes, partition: int) -> str | None:
        """The member that holds a partition (assigned or still to revoke)."""
        for member in self.members.values():
            if partition in member.assigned.get(topic_id, ()) or partition in member.revoking.get(
                topic_id, ()
            ):
                return member.member_id
        return None

    def subscribed_names(self, resolve: Callable[[str], set[str]]) -> set[str]:
        """Every topic a member subscribes to, by name or by a regex ``resolve`` expands."""
        names: set[str] = set()
        for member in self.members.values():
            names.update(member.topic_names)
            if member.topic_regex:
                names |= resolve(member.topic_regex)
        return names


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    owned: Iterable[tuple[bytes, Iterable[int]]] | None,
    owner: Callable[[bytes, int], str | None],
) -> None:
    """Move ``member`` one step towards its target (Kafka's CurrentAssignmentBuilder).
    ``owned``: the partitions the member reports holding, None when it did not say."""
    holds = None if owned is None else {(t, p) for t, parts in owned for p in parts}

    def still_holds(parts: Assignment) -> bool:
        if holds is None:
            return True
        return any((t, p) in holds for t, ps in parts.items() for p in ps)

    if member.state == UNREVOKED:
        if still_holds(member.revoking):
            return
        member.revoking = {}
        member.state = STABLE_MEMBER
        _next_assignment(member, target_epoch, target, still_holds, owner)
    elif member.state == UNRELEASED or member.member_epoch != target_epoch:
        _next_assignment(member, target_epoch, target, still_holds, owner)


def _next_assignment(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    still_holds: Callable[[Assignment], bool],
    owner: Callable[[bytes, int], str | None],
) -> None:
    """computeNextAssignment: keep, revoke, or wait for partitions others still hold."""
    kept: Assignment = {}
    revoke: Assignment = {}
    waiting = False
    for tid in set(target) | set(member.assigned):
        want = target.get(tid, set())
        have = member.assigned.get(tid, set())
        keep = have & want
        for p in sorted(want - have):
            holder = owner(tid, p)
            if holder is None or holder == member.member_id:
                keep.add(p)
            else:
                waiting = True
        if keep:
            kept[tid] = keep
        if have - want:
            revoke[tid] = have - want
    if revoke and still_holds(revoke):
        member.state = UNREVOKED
        member.assigned = {
            t: ps & target.get(t, set())
            for t, ps in member.assigned.items()
            if ps & target.get(t, set())
        }
        member.revoking = revoke
        return
    member.previous_epoch, member.member_epoch = member.member_epoch, target_epoch
    member.assigned = kept
    member.revoking = {}
    member.state = UNRELEASED if waiting else STABLE_MEMBER
    member.partition_epochs = {
        (t, p): member.partition_epochs.get((t, p), target_epoch)
        for t, ps in kept.items()
        for p in ps
    }


# -- records (the offsets log's keys as Kafka's; values JSON) ---------------------------------

#: Kafka's record types (the key's version field)
GROUP_METADATA, MEMBER_METADATA, TARGET_MEMBER, TARGET_METADATA, CURRENT_ASSIGNMENT = 3, 5, 6, 7, 8


def _str(text: str) -> bytes:
    """int16 length and UTF-8 bytes."""
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def record_key(kind: int, group_id: str, member_id: str | None = None) -> bytes:
    """A group record's key: the type, the group id and (member records) the member id."""
    return (
        struct.pack(">h", kind)
        + _str(group_id)
        + (_str(member_id) if member_id is not None else b"")
    )


def parse_key(key: bytes) -> tuple[int, str, str | None] | None:
    """(type, group id, member id or None) of a group record key; None for other keys."""
    (kind,) = struct.unpack_from(">h", key, 0)
    if kind not in (
        GROUP_METADATA,
        MEMBER_METADATA,
        TARGET_MEMBER,
        TARGET_METADATA,
        CURRENT_ASSIGNMENT,
    ):
        return None
    (size,) = struct.unpack_from(">h", key, 2)
    group_id = key[4 : 4 + size].decode()
    if kind in (GROUP_METADATA, TARGET_METADATA):
        return kind, group_id, None
    (msize,) = struct.unpack_from(">h", key, 4 + size)
    return kind, group_id, key[6 + size : 6 + size + msize].decode()


def group_records(group: ConsumerGroup) -> dict[bytes, bytes]:
    """Every record that describes the group now (a deleted group has none)."""
    gid = group.group_id

    def value(content: Mapping[str, Any]) -> bytes:
        return json.dumps(content, sort_keys=True).encode()

    topics = {n: [t.hex(), c] for n, (t, c) in sorted(group.topics.items())}
    out = {
        record_key(GROUP_METADATA, gid): value({"epoch": group.group_epoch, "topics": topics}),
        record_key(TARGET_METADATA, gid): value({"epoch": group.assignment_epoch}),
    }
    for member_id, member in group.members.items():
        out[record_key(MEMBER_METADATA, gid, member_id)] = value(member.metadata_value())
        out[record_key(CURRENT_ASSIGNMENT, gid, member_id)] = value(member.assignment_value())
    for member_id, assignment in group.target.items():
        out[record_key(TARGET_MEMBER, gid, member_id)] = value(
            {"assignment": encode_assignment(assignment)}
        )
    return out


def encode_assignment(assignment: Assignment) -> dict[str, list[int]]:
    """topic id -> partitions, as JSON (topic ids as UUID strings)."""
    return {str(uuid.UUID(bytes=t)): sorted(ps) for t, ps in sorted(assignment.items()) if ps}


def decode_assignment(value: Mapping[str, list[int]]) -> Assignment:
    """The inverse of :func:`encode_assignment`."""
    return {uuid.UUID(t).bytes: set(ps) for t, ps in value.items()}
