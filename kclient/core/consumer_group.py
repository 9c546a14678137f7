"""A KIP-848 consumer group member (``group.protocol=consumer``): its state machine, sans-IO.

The coordinator assigns; the member sends one ConsumerGroupHeartbeat every interval the broker
gives and reconciles.  :class:`ConsumerMember` is what outlives a conversation: the member id
(generated here, as Java 4.x does, KIP-1082), the member epoch, the subscription (topic names
or a broker-side regex), the partitions owned and the last assignment received.  The states
are Java's (``MemberState``): UNSUBSCRIBED, JOINING, STABLE, RECONCILING, ACKNOWLEDGING,
FENCED, LEAVING, FATAL.

* :func:`heartbeat`: one ConsumerGroupHeartbeat; the answer moves the state (a new assignment:
  RECONCILING; FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: FENCED; a fatal error raises).  A
  heartbeat carries every field when joining or after a failure, else only what changed since
  the last one (null fields: unchanged), as Java sends them.
* :func:`reconcile` (the face, on the application's thread): what the assignment revokes and
  adds, by topic name (:func:`resolve_topics` looks up topic ids it cannot name yet); the face
  commits and calls ``on_partitions_revoked`` before :func:`acknowledge`, which makes the next
  heartbeat (due at once) carry the new owned partitions: the coordinator hands a partition to
  its next owner only once this one stopped sending it.
* :func:`lost` after fencing: the partitions are lost (``on_partitions_lost``, nothing
  committed), the member joins again with epoch 0 and the same member id.
* :func:`leave`: epoch -1 (a static member -2: it comes back within the session and keeps its
  assignment).

Offset commits carry the member epoch (:meth:`ConsumerMember.generation`, OffsetCommit v9).
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from kclient.errors import (
    FencedMemberEpochError,
    KafkaError,
    UnknownMemberIdError,
    error_for_code,
)
from kclient.protocol.apis import CONSUMER_GROUP_HEARTBEAT
from kclient.protocol.apis.consumer_group_heartbeat import LEAVE_EPOCH, STATIC_LEAVE_EPOCH

from .coordinator import CoordinatorState, coordinated
from .metadata import refresh_metadata
from .steps import Conversation

if TYPE_CHECKING:
    from kclient.protocol.messages import ConsumerGroupHeartbeatResponse

__all__ = [
    "ConsumerMember",
    "Reconciliation",
    "new_member_id",
    "heartbeat_body",
    "heartbeat",
    "apply_answer",
    "resolve_topics",
    "reconcile",
    "acknowledge",
    "lost",
    "leave",
    "UNSUBSCRIBED",
    "JOINING",
    "STABLE",
    "RECONCILING",
    "ACKNOWLEDGING",
    "FENCED",
    "LEAVING",
    "FATAL",
]

log = logging.getLogger(__name__)

TP = tuple[str, int]
TopicId = bytes

UNSUBSCRIBED = "UNSUBSCRIBED"
JOINING = "JOINING"
STABLE = "STABLE"
RECONCILING = "RECONCILING"
ACKNOWLEDGING = "ACKNOWLEDGING"
FENCED = "FENCED"
LEAVING = "LEAVING"
FATAL = "FATAL"

#: errors after which the member lost its partitions and joins again with epoch 0
_FENCING = (FencedMemberEpochError.errno, UnknownMemberIdError.errno)
#: the first interval, before the broker gave one (Java's default heartbeat.interval.ms)
_FIRST_INTERVAL_MS = 3000


def new_member_id() -> str:
    """A random member id as Kafka writes a Uuid: 22 characters of URL-safe base64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


@dataclass
class _Sent:
    """What the last heartbeat carried, so the next sends only what changed."""

    topics: tuple[str, ...] | None
    regex: str | None
    assignor: str | None
    owned: frozenset[tuple[TopicId, int]]


