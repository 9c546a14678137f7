"""Consumer-group data model for the coordinator: members, groups, states and reply bodies.

Plain data plus pure helpers (no locking, no timers); :mod:`.coordinator` drives the state
machine Empty -> PreparingRebalance -> CompletingRebalance -> Stable (Dead once removed).
"""

from __future__ import annotations

import struct
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from kclient.protocol import errors as E

__all__ = [
    "JoinRequest",
    "Member",
    "Group",
    "join_error",
    "sync_result",
    "EMPTY",
    "PREPARING_REBALANCE",
    "COMPLETING_REBALANCE",
    "STABLE",
    "DEAD",
]

EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD = (
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
)

NONE = 0
COORDINATOR_NOT_AVAILABLE = E.CoordinatorNotAvailableError.errno
NOT_COORDINATOR = E.NotCoordinatorError.errno
ILLEGAL_GENERATION = E.IllegalGenerationError.errno
INCONSISTENT_GROUP_PROTOCOL = E.InconsistentGroupProtocolError.errno
INVALID_GROUP_ID = E.InvalidGroupIdError.errno
UNKNOWN_MEMBER_ID = E.UnknownMemberIdError.errno
INVALID_SESSION_TIMEOUT = E.InvalidSessionTimeoutError.errno
REBALANCE_IN_PROGRESS = E.RebalanceInProgressError.errno
MEMBER_ID_REQUIRED = E.MemberIdRequiredError.errno
GROUP_MAX_SIZE_REACHED = E.GroupMaxSizeReachedError.errno
FENCED_INSTANCE_ID = E.FencedInstanceIdError.errno


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The topics of a consumer-protocol subscription (version, topics, ...); None if it does
    not parse."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        pos, topics = 6, set()
        for _ in range(count):
            (size,) = struct.unpack_from(">h", metadata, pos)
            topics.add(bytes(metadata[pos + 2 : pos + 2 + size]).decode())
            pos += 2 + size
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


@dataclass
class JoinRequest:
    """The fields of a JoinGroup request the coordinator needs."""

    group_id: str
    member_id: str
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    group_instance_id: str | None = None
    require_known_member: bool = False  # JoinGroup v4+: hand out an id first (KIP-394)


@dataclass
class Member:
    """One group member: its subscription metadata, timeouts, and the replies it awaits."""

    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    join_future: Future[Any] | None = None
    sync_future: Future[Any] | None = None
    assignment: bytes = b""
    session_deadline: float = 0.0

    def protocol_names(self) -> list[str]:
        """The member's protocols in its preference order."""
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        """The member's metadata for one protocol."""
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def keep_alive(self) -> bool:
        """Members waiting for a join or sync reply are not expired meanwhile."""
        return self.join_future is not None or self.sync_future is not None

    def touch(self) -> None:
        """Restart the session timer (a heartbeat, join, sync or commit was received)."""
        self.session_deadline = time.monotonic() + self.session_timeout_ms / 1000


