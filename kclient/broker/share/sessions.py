"""Share sessions (KIP-932): which partitions a member's ShareFetch requests cover.

A session is opened by epoch 0 (its partitions: those the request names), continued by the
next epoch (partitions added by naming them, removed by ``forgotten topics``) and closed by
epoch -1.  A request with no session answers SHARE_SESSION_NOT_FOUND, one with a wrong epoch
INVALID_SHARE_SESSION_EPOCH; epochs wrap from 2^31-1 to 1, as Kafka's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kclient.protocol.error_codes import (
    InvalidShareSessionEpochError,
    ShareSessionNotFoundError,
)

__all__ = ["CLOSE", "OPEN", "ShareSession", "ShareSessions"]

OPEN, CLOSE = 0, -1
SHARE_SESSION_NOT_FOUND = ShareSessionNotFoundError.errno
INVALID_SHARE_SESSION_EPOCH = InvalidShareSessionEpochError.errno
_MAX_EPOCH = 0x7FFFFFFF

TopicPartition = tuple[str, int]


@dataclass
class ShareSession:
    """One member's session: the next epoch it must send and its partitions, in order."""

    group_id: str
    member_id: str
    epoch: int = 1
    partitions: dict[TopicPartition, None] = field(default_factory=dict)
    #: where the next acquisition starts in :attr:`partitions` (round-robin, so a partition
    #: with many records does not starve the others of a fetch's max_records)
    rotation: int = 0

    def fetch_order(self) -> list[TopicPartition]:
        """The session's partitions, starting one further along at each call."""
        parts = list(self.partitions)
        if not parts:
            return parts
        start = self.rotation % len(parts)
        self.rotation += 1
        return parts[start:] + parts[:start]


class ShareSessions:
    """The sessions of one broker, by (group, member)."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def update(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        add: Iterable[TopicPartition],
        forget: Iterable[TopicPartition],
    ) -> tuple[int, ShareSession | None, ShareSession | None]:
        """Apply one request's session part: (error code, the session, a session it
        replaced).  Epoch -1 returns the session without closing it (:meth:`close` does,
        once its acknowledgements are applied)."""
        key = (group_id, member_id)
        if epoch == OPEN:
            replaced = self._sessions.pop(key, None)
            opened = self._sessions[key] = ShareSession(group_id, member_id)
            opened.partitions.update(dict.fromkeys(add))
            return 0, opened, replaced
        session = self._sessions.get(key)
        if session is None:
            return SHARE_SESSION_NOT_FOUND, None, None
        if epoch != CLOSE:
            if epoch != session.epoch:
                return INVALID_SHARE_SESSION_EPOCH, None, None
            session.epoch = 1 if epoch >= _MAX_EPOCH else epoch + 1
        for tp in forget:
            session.partitions.pop(tp, None)
        session.partitions.update(dict.fromkeys(add))
        return 0, session, None

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        """Forget a member's session; returns it (None when it had none)."""
        return self._sessions.pop((group_id, member_id), None)

    def of_group(self, group_id: str) -> list[ShareSession]:
        """The open sessions of a group's members."""
        return [s for (g, _), s in self._sessions.items() if g == group_id]