@dataclass
class ConsumerMember:
    """One member of ``group`` under the consumer protocol (see the module docstring)."""

    group: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 300000
    server_assignor: str | None = None
    member_id: str = field(default_factory=new_member_id)
    epoch: int = 0
    #: the heartbeat interval the coordinator gave (ms)
    interval_ms: int = _FIRST_INTERVAL_MS
    state: str = UNSUBSCRIBED
    topics: tuple[str, ...] | None = None
    regex: str | None = None
    #: the partitions owned, by topic id and by name (the same partitions)
    owned_ids: frozenset[tuple[TopicId, int]] = frozenset()
    owned: frozenset[TP] = frozenset()
    #: the last assignment the coordinator sent, not reconciled yet (None: nothing to do)
    target: dict[TopicId, frozenset[int]] | None = None
    #: topic id -> name, from Metadata
    names: dict[TopicId, str] = field(default_factory=dict)
    #: whether an assignment was reconciled since the member (re)joined
    has_assignment: bool = False
    #: the fatal error that ended the member (FATAL)
    error: KafkaError | None = None
    _sent: _Sent | None = None

    def generation(self) -> tuple[int, str]:
        """(member epoch, member id): what OffsetCommit v9 sends for this member."""
        return self.epoch, self.member_id

    def subscribe(self, topics: Iterable[str] | None = None, regex: str | None = None) -> None:
        """Subscribe to ``topics`` or to the broker-side ``regex`` (RE2J syntax); an
        unsubscribed member joins (epoch 0)."""
        if (topics is None) == (regex is None):
            raise ValueError("subscribe to topic names or to a regex (one of the two)")
        self.topics = None if topics is None else tuple(sorted(set(topics)))
        self.regex = regex
        if self.state in (UNSUBSCRIBED, LEAVING, FATAL):
            self.epoch, self.state, self._sent, self.error = 0, JOINING, None, None
            self.has_assignment = False

    @property
    def active(self) -> bool:
        """Whether heartbeats are due (in the group, or joining it)."""
        return self.state in (JOINING, STABLE, RECONCILING, ACKNOWLEDGING)

    def wait_s(self) -> float:
        """How long until the next heartbeat: none while joining, acknowledging or after a
        failure (the next one carries every field), else the coordinator's interval."""
        if self.state in (JOINING, ACKNOWLEDGING) or self._sent is None:
            return 0.0
        return self.interval_ms / 1000.0

    def unresolved(self) -> set[TopicId]:
        """Topic ids of the pending assignment that no Metadata answer named yet."""
        return {t for t in self.target or () if t not in self.names}


def heartbeat_body(member: ConsumerMember, version: int) -> dict[str, Any]:
    """The next ConsumerGroupHeartbeat: every field when joining (epoch 0) or after a failure,
    else null for each field unchanged since the last one.  Records what it carries."""
    full = member._sent is None or member.epoch == 0
    sent = member._sent
    if member.regex is not None and version < 1:
        raise error_for_code(35)(  # UNSUPPORTED_VERSION
            f"group {member.group!r}: a regex subscription needs ConsumerGroupHeartbeat v1 "
            "(Kafka 4.0+); this coordinator speaks v0 only"
        )
    body: dict[str, Any] = {
        "group_id": member.group,
        "member_id": member.member_id,
        "member_epoch": member.epoch,
        "instance_id": member.instance_id,
    }
    if full:
        body["rack_id"] = member.rack_id
        body["rebalance_timeout_ms"] = member.rebalance_timeout_ms
    if full or sent is None or sent.topics != member.topics:
        body["subscribed_topic_names"] = list(member.topics or ())  # [] under a regex
    if version >= 1 and member.regex is not None:
        if full or sent is None or sent.regex != member.regex:
            body["subscribed_topic_regex"] = member.regex
    elif version >= 1 and sent is not None and sent.regex is not None:
        body["subscribed_topic_regex"] = ""  # no regex any more
    if full or sent is None or sent.assignor != member.server_assignor:
        body["server_assignor"] = member.server_assignor
    if full or sent is None or sent.owned != member.owned_ids:
        body["topic_partitions"] = _by_topic(member.owned_ids)
    member._sent = _Sent(member.topics, member.regex, member.server_assignor, member.owned_ids)
    return body


def _by_topic(owned: Iterable[tuple[TopicId, int]]) -> list[dict[str, Any]]:
    out: dict[TopicId, list[int]] = {}
    for tid, p in sorted(owned):
        out.setdefault(tid, []).append(p)
    return [{"topic_id": t, "partitions": ps} for t, ps in out.items()]


def _code(resp: Any) -> int:
    return int(resp.error_code)


def heartbeat(member: ConsumerMember, coord: CoordinatorState) -> Conversation[None]:
    """One ConsumerGroupHeartbeat and what its answer means (:func:`apply_answer`).  A failed
    request makes the next heartbeat carry every field; a fatal answer raises."""
    if not member.active:
        return
    sent_owned = member.owned_ids

    def body(version: int) -> Mapping[str, Any]:
        return heartbeat_body(member, version)

    try:
        resp = yield from coordinated(
            coord, CONSUMER_GROUP_HEARTBEAT, cast("Mapping[str, Any]", body), _code
        )
    except KafkaError:
        member._sent = None
        raise
    apply_answer(member, resp, sent_owned)


