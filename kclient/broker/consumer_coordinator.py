"""The KIP-848 consumer group coordinator: ConsumerGroupHeartbeat, ConsumerGroupDescribe and
the member-epoch checks of offset commits, as Kafka's GroupMetadataManager does them.

A heartbeat creates or updates its member (epoch 0 joins, -1 leaves, -2 a static member leaves
for now), bumps the group epoch when a member joins, leaves or changes its subscription or a
subscribed topic changes (created, deleted, more partitions), computes the target assignment
with the group's server-side assignor when the group epoch is ahead of it, and reconciles the
member towards its target (:func:`.consumer_group.reconcile`).  Sessions expire after
``group.consumer.session.timeout.ms`` without a heartbeat; a member that does not revoke within
its rebalance timeout is fenced.  Every change is written to the offsets log as Kafka's group
records (member metadata, current and target assignments, epochs), so a restart keeps the group.

Regular expressions (``subscribed_topic_regex``) are Python ``re`` patterns matched against the
whole topic name (Kafka uses RE2/J; the common syntax is the same) and are resolved at once,
where Kafka resolves them in the background and bumps the epoch a moment later.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kclient.protocol import errors as E

from .assignors import ASSIGNORS, Assignment, MemberSpec
from .classic_members import ClassicImage, ClassicMembers
from .consumer_group import (
    CURRENT_ASSIGNMENT,
    GROUP_METADATA,
    LEAVE_EPOCH,
    MEMBER_METADATA,
    STATIC_LEAVE_EPOCH,
    TARGET_MEMBER,
    TARGET_METADATA,
    UNREVOKED,
    ConsumerGroup,
    ConsumerMember,
    decode_assignment,
    group_records,
    parse_key,
    reconcile,
)

__all__ = ["ConsumerGroups", "HeartbeatRequest", "CoordinatorError"]

log = logging.getLogger(__name__)

Owned = list[tuple[bytes, list[int]]]


class CoordinatorError(Exception):
    """An error answer: Kafka's code and message."""

    def __init__(self, error: type[E.BrokerResponseError], message: str) -> None:
        super().__init__(message)
        self.code, self.message = error.errno, message


