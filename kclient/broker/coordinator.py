"""Group coordinator: Kafka's classic consumer-group protocol plus the offsets it stores.

States follow Kafka's GroupCoordinator: Empty -> PreparingRebalance -> CompletingRebalance ->
Stable (Dead once removed). JoinGroup and SyncGroup answer with futures because they wait for
the rest of the group. One lock guards all groups; futures that become ready under it are
completed only after it is released, so response callbacks never run while it is held. A reaper
thread expires member sessions, pending member ids, rebalance deadlines and old offsets.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kclient.protocol.error_codes import (
    GroupIdNotFoundError,
    NonEmptyGroupError,
    StaleMemberEpochError,
)

from .classic_members import ClassicImage, ClassicMemberImage
from .config import DEFAULTS
from .consumer_coordinator import ConsumerGroups
from .group import (
    COMPLETING_REBALANCE,
    COORDINATOR_NOT_AVAILABLE,
    DEAD,
    EMPTY,
    FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_GROUP_ID,
    INVALID_SESSION_TIMEOUT,
    MEMBER_ID_REQUIRED,
    NONE,
    NOT_COORDINATOR,
    PREPARING_REBALANCE,
    REBALANCE_IN_PROGRESS,
    STABLE,
    UNKNOWN_MEMBER_ID,
    Group,
    JoinRequest,
    Member,
    join_error,
    sync_result,
)
from .group_views import GroupViews
from .offsets import OffsetEntry, OffsetManager, TopicPartition

__all__ = [
    "GroupCoordinator",
    "JoinRequest",
    "then",
    "Group",
    "Member",
    "EMPTY",
    "PREPARING_REBALANCE",
    "COMPLETING_REBALANCE",
    "STABLE",
    "DEAD",
]

log = logging.getLogger(__name__)

_REAPER_MAX_WAIT = 1.0
NON_EMPTY_GROUP = NonEmptyGroupError.errno
GROUP_ID_NOT_FOUND = GroupIdNotFoundError.errno
STALE_MEMBER_EPOCH = StaleMemberEpochError.errno


def then(future: Future[Any], fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to a future's result: directly when done, else as a chained future."""
    if future.done():
        return fn(future.result())
    chained: Future[Any] = Future()

    def relay(done: Future[Any]) -> None:
        try:
            chained.set_result(fn(done.result()))
        except BaseException as exc:  # noqa: BLE001 - surface the failure to whoever waits on the response
            chained.set_exception(exc)

    future.add_done_callback(relay)
    return chained


