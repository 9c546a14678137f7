"""Share-group membership (KIP-932), written once for both drivers: the ShareGroupHeartbeat a
member sends to join, stay and leave, and what its answers mean.

A share group's coordinator assigns partitions on its own (no leader member, no revocation
step: several members may read one partition at once); a member only heartbeats.  Its member
id is its own (a random UUID, as Java's), its epoch the coordinator's; the assignment comes by
topic id, and :class:`ShareMemberState` keeps the names the subscribed topics' metadata gave.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kclient.errors import (
    FencedMemberEpochError,
    KafkaError,
    UnknownMemberIdError,
    error_for_code,
)
from kclient.protocol.apis import SHARE_GROUP_HEARTBEAT
from kclient.structs import TopicPartition

from .coordinator import CoordinatorState, coordinated
from .steps import Conversation

__all__ = ["ShareMemberState", "share_heartbeat", "share_leave", "new_member_id"]

log = logging.getLogger(__name__)

#: the coordinator forgot this member or moved on: join again with epoch 0 (same member id)
REJOIN = (UnknownMemberIdError.errno, FencedMemberEpochError.errno)


def new_member_id() -> str:
    """A member id as Java's clients make one: a random UUID, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


@dataclass
class ShareMemberState:
    """One share-group member: its id and epoch, what it subscribes to, what it is assigned."""

    group_id: str
    member_id: str = field(default_factory=new_member_id)
    epoch: int = 0
    subscription: tuple[str, ...] = ()
    rack_id: str | None = None
    #: the subscription the coordinator has (None: send it with the next heartbeat)
    sent_subscription: tuple[str, ...] | None = None
    heartbeat_interval_s: float = 5.0
    #: topic id -> partitions, as the last assignment said
    assigned_ids: dict[bytes, tuple[int, ...]] = field(default_factory=dict)
    #: topic id <-> name, from the subscribed topics' metadata (Metadata v10+)
    topic_names: dict[bytes, str] = field(default_factory=dict)
    topic_ids: dict[str, bytes] = field(default_factory=dict)
    #: bumped whenever the assignment changes
    generation: int = 0
    left: bool = False

    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to ``topics`` (sent with the next heartbeat)."""
        names = tuple(sorted(set(topics)))
        for name in names:
            if not isinstance(name, str) or not name:
                raise ValueError(f"a topic name must be a non-empty str, not {name!r}")
        self.subscription = names
        self.sent_subscription = None
        self.left = False

    def learn_topics(self, metadata: Any) -> None:
        """Take the topic ids of a Metadata answer (v10+)."""
        for t in metadata.topics:
            topic_id = bytes(t.topic_id) if t.topic_id else b""
            if t.name and topic_id and topic_id != bytes(16):
                self.topic_names[topic_id] = t.name
                self.topic_ids[t.name] = topic_id

    def unknown_topic_ids(self) -> set[bytes]:
        """Assigned topic ids whose names metadata has not given yet."""
        return {t for t in self.assigned_ids if t not in self.topic_names}

    def assignment(self) -> set[TopicPartition]:
        """The assigned partitions whose topic names are known."""
        return {
            TopicPartition(self.topic_names[t], p)
            for t, parts in self.assigned_ids.items()
            if t in self.topic_names
            for p in parts
        }

    def body(self, leaving: bool = False) -> dict[str, Any]:
        """The next heartbeat's request: epoch 0 joins, -1 leaves; the subscription when the
        coordinator does not have it."""
        send = self.subscription if self.sent_subscription != self.subscription else None
        return {
            "group_id": self.group_id,
            "member_id": self.member_id,
            "member_epoch": -1 if leaving else self.epoch,
            "rack_id": self.rack_id if self.epoch == 0 else None,
            "subscribed_topic_names": None
            if leaving
            else (list(send) if send is not None else None),
        }

    def apply(self, resp: Any, sent: tuple[str, ...] | None) -> None:
        """Take a heartbeat answer (``sent``: the subscription the request carried)."""
        code = resp.error_code
        if code in REJOIN:
            log.info(
                "share group %r: member %s %s; joining again",
                self.group_id,
                self.member_id,
                error_for_code(code).message,
            )
            self.rejoin()
            return
        if code:
            raise error_for_code(code)(
                f"share group {self.group_id!r}: {resp.error_message or 'heartbeat failed'}"
            )
        if sent is not None:
            self.sent_subscription = sent
        if resp.member_id:
            self.member_id = resp.member_id
        self.epoch = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self.heartbeat_interval_s = resp.heartbeat_interval_ms / 1000.0
        if resp.assignment is not None:
            assigned = {
                bytes(tp.topic_id): tuple(sorted(tp.partitions))
                for tp in resp.assignment.topic_partitions
            }
            if assigned != self.assigned_ids:
                self.assigned_ids = assigned
                self.generation += 1

    def rejoin(self) -> None:
        """Join again from epoch 0 with the whole subscription, nothing assigned meanwhile."""
        self.epoch = 0
        self.sent_subscription = None
        if self.assigned_ids:
            self.assigned_ids = {}
            self.generation += 1


def _check(resp: Any) -> int:
    """The coordinator errors :func:`coordinated` retries; the others are :meth:`apply`'s."""
    return int(resp.error_code)


def share_heartbeat(coordinator: CoordinatorState, state: ShareMemberState) -> Conversation[None]:
    """One heartbeat: join (epoch 0), or stay and take any new assignment."""
    body = state.body()
    sent = state.subscription if body["subscribed_topic_names"] is not None else None
    resp = yield from coordinated(coordinator, SHARE_GROUP_HEARTBEAT, body, _check)
    state.apply(resp, sent)


def share_leave(coordinator: CoordinatorState, state: ShareMemberState) -> Conversation[None]:
    """Leave the group (epoch -1); a failure is logged, not raised (the coordinator drops a
    silent member after its session timeout anyway)."""
    if state.left or state.epoch == 0 and not state.assigned_ids:
        state.left = True
        return
    state.left = True
    try:
        resp = yield from coordinated(
            coordinator, SHARE_GROUP_HEARTBEAT, state.body(leaving=True), _check, retries=1
        )
        if resp.error_code and resp.error_code not in REJOIN:
            log.info(
                "share group %r: leaving: %s",
                state.group_id,
                error_for_code(resp.error_code).message,
            )
    except KafkaError as exc:
        log.info("share group %r: leaving failed: %s", state.group_id, exc)
    state.epoch = 0
    state.sent_subscription = None
    state.assigned_ids = {}
    state.generation += 1
