"""A share group's membership: members, epochs and the assignment (KIP-932).

Share groups use the consumer-group protocol of KIP-848 without its revocation dance: the
coordinator computes every member's assignment itself.  Kafka's simple assignor may give a
partition to several members, because records are handed out one by one under locks, not
partition by partition; here every member gets every partition of the topics it subscribes to
(so any member can take any available record).  The group epoch moves on every change of
membership, subscriptions or partitions; a member's epoch is the group epoch of the
assignment it was last given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["EMPTY", "STABLE", "DEAD", "Assignment", "ShareGroup", "ShareMember"]

EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"

#: topic -> sorted partition ids
Assignment = dict[str, list[int]]


@dataclass
class ShareMember:
    """One member: identity, subscription, assignment, epochs and session deadline."""

    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None = None
    topics: list[str] = field(default_factory=list)
    assignment: Assignment = field(default_factory=dict)
    epoch: int = 0
    previous_epoch: int = -1
    deadline: float = 0.0
    #: the assignment changed since the member was last told it
    stale: bool = True

    def adopt(self, group_epoch: int) -> None:
        """The member is being told its new assignment at ``group_epoch``; its previous epoch
        stays valid (the answer may be lost)."""
        self.previous_epoch, self.epoch, self.stale = self.epoch, group_epoch, False

    def touch(self, session_ms: int) -> None:
        """Push the session deadline out."""
        self.deadline = time.monotonic() + session_ms / 1000


@dataclass
class ShareGroup:
    """A share group: its epoch and members."""

    group_id: str
    epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """Empty without members, Stable with."""
        return STABLE if self.members else EMPTY

    def subscribed(self) -> set[str]:
        """Every topic some member subscribes to."""
        return {t for m in self.members.values() for t in m.topics}

    def assign(self, partitions_of: Callable[[str], Mapping[int, int] | None]) -> bool:
        """Recompute every member's assignment (``partitions_of(topic)``: its partitions, None
        when it does not exist); bump the group epoch when anything changed."""
        changed = False
        for member in self.members.values():
            target: Assignment = {}
            for topic in sorted(set(member.topics)):
                parts = partitions_of(topic)
                if parts:
                    target[topic] = sorted(parts)
            if target != member.assignment:
                member.assignment, member.stale, changed = target, True, True
        if changed:
            self.bump()
        return changed

    def bump(self) -> None:
        """A new group epoch (members whose assignment changed are told it when they next
        heartbeat: :meth:`ShareMember.adopt`)."""
        self.epoch += 1
