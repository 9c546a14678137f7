"""What the group coordinator tells the other APIs about its groups: states, summaries,
subscriptions, the list of groups and their deletion (a mixin of :class:`.GroupCoordinator`,
classic groups and KIP-848 consumer groups alike)."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

from kclient.protocol.error_codes import GroupIdNotFoundError, NonEmptyGroupError

from .consumer_coordinator import ConsumerGroups
from .group import DEAD, EMPTY, NONE, Group, subscribed_topics
from .offsets import OffsetManager

__all__ = ["GroupViews"]

NON_EMPTY_GROUP = NonEmptyGroupError.errno
GROUP_ID_NOT_FOUND = GroupIdNotFoundError.errno


class GroupViews:
    """The coordinator's read-side and DeleteGroups (needs the attributes declared here)."""

    _lock: threading.Lock
    _groups: dict[str, Group]
    offsets: OffsetManager
    consumer: ConsumerGroups

    def _critical(self) -> AbstractContextManager[None]:
        """The coordinator's lock, futures completed after it (see GroupCoordinator)."""
        raise NotImplementedError

    def group_state(self, group_id: str) -> str:
        """A group's state name (Dead when unknown)."""
        with self._lock:
            group = self._groups.get(group_id)
            return group.state if group else DEAD

    def describe_group(self, group_id: str) -> dict[str, Any] | None:
        """A snapshot of a group: state, generation, protocol, leader and member ids."""
        with self._lock:
            group = self._groups.get(group_id)
            return group.describe() if group else None

    def group_summary(self, group_id: str) -> dict[str, Any] | None:
        """DescribeGroups' view of a group (Empty when it only has offsets), None if unknown."""
        with self._lock:
            group = self._groups.get(group_id)
            if group is not None:
                return group.summary()
        if group_id in self.offsets.groups():
            return Group(group_id).summary()
        return None

    def subscriptions(self, group_id: str) -> set[str] | None:
        """Topics the group's members subscribe to (none when it has no members); None when
        unknown (not the consumer protocol, or unparsable), which counts as every topic."""
        with self._lock:
            group = self._groups.get(group_id)
            if group is None or not group.members:
                return set()
            if group.protocol_type != "consumer":
                return None
            topics: set[str] = set()
            for member in group.members.values():
                protocol = group.protocol_name or member.protocol_names()[0]
                parsed = subscribed_topics(member.metadata(protocol))
                if parsed is None:
                    return None
                topics |= parsed
            return topics

    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every group with members or offsets."""
        with self._lock:
            out = {gid: (gid, g.protocol_type or "", g.state) for gid, g in self._groups.items()}
        modern = {gid for gid, _ in self.consumer.listing()}
        for gid in self.offsets.groups():
            if gid not in modern:
                out.setdefault(gid, (gid, "", EMPTY))
        return sorted(out.values())

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups for one group: an error code (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP) or 0
        once the group and its committed offsets are gone."""
        modern = self.consumer.delete(group_id)
        if modern is not None:
            if modern == NONE:
                self.offsets.delete(group_id)
            return modern
        with self._critical():
            group = self._groups.get(group_id)
            if group is None and group_id not in self.offsets.groups():
                return GROUP_ID_NOT_FOUND
            if group is not None and (group.members or group.state != EMPTY):
                return NON_EMPTY_GROUP
            self._groups.pop(group_id, None)
            self.offsets.delete(group_id)
            return NONE