class GroupCoordinator(GroupViews):
    """Coordinates consumer groups on one broker and stores their committed offsets."""

    def __init__(
        self, data_dir: Path | str, node_id: int = 0, config: Mapping[str, str] | None = None
    ):
        config = {**DEFAULTS, **(config or {})}  # Kafka's defaults where not given
        self.node_id = node_id
        self.offsets = OffsetManager(Path(data_dir), config)
        self.initial_delay_ms = int(config["group.initial.rebalance.delay.ms"])
        self.min_session_ms = int(config["group.min.session.timeout.ms"])
        self.max_session_ms = int(config["group.max.session.timeout.ms"])
        self.max_group_size = int(config["group.max.size"])
        self.metadata_max_bytes = int(config["offset.metadata.max.bytes"])
        self.retention_check_s = int(config["offsets.retention.check.interval.ms"]) / 1000
        self._groups: dict[str, Group] = {}
        self._lock = threading.Lock()
        self._kick = threading.Event()
        self._ready: list[tuple[Future[Any], dict[str, Any]]] = []
        self._closed = False
        self._thread: threading.Thread | None = None
        self._next_retention = 0.0
        #: the KIP-848 consumer groups; their records share the offsets log
        self.consumer = ConsumerGroups(config, self.offsets.append_records)
        self.offsets.on_group_record = self.consumer.replay
        self.consumer.classic = self._classic_probe

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Load committed offsets and start the reaper thread."""
        self.offsets.start()
        self.consumer.loaded()
        if self._thread is None:
            self._next_retention = time.monotonic() + self.retention_check_s
            self._thread = threading.Thread(
                target=self._reaper, daemon=True, name=f"group-coordinator-{self.node_id}"
            )
            self._thread.start()

    def close(self) -> None:
        """Stop the reaper, answer every waiting member NOT_COORDINATOR, close the offsets."""
        with self._critical():
            self._closed = True
            for group in self._groups.values():
                for member in group.members.values():
                    self._fail_waiters(member, NOT_COORDINATOR)
            self._kick.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None
        self.offsets.close()

    def __enter__(self) -> GroupCoordinator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _critical(self) -> Iterator[None]:
        """Hold the lock; afterwards complete the futures that became ready meanwhile."""
        with self._lock:
            try:
                yield
            finally:
                ready, self._ready = self._ready, []
        for future, body in ready:
            if not future.done():
                future.set_result(body)

    def _reply(self, future: Future[Any] | None, body: dict[str, Any]) -> None:
        """Queue a response to be delivered once the lock is released."""
        if future is not None:
            self._ready.append((future, body))

    # -- JoinGroup ---------------------------------------------------------------------------

    def join_group(self, req: JoinRequest) -> Future[Any]:
        """Join (or rejoin) a group; the future resolves when the rebalance completes."""
        future: Future[Any] = Future()
        if req.rebalance_timeout_ms < 0:
            req.rebalance_timeout_ms = req.session_timeout_ms
        if not self._closed and not self.consumer.give_way(req.group_id):
            # a consumer group with members: the joiner becomes its classic member
            with self._lock:
                code = self._check_join(req)
            future.set_result(
                join_error(code, req.member_id) if code else self.consumer.classic_join(req)
            )
            return future
        with self._critical():
            code = self._check_join(req)
            if code:
                self._reply(future, join_error(code, req.member_id))
            elif req.group_instance_id is not None:
                self._join_static(self._group(req.group_id), req, future)
            elif not req.member_id:
                self._join_new(self._group(req.group_id), req, future)
            else:
                self._join_known(self._group(req.group_id), req, future)
            self._kick.set()
        return future

    def _check_join(self, req: JoinRequest) -> int:
        """Validate a join before touching group state."""
        if self._closed:
            return NOT_COORDINATOR
        if not req.group_id:
            return INVALID_GROUP_ID
        if not self.min_session_ms <= req.session_timeout_ms <= self.max_session_ms:
            return INVALID_SESSION_TIMEOUT
        if not req.protocol_type or not req.protocols:
            return INCONSISTENT_GROUP_PROTOCOL
        group = self._groups.get(req.group_id)
        if group is None or group.state == EMPTY:
            return NONE
        if group.protocol_type not in (None, req.protocol_type):
            return INCONSISTENT_GROUP_PROTOCOL
        others = group.supported_protocols(exclude=req.member_id or None)
        if others is not None and not others & {name for name, _ in req.protocols}:
            return INCONSISTENT_GROUP_PROTOCOL
        return NONE

    def _classic_probe(self, group_id: str, take: bool) -> str | ClassicImage | None:
        """For a consumer group heartbeat: None (no classic group), "empty" (dropped: the id
        becomes a consumer group, its offsets kept), "active" (has members), or, when ``take``
        (the migration policy allows an upgrade) and the group uses the consumer protocol
        within the consumer group size, the group itself, dropped here: its members' waiting
        joins and syncs answer REBALANCE_IN_PROGRESS (validateOnlineUpgrade,
        convertToConsumerGroup)."""
        with self._critical():
            group = self._groups.get(group_id)
            if group is None:
                return None
            if not (group.members or group.pending):
                del self._groups[group_id]
                return "empty"
            if (
                not take
                or group.protocol_type != "consumer"
                or len(group.members) > self.consumer.max_size
            ):
                return "active"
            del self._groups[group_id]
            for member in group.members.values():
                self._fail_waiters(member, REBALANCE_IN_PROGRESS)
            return ClassicImage(
                group_id,
                group.generation_id,
                group.protocol_name,
                [
                    ClassicMemberImage(
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.client_host,
                        m.session_timeout_ms,
                        m.rebalance_timeout_ms,
                        m.protocols,
                        m.assignment,
                    )
                    for m in group.members.values()
                ],
            )

    def _group(self, group_id: str) -> Group:
        """The group, created Empty on first use."""
        group = self._groups.get(group_id)
        if group is None or group.state == DEAD:
            group = self._groups[group_id] = Group(group_id)
        return group

    def _join_new(self, group: Group, req: JoinRequest, future: Future[Any]) -> None:
        """A member without an id: give it one (first, for v4+) and add it to the group."""
        if len(group.members) + len(group.pending) >= self.max_group_size:
            self._reply(future, join_error(GROUP_MAX_SIZE_REACHED))
            return
        member_id = f"{req.client_id}-{uuid.uuid4()}"
        if req.require_known_member and req.group_instance_id is None:
            group.pending[member_id] = time.monotonic() + req.session_timeout_ms / 1000
            self._reply(future, join_error(MEMBER_ID_REQUIRED, member_id))
            return
        self._add_member(group, member_id, req, future)

    def _join_known(self, group: Group, req: JoinRequest, future: Future[Any]) -> None:
        """A member with an id: a pending id completes its join, a member rejoins."""
        if req.member_id in group.pending:
            del group.pending[req.member_id]
            self._add_member(group, req.member_id, req, future)
            return
        member = group.members.get(req.member_id)
        if member is None or group.state in (EMPTY, DEAD):
            self._reply(future, join_error(UNKNOWN_MEMBER_ID, req.member_id))
            return
        changed = member.protocols != req.protocols
        if group.state == PREPARING_REBALANCE:
            self._update_member(member, req, future)
            self._try_complete_join(group)
        elif changed or (group.state == STABLE and member.member_id == group.leader_id):
            self._update_member(member, req, future)
            self._prepare_rebalance(group, f"member {member.member_id} rejoined")
        else:
            member.touch()
            self._reply(future, group.join_result(member.member_id))

    # -- static membership (KIP-345) ---------------------------------------------------------

    def _join_static(self, group: Group, req: JoinRequest, future: Future[Any]) -> None:
        """A member with group.instance.id: new, a restart taking its instance's place (new
        member id, the old one fenced), or a rejoin under its current id."""
        iid = req.group_instance_id
        assert iid is not None
        current = group.static_members.get(iid)
        if current is not None and current not in group.members:
            del group.static_members[iid]
            current = None
        if not req.member_id:
            if current is None:
                self._join_new(group, req, future)
            else:
                self._replace_static(group, group.members[current], req, future)
        elif current is None:
            self._reply(future, join_error(UNKNOWN_MEMBER_ID, req.member_id))
        elif current != req.member_id:
            self._reply(future, join_error(FENCED_INSTANCE_ID, req.member_id))
        else:
            self._join_known(group, req, future)

    def _replace_static(
        self, group: Group, member: Member, req: JoinRequest, future: Future[Any]
    ) -> None:
        """Give a restarted static member a new member id in place of the old (whose waiting
        requests, and any later ones, get FENCED_INSTANCE_ID), as Kafka's
        updateStaticMemberAndRebalance: Stable with the group's protocol still selected, it
        takes over the current assignment and generation, no rebalance, even as the leader
        (JoinGroup before v9 answers the previous leader id, so it runs no assignment);
        CompletingRebalance rebalances; PreparingRebalance waits for the join phase."""
        old_id, new_id = member.member_id, f"{req.client_id}-{uuid.uuid4()}"
        previous_leader = group.leader_id
        self._fail_waiters(member, FENCED_INSTANCE_ID)
        del group.members[old_id]
        member.member_id, member.client_id, member.client_host = (
            new_id,
            req.client_id,
            req.client_host,
        )
        group.members[new_id] = member
        assert req.group_instance_id is not None
        group.static_members[req.group_instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        log.info(
            "group %s: static member %s replaced %s with %s",
            group.group_id,
            req.group_instance_id,
            old_id,
            new_id,
        )
        self._update_member(member, req, future)
        if group.state == STABLE and group.select_protocol() == group.protocol_name:
            member.join_future = None
            self._reply(
                future, dict(group.join_result(new_id), members=[], leader=previous_leader or "")
            )
        elif group.state == PREPARING_REBALANCE:
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"static member {req.group_instance_id} rejoined")

    def _add_member(
        self, group: Group, member_id: str, req: JoinRequest, future: Future[Any]
    ) -> None:
        """Add a member awaiting its join reply, then start or advance the rebalance."""
        member = Member(
            member_id,
            req.client_id,
            req.client_host,
            req.group_instance_id,
            req.session_timeout_ms,
            req.rebalance_timeout_ms,
            list(req.protocols),
        )
        member.join_future = future
        member.touch()
        group.members[member_id] = member
        if req.group_instance_id is not None:
            group.static_members[req.group_instance_id] = member_id
        if group.leader_id is None:
            group.leader_id = member_id
        if len(group.members) == 1:  # the first member sets the type (Kafka's add)
            group.protocol_type = req.protocol_type
        if group.state == PREPARING_REBALANCE:
            self._extend_initial_delay(group)
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"new member {member_id} joined")

    def _update_member(self, member: Member, req: JoinRequest, future: Future[Any]) -> None:
        """Record a rejoin's protocols and timeouts; it now awaits the join reply."""
        if member.join_future is not None:
            self._reply(member.join_future, join_error(REBALANCE_IN_PROGRESS, member.member_id))
        member.protocols = list(req.protocols)
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.join_future = future
        member.touch()

    # -- rebalance ---------------------------------------------------------------------------

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        """Enter PreparingRebalance: members must rejoin before the rebalance timeout."""
        log.info("group %s: preparing rebalance (%s)", group.group_id, reason)
        if group.state == COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
                self._reply(member.sync_future, sync_result(REBALANCE_IN_PROGRESS))
                member.sync_future = None
        was_empty = group.state == EMPTY
        group.state = PREPARING_REBALANCE
        now = time.monotonic()
        timeout_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        group.join_deadline = now + timeout_ms / 1000
        group.delay_deadline = None
        if was_empty and self.initial_delay_ms > 0:
            group.delay_deadline = min(now + self.initial_delay_ms / 1000, group.join_deadline)
        self._try_complete_join(group)

    def _extend_initial_delay(self, group: Group) -> None:
        """A new member during the initial delay pushes it back (up to the rebalance timeout)."""
        if group.delay_deadline is not None:
            now = time.monotonic()
            group.delay_deadline = min(now + self.initial_delay_ms / 1000, group.join_deadline)

    def _try_complete_join(self, group: Group) -> None:
        """Complete the join phase once everyone has rejoined (and any initial delay passed)."""
        if (
            group.state == PREPARING_REBALANCE
            and group.delay_deadline is None
            and group.all_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """Drop members that did not rejoin, start the next generation, answer the joins."""
        for member in [m for m in group.members.values() if m.join_future is None]:
            log.info("group %s: member %s did not rejoin in time", group.group_id, member.member_id)
            self._drop(group, member)
        group.generation_id += 1
        if not group.members:
            # Kafka keeps the protocol type of an Empty group (ListGroups, DescribeGroups)
            group.state, group.protocol_name = EMPTY, None
            log.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            return
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.protocol_name = group.select_protocol()
        group.state = COMPLETING_REBALANCE
        log.info(
            "group %s: generation %d with %d members, protocol %s",
            group.group_id,
            group.generation_id,
            len(group.members),
            group.protocol_name,
        )
        for member in group.members.values():
            self._reply(member.join_future, group.join_result(member.member_id))
            member.join_future = None
            member.touch()

    def _drop(self, group: Group, member: Member) -> None:
        """Remove a member without triggering anything; its waiting requests get an error."""
        group.members.pop(member.member_id, None)
        iid = member.group_instance_id
        if iid is not None and group.static_members.get(iid) == member.member_id:
            del group.static_members[iid]
        self._fail_waiters(member, UNKNOWN_MEMBER_ID)
        if group.leader_id == member.member_id:
            group.leader_id = next(iter(group.members), None)

    def _fail_waiters(self, member: Member, code: int) -> None:
        """Answer a member's outstanding join/sync requests with an error."""
        self._reply(member.join_future, join_error(code, member.member_id))
        self._reply(member.sync_future, sync_result(code))
        member.join_future = member.sync_future = None

    def _remove_member(self, group: Group, member: Member, reason: str) -> None:
        """Remove a member and rebalance the rest."""
        log.info("group %s: removing member %s (%s)", group.group_id, member.member_id, reason)
        self._drop(group, member)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        else:
            self._try_complete_join(group)

    # -- SyncGroup ---------------------------------------------------------------------------

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: Mapping[str, bytes] | None = None,
        *,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        group_instance_id: str | None = None,
    ) -> Future[Any]:
        """Wait for (leader: hand out) this generation's assignment."""
        future: Future[Any] = Future()
        if not self._closed and self.consumer.serves_classic(group_id):
            future.set_result(
                self.consumer.classic_sync(
                    group_id,
                    generation_id,
                    member_id,
                    protocol_type,
                    protocol_name,
                    group_instance_id,
                )
            )
            return future
        with self._critical():
            group = self._groups.get(group_id)
            code = (
                NOT_COORDINATOR
                if self._closed
                else Group.sync_error(
                    group, generation_id, member_id, protocol_type, protocol_name, group_instance_id
                )
            )
            if code or group is None:
                self._reply(future, sync_result(code))
            else:
                self._sync_member(group, group.members[member_id], future, assignments or {})
        return future

    def _sync_member(
        self, group: Group, member: Member, future: Future[Any], assignments: Mapping[str, bytes]
    ) -> None:
        """Answer now when Stable; otherwise wait, and the leader's sync releases everyone."""
        member.touch()
        if group.state == STABLE:
            self._reply(future, sync_result(NONE, group, member.assignment))
            return
        if member.sync_future is not None:
            self._reply(member.sync_future, sync_result(REBALANCE_IN_PROGRESS))
        member.sync_future = future
        if member.member_id != group.leader_id:
            return
        for m in group.members.values():
            m.assignment = bytes(assignments.get(m.member_id, b""))
        group.state = STABLE
        log.info("group %s: generation %d is stable", group.group_id, group.generation_id)
        for m in group.members.values():
            self._reply(m.sync_future, sync_result(NONE, group, m.assignment))
            m.sync_future = None

    # -- Heartbeat and LeaveGroup ------------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
    ) -> int:
        """Keep a member's session alive; the error code tells it to rejoin when needed."""
        if not self._closed and self.consumer.serves_classic(group_id):
            return self.consumer.classic_heartbeat(
                group_id, generation_id, member_id, group_instance_id
            )
        with self._critical():
            group = self._groups.get(group_id)
            code = (
                NOT_COORDINATOR
                if self._closed
                else Group.member_error(group, generation_id, member_id, group_instance_id)
            )
            if code or group is None:
                return code
            group.members[member_id].touch()
            return REBALANCE_IN_PROGRESS if group.state == PREPARING_REBALANCE else NONE

    def leave_group(
        self, group_id: str, members: Iterable[str | tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """Remove members (ids, or (member id, group instance id) pairs: LeaveGroup v3+ may
        name a static member by its instance id alone); a group-level error and one per
        member."""
        if not self._closed and self.consumer.serves_classic(group_id):
            pairs = [(m, None) if isinstance(m, str) else m for m in members]
            return NONE, self.consumer.classic_leave(group_id, pairs)
        with self._critical():
            if self._closed:
                return NOT_COORDINATOR, []
            group = self._groups.get(group_id)
            codes = [
                self._leave_one(group, *((m, None) if isinstance(m, str) else m)) for m in members
            ]
            self._kick.set()
            return NONE, codes

    def _leave_one(
        self, group: Group | None, member_id: str, instance_id: str | None = None
    ) -> int:
        """Remove one member (or a handed-out pending id) from the group."""
        if group is None:
            return UNKNOWN_MEMBER_ID
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return UNKNOWN_MEMBER_ID
            if member_id and member_id != current:
                return FENCED_INSTANCE_ID
            member_id = current
        if member_id in group.pending:
            del group.pending[member_id]
            self._try_complete_join(group)
            return NONE
        member = group.members.get(member_id)
        if member is None:
            return UNKNOWN_MEMBER_ID
        self._remove_member(group, member, "member left the group")
        return NONE

    # -- offsets -----------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        offsets: Mapping[TopicPartition, OffsetEntry],
        *,
        check_membership: bool = True,
        group_instance_id: str | None = None,
        api_version: int = 8,
    ) -> int | dict[TopicPartition, int]:
        """Store offsets if the committer may (generation -1 is a simple commit when Empty;
        a consumer group's member commits with its member epoch, OffsetCommit v9+): an error
        code for all of them, or one per partition when some were refused."""
        modern = (
            self.consumer.commit_error(group_id, member_id, generation_id, api_version)
            if check_membership
            else None
        )
        with self._lock:
            group = self._groups.get(group_id)
            code = NOT_COORDINATOR if self._closed else NONE
            if not code and modern is not None:
                code = modern
            elif not code and check_membership:
                code = Group.commit_error(group, generation_id, member_id, group_instance_id)
        if code:
            return code
        stale = (
            self.consumer.stale_partitions(group_id, member_id, generation_id, offsets)
            if modern is not None
            else set()
        )
        try:
            self.offsets.commit(group_id, {tp: e for tp, e in offsets.items() if tp not in stale})
        except (OSError, RuntimeError) as exc:
            log.error("group %s: storing offsets failed: %s", group_id, exc)
            return COORDINATOR_NOT_AVAILABLE
        if stale:
            return {tp: STALE_MEMBER_EPOCH if tp in stale else NONE for tp in offsets}
        return NONE

    def txn_commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        producer_id: int,
        epoch: int,
        offsets: Mapping[TopicPartition, OffsetEntry],
    ) -> int:
        """TxnOffsetCommit: stage offsets in a transaction (Kafka's handleTxnCommitOffsets:
        a given member must belong to the group, a given generation must be current)."""
        modern = self.consumer.commit_error(group_id, member_id, generation_id, 0, True)
        with self._lock:
            group = self._groups.get(group_id)
            code = NOT_COORDINATOR if self._closed else NONE
            if not code and modern is not None:
                code = modern
            elif not code and group is not None and member_id and member_id not in group.members:
                code = UNKNOWN_MEMBER_ID
            elif not code and group is not None and 0 <= generation_id != group.generation_id:
                code = ILLEGAL_GENERATION
        if code:
            return code
        try:
            self.offsets.txn_commit(group_id, producer_id, epoch, offsets)
        except (OSError, RuntimeError, ValueError) as exc:
            log.error("group %s: staging transactional offsets failed: %s", group_id, exc)
            return COORDINATOR_NOT_AVAILABLE
        return NONE

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetEntry]:
        """Committed offsets of a group (all of them when partitions is None)."""
        return self.offsets.fetch(group_id, partitions)

    # -- reaper ------------------------------------------------------------------------------

    def _reaper(self) -> None:
        """Expire sessions and deadlines until closed."""
        while True:
            wait = _REAPER_MAX_WAIT
            with self._critical():
                if self._closed:
                    return
                try:
                    wait = self._expire(time.monotonic())
                except Exception:  # keep expiring other groups whatever one of them did
                    log.exception("group coordinator %d: expiration pass failed", self.node_id)
            wait = min(wait, max(0.0, self.consumer.expire(time.monotonic()) - time.monotonic()))
            self._kick.wait(timeout=wait)
            self._kick.clear()
            if time.monotonic() >= self._next_retention and not self._closed:
                self._next_retention = time.monotonic() + self.retention_check_s
                self._expire_offsets()

    def _expire(self, now: float) -> float:
        """One pass over all groups; returns how long to sleep until the next deadline."""
        deadlines = [now + _REAPER_MAX_WAIT]
        for group in list(self._groups.values()):
            deadlines.append(self._expire_group(group, now))
            if group.state == EMPTY and group.generation_id == 0 and not group.pending:
                del self._groups[group.group_id]  # never formed (stray request, lapsed id)
        return max(0.0, min(deadlines) - now)

    def _expire_group(self, group: Group, now: float) -> float:
        """Expire one group's pending ids, dead members and rebalance deadlines."""
        for member_id, deadline in list(group.pending.items()):
            if now >= deadline:
                del group.pending[member_id]
                self._try_complete_join(group)
        for member in list(group.members.values()):
            if (
                not member.keep_alive()
                and now >= member.session_deadline
                and member.member_id in group.members
            ):
                self._remove_member(group, member, "session timeout")
        if group.state == PREPARING_REBALANCE:
            self._expire_rebalance(group, now)
        return min(group.deadlines(), default=now + _REAPER_MAX_WAIT)

    def _expire_rebalance(self, group: Group, now: float) -> None:
        """End the initial delay, or force the join phase at the rebalance timeout."""
        if group.delay_deadline is not None and now >= group.delay_deadline:
            group.delay_deadline = None
            self._try_complete_join(group)
        if (
            group.state == PREPARING_REBALANCE
            and group.delay_deadline is None
            and now >= group.join_deadline
        ):
            self._complete_join(group)

    def _expire_offsets(self) -> None:
        """Drop offsets past retention for groups that have no members."""
        with self._lock:
            active = {gid for gid, group in self._groups.items() if group.members}
        active |= self.consumer.active()
        try:
            removed = self.offsets.expire(active.__contains__)
        except (OSError, RuntimeError) as exc:
            log.warning("offset expiration failed: %s", exc)
            return
        if removed:
            log.info("expired %d committed offsets", removed)
