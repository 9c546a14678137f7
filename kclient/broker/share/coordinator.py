"""The share-group coordinator and share-partition leader of one mini-broker (KIP-932).

It keeps the share groups (members, epochs, assignments: :mod:`.group`), the share partitions
(in-flight records: :mod:`.partition`) and the members' share sessions (:mod:`.sessions`), and
writes every change of a share partition's state to the durable store (:mod:`.store`) before
the request that made it is answered, so a restart (or kill -9) keeps what was acknowledged,
archived and how often each record was delivered; locks do not survive a restart (their
records become available again).  One lock guards it all; a reaper thread expires member
sessions (their records are released) and acquisition locks.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from kclient.protocol import error_codes as E

from ..log import Log
from . import reader
from .config import GroupSettings, ShareSettings
from .group import DEAD, ShareGroup, ShareMember
from .partition import AcquiredRange, InvalidRecordState, SharePartition, Span
from .sessions import ShareSession, ShareSessions
from .store import PartitionSnapshot, ShareStateStore

__all__ = ["Acquired", "ShareCoordinator", "TopicView"]

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Key = tuple[str, str, int]
_REAPER_WAIT = 0.5
UNKNOWN_MEMBER_ID = E.UnknownMemberIdError.errno
FENCED_MEMBER_EPOCH = E.FencedMemberEpochError.errno
INVALID_REQUEST = E.InvalidRequestError.errno
GROUP_MAX_SIZE_REACHED = E.GroupMaxSizeReachedError.errno
INVALID_RECORD_STATE = E.InvalidRecordStateError.errno
NOT_COORDINATOR = E.NotCoordinatorError.errno
GROUP_ID_NOT_FOUND = E.GroupIdNotFoundError.errno
NON_EMPTY_GROUP = E.NonEmptyGroupError.errno
UNKNOWN_TOPIC_OR_PARTITION = E.UnknownTopicOrPartitionError.errno
OFFSET_OUT_OF_RANGE = E.OffsetOutOfRangeError.errno

#: (error code, acquired ranges, record bytes) of one partition of a share fetch
Acquired = tuple[int, list[AcquiredRange], bytes]


def _spans(log_: Log, limit: int, committed: bool, start: int) -> Iterator[Span]:
    """The batches of ``log_`` from ``start`` (a share partition's reader)."""
    return reader.spans(log_, start, limit, committed)


class TopicView(Protocol):
    """What the coordinator needs of the cluster: partitions and topic ids."""

    def partitions(self, topic: str) -> dict[int, int] | None: ...

    def topic_id(self, topic: str) -> bytes: ...


class ShareCoordinator:
    """Share groups, share partitions and share sessions of one broker (see the module doc)."""

    def __init__(
        self,
        data_dir: Path | str,
        config: Mapping[str, str],
        topics: TopicView,
        logs: Callable[[str, int], tuple[Log | None, int]],
    ) -> None:
        """``logs(topic, partition)``: the partition's log when this broker leads it, else
        (None, error code)."""
        self.settings = ShareSettings.from_config(config)
        self.store = ShareStateStore(data_dir, config)
        self.topics, self.logs = topics, logs
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[Key, SharePartition] = {}
        self.sessions = ShareSessions()
        self.lock = threading.RLock()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Replay the store (groups come back Empty, share partitions with their records
        unlocked) and start the reaper."""
        self.store.start()
        with self.lock:
            for group_id, epoch in self.store.groups.items():
                self.groups[group_id] = ShareGroup(group_id, epoch)
            stale: dict[Key, PartitionSnapshot | None] = {}
            for key, snap in self.store.partitions.items():
                if snap.topic_id != self.topics.topic_id(key[1]):
                    stale[key] = None  # its topic was deleted (and maybe recreated)
                    continue
                sp = self._new_partition(key[0], snap.start)
                sp.restore(snap.start, snap.batches, snap.state_epoch)
                self.partitions[key] = sp
                self.groups.setdefault(key[0], ShareGroup(key[0]))
            self.store.write(stale)
        self._thread = threading.Thread(
            target=self._reap, daemon=True, name="kclient-share-coordinator"
        )
        self._thread.start()

    def close(self) -> None:
        """Stop the reaper and close the store."""
        self._closed.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self.store.close()

    def _reap(self) -> None:
        """Expire member sessions and acquisition locks until closed."""
        while not self._closed.wait(_REAPER_WAIT):
            try:
                self.expire(time.monotonic())
            except Exception:  # noqa: BLE001 - the reaper must outlive one bad pass
                log.exception("share coordinator: expiration pass failed")

    def expire(self, now: float) -> None:
        """Remove members whose session ran out; release records whose lock ran out."""
        with self.lock:
            for group in list(self.groups.values()):
                for member in list(group.members.values()):
                    if now >= member.deadline:
                        log.info(
                            "share group %s: member %s session timed out",
                            group.group_id,
                            member.member_id,
                        )
                        self._remove(group, member, timed_out=True)
            changed = [key for key, sp in self.partitions.items() if sp.expire(now)]
            self._persist(changed)

    # -- group configuration ------------------------------------------------------------------

    def group_settings(self, group_id: str) -> GroupSettings:
        """The settings in effect for a group (its dynamic config over the broker's)."""
        return self.settings.for_group(self.store.configs.get(group_id, {}))

    def group_config(self, group_id: str) -> dict[str, str]:
        """A group's dynamic configuration (the keys set on it)."""
        return dict(self.store.configs.get(group_id, {}))

    def set_group_config(self, group_id: str, config: Mapping[str, str]) -> None:
        """Replace a group's dynamic configuration (ValueError for an unknown key or bad
        value); applies to share partitions from their next acquisition."""
        self.settings.for_group(config)
        with self.lock:
            self.store.write(configs={group_id: dict(config) or None})
            settings = self.group_settings(group_id)
            for (gid, _, _), sp in self.partitions.items():
                if gid == group_id:
                    settings.apply(sp)

    # -- ShareGroupHeartbeat ------------------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        topics: Sequence[str] | None,
        client_id: str,
        client_host: str,
    ) -> dict[str, Any]:
        """One heartbeat: join (epoch 0), stay (the current or previous epoch), leave (-1).
        Returns the fields of the answer (error_code, member_id, member_epoch,
        heartbeat_interval_ms, assignment as topic -> partitions or None)."""
        settings = self.group_settings(group_id)
        answer: dict[str, Any] = {
            "error_code": 0,
            "member_id": member_id or None,
            "member_epoch": member_epoch,
            "assignment": None,
            "heartbeat_interval_ms": settings.heartbeat_interval_ms,
        }
        with self.lock:
            group = self.groups.get(group_id)
            member = group.members.get(member_id) if group is not None else None
            if member_epoch == -1:
                if group is not None and member is not None:
                    self._remove(group, member)
                return answer
            if member_epoch == 0 and member is None:
                if not topics:
                    return dict(answer, error_code=INVALID_REQUEST)
                group = self._group(group_id)
                if len(group.members) >= self.settings.max_size:
                    return dict(answer, error_code=GROUP_MAX_SIZE_REACHED)
                member = ShareMember(member_id or str(uuid.uuid4()), client_id, client_host)
                group.members[member.member_id] = member
                answer["member_id"] = member.member_id
            elif group is None or member is None:
                return dict(answer, error_code=UNKNOWN_MEMBER_ID)
            elif member_epoch not in (member.epoch, member.previous_epoch, 0):
                return dict(answer, error_code=FENCED_MEMBER_EPOCH)
            member.touch(settings.session_timeout_ms)
            if rack_id is not None:
                member.rack_id = rack_id
            if topics is not None and list(topics) != member.topics:
                member.topics = list(topics)
            if group.assign(self.topics.partitions) or member_epoch == 0:
                self.store.write(groups={group_id: group.epoch})
            if member.stale or member_epoch == 0:
                member.adopt(group.epoch)
                answer["assignment"] = dict(member.assignment)
            answer["member_epoch"] = member.epoch
            return answer

    def _group(self, group_id: str) -> ShareGroup:
        """The group, created on first use."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    def _remove(self, group: ShareGroup, member: ShareMember, timed_out: bool = False) -> None:
        """A member leaves.  One that stopped heartbeating loses its session and every record
        it holds is released; one that left (epoch -1) keeps its session until the client
        closes it, as clients acknowledge what they hold after leaving (records it never
        acknowledges come back when their locks expire)."""
        del group.members[member.member_id]
        released: list[Key] = []
        if timed_out:
            self.sessions.close(group.group_id, member.member_id)
            released = [
                key
                for key, sp in self.partitions.items()
                if key[0] == group.group_id and sp.release_member(member.member_id)
            ]
        group.assign(self.topics.partitions)
        group.bump()
        self.store.write(groups={group.group_id: group.epoch})
        self._persist(released)

    # -- describing and listing ---------------------------------------------------------------

    def describe(self, group_id: str) -> ShareGroup | None:
        """A copy-free view of a group (callers read it under :attr:`lock`), None if unknown."""
        return self.groups.get(group_id)

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group."""
        with self.lock:
            return sorted((g.group_id, g.state) for g in self.groups.values())

    def is_share_group(self, group_id: str) -> bool:
        """Whether ``group_id`` is a share group here."""
        return group_id in self.groups

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups of a share group: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP or 0."""
        with self.lock:
            group = self.groups.get(group_id)
            if group is None:
                return GROUP_ID_NOT_FOUND
            if group.members:
                return NON_EMPTY_GROUP
            del self.groups[group_id]
            for key in [k for k in self.partitions if k[0] == group_id]:
                del self.partitions[key]
            self.store.delete_group(group_id)
            return 0

    def group_state(self, group_id: str) -> str:
        """Empty, Stable, or Dead when unknown."""
        group = self.groups.get(group_id)
        return group.state if group is not None else DEAD

    # -- share partitions ---------------------------------------------------------------------

    def _new_partition(self, group_id: str, start: int) -> SharePartition:
        """A share partition with the group's settings."""
        sp = SharePartition(start)
        self.group_settings(group_id).apply(sp)
        return sp

    def partition(
        self, group_id: str, topic: str, index: int
    ) -> tuple[SharePartition | None, Log | None, int]:
        """(share partition, log, error code), the share partition created at the group's
        ``share.auto.offset.reset`` when first used, its start moved up to the log's start."""
        log_, code = self.logs(topic, index)
        if log_ is None:
            return None, None, code
        key = (group_id, topic, index)
        sp = self.partitions.get(key)
        if sp is None:
            earliest = self.group_settings(group_id).auto_offset_reset == "earliest"
            start = log_.log_start_offset if earliest else log_.log_end_offset
            sp = self.partitions[key] = self._new_partition(group_id, start)
            self._group(group_id)
            self._persist([key])
        elif sp.start < log_.log_start_offset:
            sp.move_start(log_.log_start_offset)
        return sp, log_, 0

    def acquire(
        self, session: ShareSession, max_records: int, max_bytes: int
    ) -> dict[TopicPartition, Acquired]:
        """Acquire records on the session's partitions for its member; the answer per
        partition, only for those with records or errors."""
        out: dict[TopicPartition, Acquired] = {}
        budget, now = max_records, time.monotonic()
        with self.lock:
            changed: list[Key] = []
            for topic, index in session.fetch_order():
                if budget <= 0:
                    break
                sp, log_, code = self.partition(session.group_id, topic, index)
                if sp is None or log_ is None:
                    out[(topic, index)] = (code, [], b"")
                    continue
                committed = self.group_settings(session.group_id).read_committed
                got = sp.acquire(
                    session.member_id,
                    now,
                    budget,
                    functools.partial(_spans, log_, max_bytes, committed),
                )
                if got:
                    budget -= sum(last - first + 1 for first, last, _ in got)
                    data = reader.covering(log_, got[0][0], max(r[1] for r in got))
                    out[(topic, index)] = (0, got, data)
                    changed.append((session.group_id, topic, index))
            self._persist(changed)
        return out

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        acks: Mapping[TopicPartition, Iterable[tuple[int, int, Sequence[int]]]],
    ) -> dict[TopicPartition, int]:
        """Apply acknowledgements per partition: an error code each (INVALID_RECORD_STATE
        when one names records the member does not hold)."""
        codes: dict[TopicPartition, int] = {}
        now = time.monotonic()
        with self.lock:
            changed: list[Key] = []
            for (topic, index), batches in acks.items():
                sp = self.partitions.get((group_id, topic, index))
                if sp is None:
                    codes[(topic, index)] = self.logs(topic, index)[1] or INVALID_RECORD_STATE
                    continue
                try:
                    sp.acknowledge(member_id, list(batches), now)
                    codes[(topic, index)] = 0
                    changed.append((group_id, topic, index))
                except InvalidRecordState as exc:
                    log.debug("share group %s: %s-%d: %s", group_id, topic, index, exc)
                    codes[(topic, index)] = INVALID_RECORD_STATE
            self._persist(changed)
        return codes

    def open_session(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        add: Iterable[TopicPartition],
        forget: Iterable[TopicPartition],
    ) -> tuple[int, ShareSession | None]:
        """The session part of a ShareFetch (see :class:`ShareSessions`); a replaced
        session's records are released."""
        with self.lock:
            code, session, replaced = self.sessions.update(group_id, member_id, epoch, add, forget)
            if replaced is not None:
                self._release(group_id, member_id)
            return code, session

    def close_session(self, group_id: str, member_id: str) -> None:
        """Epoch -1: the session ends and the member's remaining records are released."""
        with self.lock:
            self.sessions.close(group_id, member_id)
            self._release(group_id, member_id)

    def _release(self, group_id: str, member_id: str) -> None:
        """Release every record a member holds in a group."""
        released = [
            key
            for key, sp in self.partitions.items()
            if key[0] == group_id and sp.release_member(member_id)
        ]
        self._persist(released)

    def _persist(self, keys: Iterable[Key]) -> None:
        """Write the share partitions' snapshots (one batch)."""
        snaps: dict[Key, PartitionSnapshot | None] = {}
        for key in dict.fromkeys(keys):
            sp = self.partitions.get(key)
            if sp is not None:
                snaps[key] = PartitionSnapshot(
                    self.topics.topic_id(key[1]),
                    sp.state_epoch,
                    sp.start,
                    tuple(sp.state_batches()),
                )
        self.store.write(snaps)

    # -- the offsets admin APIs ---------------------------------------------------------------

    def start_offsets(
        self, group_id: str, wanted: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[int, int]]:
        """(SPSO, lag) per partition (-1, -1 when the group has no state there); all the
        group's share partitions when ``wanted`` is None."""
        with self.lock:
            keys = (
                [(t, p) for g, t, p in self.partitions if g == group_id]
                if wanted is None
                else list(wanted)
            )
            out = {}
            for topic, index in keys:
                sp = self.partitions.get((group_id, topic, index))
                log_ = self.logs(topic, index)[0]
                if sp is None or log_ is None:
                    out[(topic, index)] = (-1, -1)
                    continue
                lag = max(log_.log_end_offset - sp.start - sp.done_in_window(), 0)
                out[(topic, index)] = (sp.start, lag)
            return out

    def alter_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> tuple[int, dict[TopicPartition, int]]:
        """AlterShareGroupOffsets: (group error, per-partition errors); only while the group
        has no members."""
        with self.lock:
            group = self.groups.get(group_id)
            if group is not None and group.members:
                return NON_EMPTY_GROUP, {}
            codes, changed = {}, []
            for (topic, index), offset in offsets.items():
                log_, code = self.logs(topic, index)
                if log_ is None:
                    codes[(topic, index)] = code
                    continue
                if not log_.log_start_offset <= offset <= log_.log_end_offset:
                    codes[(topic, index)] = OFFSET_OUT_OF_RANGE
                    continue
                key = (group_id, topic, index)
                sp = self.partitions.get(key) or self._new_partition(group_id, offset)
                sp.reset(offset)
                self.partitions[key] = sp
                changed.append(key)
                codes[(topic, index)] = 0
            self._group(group_id)
            self.store.write(groups={group_id: self.groups[group_id].epoch})
            self._persist(changed)
            return 0, codes

    def delete_offsets(self, group_id: str, topics: Iterable[str]) -> tuple[int, dict[str, int]]:
        """DeleteShareGroupOffsets: forget the group's share partitions of ``topics``."""
        with self.lock:
            group = self.groups.get(group_id)
            if group is None:
                return GROUP_ID_NOT_FOUND, {}
            if group.members:
                return NON_EMPTY_GROUP, {}
            codes: dict[str, int] = {}
            doomed: dict[Key, PartitionSnapshot | None] = {}
            for topic in topics:
                keys = [k for k in self.partitions if k[0] == group_id and k[1] == topic]
                codes[topic] = (
                    0
                    if keys or self.topics.partitions(topic) is not None
                    else UNKNOWN_TOPIC_OR_PARTITION
                )
                for key in keys:
                    del self.partitions[key]
                    doomed[key] = None
            self.store.write(doomed)
            return 0, codes