@dataclass
class Group:
    """A consumer group's state: members, generation, leader and chosen protocol."""

    group_id: str
    state: str = EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending: dict[str, float] = field(default_factory=dict)  # member id -> deadline
    join_deadline: float = 0.0
    delay_deadline: float | None = None
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id

    def fenced(self, instance_id: str | None, member_id: str) -> bool:
        """KIP-345: a request naming a static instance whose current member id is another."""
        if instance_id is None:
            return False
        current = self.static_members.get(instance_id)
        return current is not None and current != member_id

    def supported_protocols(self, exclude: str | None = None) -> set[str] | None:
        """Protocols every member (but ``exclude``) supports; None when there are none such."""
        sets = [set(m.protocol_names()) for mid, m in self.members.items() if mid != exclude]
        return set.intersection(*sets) if sets else None

    def all_joined(self) -> bool:
        """Every member has rejoined and no handed-out member id is still outstanding."""
        return not self.pending and all(m.join_future for m in self.members.values())

    def deadlines(self) -> list[float]:
        """When something may expire: pending ids, idle sessions, the rebalance's timers."""
        out = [*self.pending.values()]
        out += [m.session_deadline for m in self.members.values() if not m.keep_alive()]
        if self.state == PREPARING_REBALANCE:
            out += [d for d in (self.delay_deadline, self.join_deadline) if d is not None]
        return out

    def select_protocol(self) -> str:
        """The first protocol, in the leader's preference order, that every member supports."""
        assert self.leader_id is not None, "a protocol is selected once a leader joined"
        leader = self.members[self.leader_id]
        common = self.supported_protocols() or set()
        return next((p for p in leader.protocol_names() if p in common), leader.protocol_names()[0])

    def join_result(self, member_id: str) -> dict[str, Any]:
        """The JoinGroup response for a member; the leader also gets everyone's metadata."""
        members = []
        if member_id == self.leader_id:
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata(self.protocol_name),
                }
                for m in self.members.values()
            ]
        return {
            "error_code": NONE,
            "generation_id": self.generation_id,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name,
            "leader": self.leader_id or "",
            "member_id": member_id,
            "members": members,
        }

    def describe(self) -> dict[str, Any]:
        """A snapshot: state, generation, protocol, leader and member ids."""
        return {
            "group_id": self.group_id,
            "state": self.state,
            "generation_id": self.generation_id,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name,
            "leader": self.leader_id,
            "members": list(self.members),
        }

    def summary(self) -> dict[str, Any]:
        """DescribeGroups' view, as Kafka's: member metadata and assignments only when Stable."""
        stable = self.state == STABLE
        protocol = self.protocol_name if stable else None
        members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata(protocol) if stable else b"",
                "member_assignment": m.assignment if stable else b"",
            }
            for m in self.members.values()
        ]
        return {
            "group_id": self.group_id,
            "group_state": self.state,
            "protocol_type": self.protocol_type or "",
            "protocol_data": protocol or "",
            "members": members,
        }

    @staticmethod
    def member_error(
        group: Group | None, generation_id: int, member_id: str, instance_id: str | None = None
    ) -> int:
        """Heartbeat/SyncGroup checks: is this a member of the group's current generation
        (a replaced static member is FENCED_INSTANCE_ID)."""
        if group is not None and group.fenced(instance_id, member_id):
            return FENCED_INSTANCE_ID
        if group is None or group.state == EMPTY or member_id not in group.members:
            return UNKNOWN_MEMBER_ID
        if group.state == DEAD:
            return COORDINATOR_NOT_AVAILABLE
        if generation_id != group.generation_id:
            return ILLEGAL_GENERATION
        return NONE

    @staticmethod
    def sync_error(
        group: Group | None,
        generation_id: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        instance_id: str | None = None,
    ) -> int:
        """SyncGroup checks: membership, the protocol (v5+), no rebalance in its join phase."""
        code = Group.member_error(group, generation_id, member_id, instance_id)
        if code or group is None:
            return code
        if protocol_type is not None and protocol_type != group.protocol_type:
            return INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and protocol_name != group.protocol_name:
            return INCONSISTENT_GROUP_PROTOCOL
        if group.state == PREPARING_REBALANCE:
            return REBALANCE_IN_PROGRESS
        return NONE

    @staticmethod
    def commit_error(
        group: Group | None, generation_id: int, member_id: str, instance_id: str | None = None
    ) -> int:
        """Kafka's ClassicGroup.validateOffsetCommit: a member of the current generation may
        commit while the group is Stable or still preparing a rebalance; REBALANCE_IN_PROGRESS
        only once the new generation is completing, after the member and generation checks.
        A valid member's session is refreshed."""
        if group is None:
            return NONE if generation_id < 0 else ILLEGAL_GENERATION
        if group.state == DEAD:
            return COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.state == EMPTY:
            return NONE
        member = group.members.get(member_id)
        if generation_id >= 0 or member_id or instance_id is not None:
            code = group.static_error(instance_id, member_id)
            if code or member is None:
                return code or UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return ILLEGAL_GENERATION
        elif group.state != EMPTY:
            return UNKNOWN_MEMBER_ID
        if group.state == COMPLETING_REBALANCE:
            return REBALANCE_IN_PROGRESS
        if member is not None:
            member.touch()
        return NONE

    def static_error(self, instance_id: str | None, member_id: str) -> int:
        """Kafka's validateMember for a named instance: unknown instance UNKNOWN_MEMBER_ID,
        another member id now holding it FENCED_INSTANCE_ID."""
        if instance_id is None:
            return NONE
        current = self.static_members.get(instance_id)
        if current is None:
            return UNKNOWN_MEMBER_ID
        return FENCED_INSTANCE_ID if current != member_id else NONE


def join_error(code: int, member_id: str = "") -> dict[str, Any]:
    """A JoinGroup response body carrying only an error."""
    return {
        "error_code": code,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


def sync_result(code: int, group: Group | None = None, assignment: bytes = b"") -> dict[str, Any]:
    """A SyncGroup response body."""
    return {
        "error_code": code,
        "assignment": assignment,
        "protocol_type": group.protocol_type if group and not code else None,
        "protocol_name": group.protocol_name if group and not code else None,
    }