def apply_answer(
    member: ConsumerMember,
    resp: ConsumerGroupHeartbeatResponse,
    sent_owned: frozenset[tuple[TopicId, int]],
) -> None:
    """Move the state by a heartbeat's answer (``sent_owned``: the partitions that heartbeat
    reported owning)."""
    code = int(resp.error_code)
    if member.state == LEAVING:
        return
    if code in _FENCING:
        log.info(
            "%s: member %s epoch %d %s: its partitions are lost; joining again",
            member.group,
            member.member_id,
            member.epoch,
            error_for_code(code).__name__,
        )
        member.state, member.target, member._sent = FENCED, None, None
        return
    if code:
        err = error_for_code(code)(
            f"ConsumerGroupHeartbeat of group {member.group!r}: {resp.error_message or ''}".rstrip(
                ": "
            )
        )
        member._sent = None
        if getattr(err, "retriable", False):
            raise err
        member.state, member.error = FATAL, err
        raise err
    if resp.member_id:
        member.member_id = resp.member_id
    member.epoch = int(resp.member_epoch)
    if resp.heartbeat_interval_ms > 0:
        member.interval_ms = int(resp.heartbeat_interval_ms)
    if resp.assignment is not None:
        member.target = {
            bytes(t.topic_id): frozenset(t.partitions) for t in resp.assignment.topic_partitions
        }
        member.state = RECONCILING
    elif member.state == JOINING:
        member.state = STABLE
    elif member.state == ACKNOWLEDGING and sent_owned == member.owned_ids:
        member.state = STABLE


def resolve_topics(member: ConsumerMember) -> Conversation[None]:
    """Metadata for every topic (v10+ carries topic ids): name the ids of the pending
    assignment."""
    resp = yield from refresh_metadata(None, allow_auto_create=False)
    for t in resp.topics:
        tid = bytes(t.get("topic_id", b"") or b"")
        if t.name is not None and tid and not t.error_code:
            member.names[tid] = t.name


@dataclass(frozen=True)
class Reconciliation:
    """What a new assignment means for the listener, in order: revoke ``revoked`` (after a
    commit), then assign ``added``; ``assignment`` is what the member owns after it."""

    revoked: frozenset[TP]
    added: frozenset[TP]
    assignment: frozenset[TP]
    ids: frozenset[tuple[TopicId, int]]


def reconcile(member: ConsumerMember) -> Reconciliation | None:
    """The pending assignment by topic name, or None (none pending, topic ids to resolve
    first: :meth:`ConsumerMember.unresolved`, or the same partitions again: as Java, no
    listener call and no acknowledgement, the member is STABLE at its new epoch)."""
    if member.state != RECONCILING or member.target is None or member.unresolved():
        return None
    ids = frozenset((t, p) for t, ps in member.target.items() for p in ps)
    if member.has_assignment and ids == member.owned_ids:
        member.state, member.target = STABLE, None
        return None
    named = frozenset((member.names[t], p) for t, p in ids)
    return Reconciliation(member.owned - named, named - member.owned, named, ids)


def acknowledge(member: ConsumerMember, done: Reconciliation) -> None:
    """The listener ran: own ``done.assignment``; the next heartbeat (at once) says so."""
    member.owned, member.owned_ids, member.has_assignment = done.assignment, done.ids, True
    if member.state == RECONCILING:
        member.target = None
        member.state = ACKNOWLEDGING


def lost(member: ConsumerMember) -> frozenset[TP]:
    """After fencing: drop (and return) the owned partitions and join again with epoch 0 and
    the same member id."""
    gone = member.owned
    member.owned, member.owned_ids, member.target = frozenset(), frozenset(), None
    member.epoch, member._sent, member.has_assignment = 0, None, False
    if member.state == FENCED:
        member.state = JOINING
    return gone


def leave(member: ConsumerMember, coord: CoordinatorState) -> Conversation[None]:
    """Leave the group: epoch -1, or -2 for a static member (it will be back within the
    session and keeps its assignment).  One attempt; the member is unsubscribed after it."""
    if member.state in (UNSUBSCRIBED, FATAL) or (member.epoch == 0 and member.state == JOINING):
        member.state = UNSUBSCRIBED
        return
    epoch = STATIC_LEAVE_EPOCH if member.instance_id else LEAVE_EPOCH
    body = {
        "group_id": member.group,
        "member_id": member.member_id,
        "member_epoch": epoch,
        "instance_id": member.instance_id,
    }
    member.state = LEAVING
    try:
        yield from coordinated(coord, CONSUMER_GROUP_HEARTBEAT, body, _code, retries=0)
    finally:
        member.state, member.epoch, member._sent = UNSUBSCRIBED, 0, None
        member.has_assignment = False
        member.owned, member.owned_ids, member.target = frozenset(), frozenset(), None
