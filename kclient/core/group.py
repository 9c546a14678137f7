"""One consumer group member's state machine and its conversations with the group coordinator.

:class:`MemberState` is what outlives a conversation: the member id and generation the
coordinator gave, the static instance id (KIP-345), the protocol (assignor) it chose, and the
partitions owned with the generation they came from.  The conversations:

* :func:`join`: JoinGroup, again with the member id the coordinator asks for
  (MEMBER_ID_REQUIRED), with none after UNKNOWN_MEMBER_ID, again after REBALANCE_IN_PROGRESS;
* :func:`sync`: SyncGroup; None when the group moved on (join again);
* :func:`join_and_sync`: both, the elected leader assigning with the assignor it is given over
  the cluster's topics (a Metadata request to any broker);
* :func:`heartbeat` (one beat) and :func:`heartbeats` (the loop, a beat every interval);
* :func:`leave`: LeaveGroup, then forget the member id.

FENCED_INSTANCE_ID (another process took the static instance id) raises
:class:`FencedInstanceIdError` everywhere: fatal for the member.

The listener order is the core's too: :func:`give_up` (eager: every owned partition is revoked
before joining) and :func:`take_assignment` (what a new assignment revokes, then adds, and
whether a cooperative member must rejoin at once so the revoked partitions reach their new
owner, KIP-429).  The face calls the user's listener in that order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kclient.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    KafkaError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_for_code,
)
from kclient.protocol.apis import HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP

from .consumer_protocol import COOPERATIVE
from .coordinator import CoordinatorState, coordinated
from .metadata import refresh_metadata
from .steps import Conversation, Sleep

if TYPE_CHECKING:
    from kclient.protocol.messages import JoinGroupResponse, JoinGroupResponseMember

__all__ = [
    "MemberState",
    "Change",
    "Assignor",
    "REJOIN",
    "LOST",
    "join",
    "sync",
    "join_and_sync",
    "heartbeat",
    "heartbeats",
    "leave",
    "give_up",
    "give_up_some",
    "take_assignment",
    "cluster_partitions",
    "rejoin_reason",
]

log = logging.getLogger(__name__)

TP = tuple[str, int]
#: error codes after which a member joins again (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
#: UNKNOWN_MEMBER_ID)
REJOIN = (RebalanceInProgressError.errno, IllegalGenerationError.errno, UnknownMemberIdError.errno)
#: of those, the ones that mean the member lost its generation (its partitions are lost, not
#: revoked: nothing may be committed for them)
LOST = (IllegalGenerationError.errno, UnknownMemberIdError.errno)

#: the leader's job: (protocol, members, all topics, {topic: partitions}) -> SyncGroup's
#: ``assignments`` ([{"member_id", "assignment"}])
Assignor = Callable[
    [str, "list[JoinGroupResponseMember]", list[str], dict[str, list[int]]], list[dict[str, Any]]
]


@dataclass
class MemberState:
    """One member of ``group`` (see the module docstring)."""

    group: str
    session_timeout_ms: int
    instance_id: str | None = None
    rebalance_timeout_ms: int | None = None  # None: the session timeout
    member_id: str = ""
    generation_id: int = -1
    #: the protocol (assignor) the coordinator chose at the last join
    protocol: str | None = None
    #: the partitions owned after the last SyncGroup, and that generation (cooperative)
    owned: frozenset[TP] = field(default_factory=frozenset)
    owned_generation: int = -1

    def generation(self) -> tuple[int, str]:
        """(generation id, member id): what OffsetCommit sends."""
        return self.generation_id, self.member_id

    def forget(self) -> None:
        """Drop the member id and generation (left, or a static member's close)."""
        self.member_id, self.generation_id = "", -1

    def fenced(self, what: str) -> FencedInstanceIdError:
        """The fatal error of a member whose static instance id another process took."""
        return FencedInstanceIdError(
            f"{what} of group {self.group!r}: group.instance.id {self.instance_id!r} is "
            f"now used by another member (member id {self.member_id!r} was fenced); this "
            "consumer cannot continue: close it, and give each live consumer its own "
            "group.instance.id"
        )


def _any_code(resp: Any) -> int:
    return int(resp.error_code)


def join(
    member: MemberState, coord: CoordinatorState, protocols: Sequence[tuple[str, bytes]]
) -> Conversation[JoinGroupResponse | None]:
    """JoinGroup offering ``protocols`` ((name, metadata), preferred first); None: the group
    kept moving for three answers (try again later)."""
    for _ in range(3):
        body = {
            "group_id": member.group,
            "session_timeout_ms": member.session_timeout_ms,
            "rebalance_timeout_ms": member.rebalance_timeout_ms or member.session_timeout_ms,
            "member_id": member.member_id,
            "group_instance_id": member.instance_id,
            "protocol_type": "consumer",
            "protocols": [{"name": n, "metadata": m} for n, m in protocols],
        }
        resp = yield from coordinated(coord, JOIN_GROUP, body, _any_code)
        code = resp.error_code
        if code == MemberIdRequiredError.errno:
            member.member_id = resp.member_id
            continue
        if code == UnknownMemberIdError.errno:
            member.member_id = ""
            continue
        if code == RebalanceInProgressError.errno:
            continue
        if code == FencedInstanceIdError.errno:
            raise member.fenced("JoinGroup")
        if code:
            raise error_for_code(code)(f"JoinGroup of {member.group!r}")
        member.generation_id, member.member_id = resp.generation_id, resp.member_id
        member.protocol = resp.protocol_name or protocols[0][0]
        return resp
    return None


def sync(
    member: MemberState, coord: CoordinatorState, assignments: list[dict[str, Any]]
) -> Conversation[bytes | None]:
    """SyncGroup: this member's Assignment bytes; None: the group moved on (join again)."""
    body = {
        "group_id": member.group,
        "generation_id": member.generation_id,
        "member_id": member.member_id,
        "group_instance_id": member.instance_id,
        "protocol_type": "consumer",
        "protocol_name": member.protocol,
        "assignments": assignments,
    }
    resp = yield from coordinated(coord, SYNC_GROUP, body, _any_code)
    code = resp.error_code
    if code in REJOIN:
        if code == UnknownMemberIdError.errno:
            member.member_id = ""
        return None
    if code == FencedInstanceIdError.errno:
        raise member.fenced("SyncGroup")
    if code:
        raise error_for_code(code)(f"SyncGroup of {member.group!r}")
    return bytes(resp.assignment)


def cluster_partitions() -> Conversation[tuple[list[str], dict[str, list[int]]]]:
    """Every topic of the cluster (that answered without error) and its partitions, from a
    Metadata request to any broker: what the leader assigns over."""
    resp = yield from refresh_metadata(None, allow_auto_create=False)
    parts = {
        t.name: sorted(p.partition_index for p in t.partitions)
        for t in resp.topics
        if t.name is not None and not t.error_code
    }
    return sorted(parts), parts


def join_and_sync(
    member: MemberState,
    coord: CoordinatorState,
    protocols: Sequence[tuple[str, bytes]],
    assignor: Assignor,
    attempts: int = 1,
    cancelled: Callable[[], bool] = lambda: False,
) -> Conversation[bytes | None]:
    """JoinGroup, SyncGroup (the leader assigning with ``assignor``), up to ``attempts``
    rounds: this member's Assignment bytes, or None (the group kept moving, or cancelled)."""
    for _ in range(max(1, attempts)):
        if cancelled():
            return None
        resp = yield from join(member, coord, protocols)
        if resp is None:
            continue
        assignments: list[dict[str, Any]] = []
        if resp.leader == resp.member_id and resp.members:
            topics, parts = yield from cluster_partitions()
            assignments = assignor(
                member.protocol or protocols[0][0], list(resp.members), topics, parts
            )
        data = yield from sync(member, coord, assignments)
        if data is not None:
            return data
    return None


def heartbeat(member: MemberState, coord: CoordinatorState) -> Conversation[int]:
    """One Heartbeat; its error code (UNKNOWN_MEMBER_ID also forgets the member id;
    FENCED_INSTANCE_ID raises)."""
    body = {
        "group_id": member.group,
        "generation_id": member.generation_id,
        "member_id": member.member_id,
        "group_instance_id": member.instance_id,
    }
    resp = yield from coordinated(coord, HEARTBEAT, body, _any_code)
    code = int(resp.error_code)
    if code == UnknownMemberIdError.errno:
        member.member_id = ""
    if code == FencedInstanceIdError.errno:
        raise member.fenced("Heartbeat")
    return code


def rejoin_reason(code: int) -> str | None:
    """How a member rejoins after an error code: "lost" (its generation is gone: partitions
    lost, nothing committed), "revoke" (a rebalance: revoke, commit), or None (no rejoin)."""
    if code in LOST:
        return "lost"
    return "revoke" if code in REJOIN else None


def heartbeats(
    member: MemberState,
    coord: CoordinatorState,
    interval_s: float,
    active: Callable[[], bool],
    on_rejoin: Callable[[str, int], None],
    on_fenced: Callable[[FencedInstanceIdError], None],
    stopped: Callable[[], bool] = lambda: False,
) -> Conversation[None]:
    """The heartbeat loop: every ``interval_s`` while ``active()``, one beat; a rebalance or a
    lost generation calls ``on_rejoin(how, code)`` (unless a join started meanwhile), fencing
    ``on_fenced``; other failures are logged and the next beat tries again."""
    while not stopped():
        yield Sleep(interval_s)
        if stopped() or not active() or not member.member_id:
            continue
        generation = member.generation_id
        try:
            code = yield from heartbeat(member, coord)
        except FencedInstanceIdError as exc:
            log.error("%s: %s", member.group, exc)
            on_fenced(exc)
            continue
        except KafkaError as exc:
            log.info("%s: heartbeat failed: %s", member.group, exc)
            continue
        how = rejoin_reason(code)
        if how is not None and member.generation_id in (generation, -1):
            log.info(
                "%s: heartbeat says %s; rejoining", member.group, error_for_code(code).__name__
            )
            on_rejoin(how, code)
        elif code and how is None:
            log.info("%s: heartbeat error %d", member.group, code)


def leave(member: MemberState, coord: CoordinatorState) -> Conversation[None]:
    """LeaveGroup (no retries), then forget the member id and generation."""
    if not member.member_id:
        return
    body = {
        "group_id": member.group,
        "member_id": member.member_id,
        "members": [{"member_id": member.member_id, "group_instance_id": member.instance_id}],
    }
    try:
        yield from coordinated(coord, LEAVE_GROUP, body, _any_code, retries=0)
    finally:
        member.forget()


@dataclass(frozen=True)
class Change:
    """What a new assignment means for the listener, in order: revoke ``revoked``, then
    assign ``added``; ``rejoin``: a cooperative member rejoins at once (KIP-429)."""

    revoked: frozenset[TP]
    added: frozenset[TP]
    assignment: frozenset[TP]
    rejoin: bool


def give_up(member: MemberState) -> frozenset[TP]:
    """Before an eager rejoin (or after the generation was lost): every owned partition goes;
    returns them (revoked, or lost)."""
    owned, member.owned, member.owned_generation = member.owned, frozenset(), -1
    return owned


def take_assignment(member: MemberState, new: Iterable[TP]) -> Change:
    """Adopt the partitions a SyncGroup gave: revoke what is gone, keep the rest, add the new;
    with cooperative-sticky a revocation means an immediate follow-up rebalance."""
    assignment = frozenset(new)
    revoked, added = member.owned - assignment, assignment - member.owned
    member.owned, member.owned_generation = assignment, member.generation_id
    return Change(revoked, added, assignment, bool(revoked) and member.protocol == COOPERATIVE)


def give_up_some(member: MemberState, partitions: Iterable[TP]) -> frozenset[TP]:
    """Cooperative revocation of some owned partitions (topics no longer subscribed): returns
    those actually owned; the rest stays."""
    gone = member.owned & frozenset(partitions)
    member.owned = member.owned - gone
    return gone