@dataclass
class HeartbeatRequest:
    """The fields of a ConsumerGroupHeartbeat request."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topic_names: list[str] | None = None
    topic_regex: str | None = None
    assignor: str | None = None
    owned: Owned | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1

    def regex_changed(self, member: ConsumerMember) -> bool:
        """Whether the request brings a new subscription regex."""
        return bool(self.topic_regex) and self.topic_regex != member.topic_regex

    def apply_to(self, member: ConsumerMember) -> None:
        """Copy the fields the request sets (null: unchanged) onto the member."""
        if self.instance_id is not None:
            member.instance_id = self.instance_id
        if self.rack_id is not None:
            member.rack_id = self.rack_id
        if self.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = self.rebalance_timeout_ms
        if self.assignor is not None:
            member.assignor = self.assignor
        if self.topic_names is not None:
            member.topic_names = list(self.topic_names)
        if self.topic_regex is not None:
            member.topic_regex = self.topic_regex or None
        member.client_id, member.client_host = self.client_id, self.client_host


def _invalid(message: str) -> CoordinatorError:
    return CoordinatorError(E.InvalidRequestError, message)


#: group.consumer.migration.policy values (Kafka's ConsumerGroupMigrationPolicy)
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class ConsumerGroups(ClassicMembers):
    """Every consumer-protocol group of one coordinator (thread safe); classic members of
    these groups are :class:`~.classic_members.ClassicMembers`' part."""

    def __init__(
        self, config: Mapping[str, str], write: Callable[[list[bytes], list[bytes | None]], None]
    ) -> None:
        """``write`` appends one batch of records to the offsets log."""
        self.heartbeat_ms = int(config.get("group.consumer.heartbeat.interval.ms", 5000))
        self.session_ms = int(config.get("group.consumer.session.timeout.ms", 45000))
        self.max_size = int(config.get("group.consumer.max.size", 2147483647))
        #: Kafka 4.x computes a group's target assignment at most once per interval; a change
        #: within it is assigned by the first heartbeat after the interval
        self.assign_interval = int(config.get("group.consumer.assignment.interval.ms", 1000)) / 1000
        names = str(config.get("group.consumer.assignors", "uniform,range"))
        self.assignors = [n.strip() for n in names.split(",") if n.strip()]
        unknown = [n for n in self.assignors if n not in ASSIGNORS]
        if unknown or not self.assignors:
            raise ValueError(
                f"group.consumer.assignors: unknown assignor(s) {unknown}; "
                f"known: {', '.join(ASSIGNORS)}"
            )
        policy = str(config.get("group.consumer.migration.policy", "bidirectional")).lower()
        if policy not in MIGRATION_POLICIES:
            raise ValueError(
                f"group.consumer.migration.policy: {policy!r} is not one of "
                f"{', '.join(MIGRATION_POLICIES)}"
            )
        #: whether a classic group with members becomes a consumer group when a
        #: consumer-protocol member joins it (online upgrade)
        self.upgrade = policy in ("upgrade", "bidirectional")
        self.groups: dict[str, ConsumerGroup] = {}
        self.topics: Callable[[], dict[str, tuple[bytes, int]]] = dict
        #: the classic coordinator's answer for a group id, asked to give up a group with
        #: members when the second argument is true (the online upgrade): None (no classic
        #: group), "empty" (dropped, so the id may become a consumer group), "active" (kept) or
        #: the group given up
        self.classic: Callable[[str, bool], str | ClassicImage | None] = lambda g, take: None
        self._write = write
        self._lock = threading.Lock()
        self._patterns: dict[str, re.Pattern[str]] = {}

    # -- heartbeat ---------------------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest) -> dict[str, Any]:
        """Answer one ConsumerGroupHeartbeat (a response body without throttle time)."""
        try:
            self._validate(req)
            with self._lock:
                if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                    return self._leave(req)
                return self._heartbeat(req, time.monotonic())
        except CoordinatorError as exc:
            return {
                "error_code": exc.code,
                "error_message": exc.message,
                "member_id": None,
                "member_epoch": 0,
                "heartbeat_interval_ms": 0,
                "assignment": None,
            }

    def _validate(self, req: HeartbeatRequest) -> None:
        """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        if req.version >= 1 or req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH:
            if req.member_id == "":
                raise _invalid("MemberId can't be empty.")
        for value, what in (
            (req.group_id, "GroupId"),
            (req.instance_id, "InstanceId"),
            (req.rack_id, "RackId"),
        ):
            if value == "":
                raise _invalid(f"{what} can't be empty.")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise _invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.owned is None or req.owned:
                raise _invalid("TopicPartitions must be empty when (re-)joining.")
            if req.topic_names is None and req.topic_regex is None:
                raise _invalid(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be "
                    "non-null when (re-)joining."
                )
        elif req.member_epoch == STATIC_LEAVE_EPOCH:
            if req.instance_id is None:
                raise _invalid("InstanceId can't be null.")
        elif req.member_epoch < STATIC_LEAVE_EPOCH:
            raise _invalid("MemberEpoch is invalid.")
        if req.assignor is not None and req.assignor not in self.assignors:
            raise CoordinatorError(
                E.UnsupportedAssignorError,
                (
                    f"ServerAssignor {req.assignor} is not supported. Supported assignors: "
                    f"{', '.join(self.assignors)}."
                ),
            )

    def _heartbeat(self, req: HeartbeatRequest, now: float) -> dict[str, Any]:
        """Create or update the member, maybe bump the epoch and assign, then reconcile."""
        joining = req.member_epoch == 0
        if not req.member_id:  # v0: the coordinator names the member
            req.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        group = self._group(req.group_id, create=joining)
        if len(group.members) >= self.max_size and req.member_id not in group.members:
            raise CoordinatorError(
                E.GroupMaxSizeReachedError,
                (
                    f"The consumer group has reached its maximum capacity of {self.max_size} "
                    "members."
                ),
            )
        if req.topic_regex:
            self._pattern(req.topic_regex)
        member = self._member(group, req)
        before = (member.subscription(), {t: set(p) for t, p in member.assigned.items()})
        req.apply_to(member)
        if group.group_epoch == 0:  # a new group: Kafka 4.x starts it at epoch 1
            group.group_epoch = 1
        bump = joining and req.member_id not in group.members or before[0] != member.subscription()
        group.members[member.member_id] = member
        self.groups.setdefault(group.group_id, group)
        topics = self._subscribed_topics(group)
        if bump or topics != group.topics:
            group.topics = topics
            group.group_epoch += 1
            log.info("group %s: epoch %d", group.group_id, group.group_epoch)
        self._maybe_assign(group, now)
        reconcile(
            member,
            group.assignment_epoch,
            group.target.get(member.member_id, {}),
            req.owned,
            group.owner,
        )
        self._revoke_timer(group, member, now)
        group.session_deadlines[member.member_id] = now + self.session_ms / 1000
        self._persist(group)
        full = joining or (
            req.rebalance_timeout_ms != -1
            and req.owned is not None
            and (req.topic_names is not None or req.topic_regex is not None)
        )
        body: dict[str, Any] = {
            "error_code": 0,
            "error_message": None,
            "member_id": member.member_id,
            "member_epoch": member.member_epoch,
            "heartbeat_interval_ms": self.heartbeat_ms,
            "assignment": None,
        }
        if full or before[1] != member.assigned:
            body["assignment"] = {
                "topic_partitions": [
                    {"topic_id": t, "partitions": sorted(ps)}
                    for t, ps in sorted(member.assigned.items())
                ]
            }
        return body

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        """getOrMaybeCreateConsumerGroup: an empty classic group gives way; an active one
        (or none, when not joining) is GROUP_ID_NOT_FOUND."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if not create:
            raise CoordinatorError(E.GroupIdNotFoundError, f"Consumer group {group_id} not found.")
        classic = self.classic(group_id, self.upgrade)
        if classic == "active":
            raise CoordinatorError(
                E.GroupIdNotFoundError, f"Group {group_id} is not a consumer group"
            )
        if isinstance(classic, ClassicImage):
            log.info("group %s: upgraded from a classic group with members", group_id)
            return self._upgrade(classic, time.monotonic())
        return ConsumerGroup(group_id)  # kept once its first member is in

    def _member(self, group: ConsumerGroup, req: HeartbeatRequest) -> ConsumerMember:
        """The member the request speaks for (created, or a static member's replacement)."""
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                if req.member_epoch != 0:
                    raise CoordinatorError(
                        E.UnknownMemberIdError,
                        (f"Member {req.member_id} is not a member of group {group.group_id}."),
                    )
                return ConsumerMember(req.member_id)
            self._check_epoch(member, req)
            return member
        existing = group.static_member(req.instance_id)
        if req.member_epoch == 0:
            if existing is None:
                return group.members.get(req.member_id) or ConsumerMember(req.member_id)
            if existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise CoordinatorError(
                    E.UnreleasedInstanceIdError,
                    (
                        f"Static member {req.member_id} with instance id {req.instance_id} cannot "
                        f"join the group because the instance id is owned by {existing.member_id} "
                        "member."
                    ),
                )
            return self._replace(group, existing, req.member_id)
        existing = self._static(group, req)
        self._check_epoch(existing, req)
        return existing

    @staticmethod
    def _static(group: ConsumerGroup, req: HeartbeatRequest) -> ConsumerMember:
        """The static member holding the request's instance id, if the request's member id
        is the one holding it (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID)."""
        existing = group.static_member(req.instance_id or "")
        if existing is None:
            raise CoordinatorError(
                E.UnknownMemberIdError, f"Instance id {req.instance_id} is unknown."
            )
        if existing.member_id != req.member_id:
            raise CoordinatorError(
                E.FencedInstanceIdError,
                (
                    f"Static member {req.member_id} with instance id {req.instance_id} was fenced "
                    f"by member {existing.member_id}."
                ),
            )
        return existing

    @staticmethod
    def _check_epoch(member: ConsumerMember, req: HeartbeatRequest) -> None:
        """FENCED_MEMBER_EPOCH unless the epoch is the member's, or its previous one with a
        subset of its partitions (the answer that bumped it may have been lost)."""
        got, known = req.member_epoch, member.member_epoch
        if got > known:
            raise CoordinatorError(
                E.FencedMemberEpochError,
                (
                    f"The consumer group member has a greater member epoch ({got}) than the one "
                    f"known by the group coordinator ({known}). The member must abandon all its "
                    "partitions and rejoin."
                ),
            )
        if got < known and (
            got != member.previous_epoch
            or req.owned is None
            or any(p not in member.assigned.get(t, ()) for t, ps in req.owned for p in ps)
        ):
            raise CoordinatorError(
                E.FencedMemberEpochError,
                (
                    f"The consumer group member has a smaller member epoch ({got}) than the one "
                    f"known by the group coordinator ({known}). The member must abandon all its "
                    "partitions and rejoin."
                ),
            )

    def _replace(self, group: ConsumerGroup, old: ConsumerMember, new_id: str) -> ConsumerMember:
        """A restarted static member takes its instance's place and assignment under a new
        member id, epoch 0: it gets the same partitions back, the others hear nothing."""
        del group.members[old.member_id]
        group.session_deadlines.pop(old.member_id, None)
        group.revoke_deadlines.pop(old.member_id, None)
        target = group.target.pop(old.member_id, None)
        if target is not None:
            group.target[new_id] = target
        old.member_id, old.member_epoch, old.previous_epoch = new_id, 0, 0
        group.members[new_id] = old
        log.info(
            "group %s: static member %s rejoins as %s", group.group_id, old.instance_id, new_id
        )
        return old

    # -- leave, fence, expire ----------------------------------------------------------------

    def _leave(self, req: HeartbeatRequest) -> dict[str, Any]:
        """Epoch -1: the member leaves (a rebalance); -2: a static member leaves for now, its
        partitions kept for it until its session times out."""
        group = self.groups.get(req.group_id)
        if group is None:
            raise CoordinatorError(
                E.GroupIdNotFoundError, f"Consumer group {req.group_id} not found."
            )
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise CoordinatorError(
                    E.UnknownMemberIdError,
                    (f"Member {req.member_id} is not a member of group {group.group_id}."),
                )
        else:
            member = self._static(group, req)
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            member.member_epoch = STATIC_LEAVE_EPOCH
            self._persist(group)
        else:
            self._fence(group, member, "left the group")
        return {
            "error_code": 0,
            "error_message": None,
            "member_id": req.member_id,
            "member_epoch": req.member_epoch,
            "heartbeat_interval_ms": 0,
            "assignment": None,
        }

    def _fence(self, group: ConsumerGroup, member: ConsumerMember, why: str) -> None:
        """Remove a member (its partitions become free) and bump the group epoch."""
        log.info("group %s: member %s %s", group.group_id, member.member_id, why)
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        group.session_deadlines.pop(member.member_id, None)
        group.revoke_deadlines.pop(member.member_id, None)
        group.topics = self._subscribed_topics(group)
        group.group_epoch += 1
        self._persist(group)

    def _revoke_timer(self, group: ConsumerGroup, member: ConsumerMember, now: float) -> None:
        """A member asked to revoke must do so within its rebalance timeout."""
        if member.state == UNREVOKED:
            group.revoke_deadlines.setdefault(
                member.member_id, now + member.rebalance_timeout_ms / 1000
            )
        else:
            group.revoke_deadlines.pop(member.member_id, None)

    def expire(self, now: float) -> float:
        """Fence members past their session or revocation deadline; returns the next one."""
        upcoming = [now + 1.0]
        with self._lock:
            for group in list(self.groups.values()):
                for member_id in list(group.members):
                    session = group.session_deadlines.setdefault(
                        member_id, now + self.session_ms / 1000
                    )
                    revoke = group.revoke_deadlines.get(member_id, float("inf"))
                    if now >= session or now >= revoke:
                        why = (
                            "session timed out"
                            if now >= session
                            else "did not revoke its partitions in time"
                        )
                        self._fence(group, group.members[member_id], why)
                    else:
                        upcoming.append(min(session, revoke))
        return min(upcoming)

    # -- assignment --------------------------------------------------------------------------

    def _pattern(self, regex: str) -> re.Pattern[str]:
        """A compiled subscription regex (INVALID_REGULAR_EXPRESSION when it does not
        compile)."""
        pattern = self._patterns.get(regex)
        if pattern is None:
            try:
                pattern = self._patterns[regex] = re.compile(regex)
            except re.error as exc:
                raise CoordinatorError(
                    E.InvalidRegularExpressionError,
                    (f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc}."),
                ) from None
        return pattern

    def _subscribed_topics(self, group: ConsumerGroup) -> dict[str, tuple[bytes, int]]:
        """(id, partition count) of every existing topic some member subscribes to."""
        everything = self.topics()

        def resolve(regex: str) -> set[str]:
            pattern = self._pattern(regex)
            return {name for name in everything if pattern.fullmatch(name)}

        return {
            name: everything[name] for name in group.subscribed_names(resolve) if name in everything
        }

    def _member_topics(self, group: ConsumerGroup, member: ConsumerMember) -> set[bytes]:
        """The topic ids a member subscribes to."""
        names = set(member.topic_names)
        if member.topic_regex:
            pattern = self._pattern(member.topic_regex)
            names |= {n for n in group.topics if pattern.fullmatch(n)}
        return {group.topics[n][0] for n in names if n in group.topics}

    def _assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for, else the first configured."""
        asked = Counter(m.assignor for m in group.members.values() if m.assignor)
        return asked.most_common(1)[0][0] if asked else self.assignors[0]

    def _maybe_assign(self, group: ConsumerGroup, now: float) -> None:
        """Compute the target when the group epoch is ahead of it, unless the last one is
        younger than the assignment interval (then a later heartbeat does, as Kafka 4.x)."""
        if (
            group.group_epoch > group.assignment_epoch
            and now >= group.assigned_at + self.assign_interval
        ):
            self._assign(group)
            group.assigned_at = now

    def _assign(self, group: ConsumerGroup) -> None:
        """Compute the target assignment at the group epoch."""
        specs = {
            mid: MemberSpec(self._member_topics(group, m), group.target.get(mid, {}))
            for mid, m in group.members.items()
        }
        counts = dict(group.topics.values())
        group.target = ASSIGNORS[self._assignor(group)](specs, counts)
        group.assignment_epoch = group.group_epoch

    # -- persistence -------------------------------------------------------------------------

    def _persist(self, group: ConsumerGroup) -> None:
        """Write the records that changed since the group was last written."""
        now = group_records(group)
        keys = [k for k, v in now.items() if group.persisted.get(k) != v]
        gone = [k for k in group.persisted if k not in now]
        if keys or gone:
            self._write(keys + gone, [now[k] for k in keys] + [None] * len(gone))
            group.persisted = now

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one group record read back from the offsets log at start-up."""
        parsed = parse_key(key)
        if parsed is None:
            return
        kind, group_id, member_id = parsed
        content = _load(value)
        if content is None and group_id not in self.groups:
            return  # the rest of a deleted group's tombstones
        group = self.groups.setdefault(group_id, ConsumerGroup(group_id))
        if kind == GROUP_METADATA:
            if content is None:
                del self.groups[group_id]
                return
            group.group_epoch = content["epoch"]
            group.topics = {
                n: (bytes.fromhex(t), c) for n, (t, c) in content.get("topics", {}).items()
            }
        elif kind == TARGET_METADATA and content is not None:
            group.assignment_epoch = content["epoch"]
        elif kind == TARGET_MEMBER and member_id is not None:
            if content is None:
                group.target.pop(member_id, None)
            else:
                group.target[member_id] = decode_assignment(content["assignment"])
        elif member_id is not None:
            self._replay_member(group, kind, member_id, content)

    @staticmethod
    def _replay_member(
        group: ConsumerGroup, kind: int, member_id: str, content: dict[str, Any] | None
    ) -> None:
        """Member metadata or current assignment (a tombstone removes the member)."""
        if content is None:
            group.members.pop(member_id, None)
            return
        member = group.members.setdefault(member_id, ConsumerMember(member_id))
        if kind == MEMBER_METADATA:
            member.load_metadata(content)
        elif kind == CURRENT_ASSIGNMENT:
            member.load_assignment(content)

    def loaded(self) -> None:
        """After the replay: remember what is on disk, start every member's session anew."""
        with self._lock:
            for group in self.groups.values():
                group.persisted = group_records(group)

    # -- queries from the other APIs ---------------------------------------------------------

    def has(self, group_id: str) -> bool:
        """Whether the id is a consumer group here."""
        with self._lock:
            return group_id in self.groups

    def listing(self) -> list[tuple[str, str]]:
        """(group id, state) of every consumer group."""
        with self._lock:
            return [(gid, g.state()) for gid, g in self.groups.items()]

    def active(self) -> set[str]:
        """Groups with members (their offsets do not expire)."""
        with self._lock:
            return {gid for gid, g in self.groups.items() if g.members}

    def give_way(self, group_id: str) -> bool:
        """A classic JoinGroup for this id: an empty consumer group is removed (True); a
        non-empty one stays (False: the classic member is refused)."""
        with self._lock:
            group = self.groups.get(group_id)
            if group is None:
                return True
            if group.members:
                return False
            self._drop(group)
            return True

    def delete(self, group_id: str) -> int | None:
        """DeleteGroups: None when not a consumer group here, else an error code or 0."""
        with self._lock:
            group = self.groups.get(group_id)
            if group is None:
                return None
            if group.members:
                return E.NonEmptyGroupError.errno
            self._drop(group)
            return 0

    def _drop(self, group: ConsumerGroup) -> None:
        """Forget an empty group and tombstone its records."""
        del self.groups[group.group_id]
        if group.persisted:
            self._write(list(group.persisted), [None] * len(group.persisted))

    def commit_error(
        self, group_id: str, member_id: str, epoch: int, version: int, transactional: bool = False
    ) -> int | None:
        """Kafka's ConsumerGroup.validateOffsetCommit: None when not a consumer group here;
        else 0, UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION (a consumer-protocol member must use
        OffsetCommit v9+) or STALE_MEMBER_EPOCH (an epoch ahead of the member's)."""
        with self._lock:
            group = self.groups.get(group_id)
            if group is None:
                return None
            if epoch < 0 and not group.members:
                return 0
            if transactional and epoch < 0 and not member_id:
                return 0
            member = group.members.get(member_id)
            if member is None:
                return E.UnknownMemberIdError.errno
            if member.classic:  # validateMemberEpoch for a classic member: the generation
                return 0 if epoch == member.member_epoch else E.IllegalGenerationError.errno
            if not transactional and version < 9:
                return E.UnsupportedVersionError.errno
            if epoch > member.member_epoch:
                return E.StaleMemberEpochError.errno
            return 0  # an older epoch: per partition (stale_partitions)

    def fetch_error(self, group_id: str, member_id: str | None, epoch: int) -> int:
        """Kafka's ConsumerGroup.validateOffsetFetch (OffsetFetch v9): 0 when not a consumer
        group here or no member is named (null id, epoch < 0); else UNKNOWN_MEMBER_ID, or an
        epoch other than the member's: STALE_MEMBER_EPOCH (a classic member:
        ILLEGAL_GENERATION)."""
        with self._lock:
            group = self.groups.get(group_id)
            if group is None or (member_id is None and epoch < 0):
                return 0
            member = group.members.get(member_id or "")
            if member is None:
                return E.UnknownMemberIdError.errno
            if epoch == member.member_epoch:
                return 0
            return (E.IllegalGenerationError if member.classic else E.StaleMemberEpochError).errno

    def stale_partitions(
        self, group_id: str, member_id: str, epoch: int, partitions: Iterable[tuple[str, int]]
    ) -> set[tuple[str, int]]:
        """Kafka 4.4's assignment-epoch check of a commit at an older member epoch: a
        partition must be the member's (assigned or being revoked) since that epoch or
        before; the others are STALE_MEMBER_EPOCH."""
        with self._lock:
            group = self.groups.get(group_id)
            member = group.members.get(member_id) if group is not None else None
            if member is None or epoch < 0 or epoch >= member.member_epoch:
                return set()
            ids = {name: tid for name, (tid, _) in self.topics().items()}
            return {
                (t, p)
                for t, p in partitions
                if member.partition_epochs.get((ids.get(t, b""), p), epoch + 1) > epoch
            }

    def describe(
        self, group_id: str, topic_name: Callable[[bytes], str | None]
    ) -> dict[str, Any] | None:
        """ConsumerGroupDescribe's entry for a group (None: not a consumer group here)."""
        with self._lock:
            group = self.groups.get(group_id)
            if group is None:
                return None

            def parts(assignment: Assignment) -> dict[str, Any]:
                return {
                    "topic_partitions": [
                        {"topic_id": t, "topic_name": topic_name(t) or "", "partitions": sorted(ps)}
                        for t, ps in sorted(assignment.items())
                        if ps
                    ]
                }

            members = [
                {
                    "member_id": m.member_id,
                    "instance_id": m.instance_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "subscribed_topic_names": sorted(m.topic_names),
                    "subscribed_topic_regex": m.topic_regex or "",
                    "assignment": parts(m.assigned),
                    "target_assignment": parts(group.target.get(m.member_id, {})),
                    "member_type": 0 if m.classic else 1,
                }
                for m in group.members.values()
            ]
            return {
                "error_code": 0,
                "error_message": None,
                "group_id": group_id,
                "group_state": group.state(),
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": self._assignor(group),
                "members": members,
            }


def _load(value: bytes | None) -> dict[str, Any] | None:
    """A record value's content (None for a tombstone)."""
    return None if value is None else dict(json.loads(value))
