"""AdminClient's share-group operations (KIP-932): list, describe, and the share-partition
start offsets (describe, alter, reset, delete), each at the group's coordinator."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kclient.protocol.apis import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    SHARE_GROUP_DESCRIBE,
)

from .base import as_partition, by_topic, check
from .groups import GroupAdmin
from .types import GroupListing, OffsetSpec, TopicPartition

__all__ = [
    "ShareGroupAdmin",
    "ShareGroupDescription",
    "ShareMemberDescription",
    "SharePartitionOffset",
    "SHARE_RESET_STRATEGIES",
]

#: reset_share_group_offsets strategies, as kafka-share-groups names them
SHARE_RESET_STRATEGIES = ("earliest", "latest", "offset")


@dataclass(frozen=True)
class ShareMemberDescription:
    """A share-group member, what it subscribes to and the partitions it reads."""

    member_id: str
    client_id: str
    host: str
    rack: str | None
    member_epoch: int
    subscription: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ShareGroupDescription:
    """What describe_share_groups reports of a share group."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMemberDescription, ...]
    coordinator: int


@dataclass(frozen=True)
class SharePartitionOffset:
    """A share partition's start offset (the first record not yet settled for good; -1: no
    state yet) and lag (records from it to the end, -1 when the broker does not say)."""

    start_offset: int
    lag: int = -1
    leader_epoch: int = -1


def _member(m: Any) -> ShareMemberDescription:
    parts = tuple(
        TopicPartition(tp.topic_name, p)
        for tp in m.assignment.topic_partitions
        for p in sorted(tp.partitions)
    )
    return ShareMemberDescription(
        m.member_id,
        m.client_id,
        m.client_host,
        m.rack_id,
        m.member_epoch,
        tuple(m.subscribed_topic_names),
        tuple(sorted(parts)),
    )


def _group_code(resp: Any) -> int:
    """The first group's error (what the coordinator retry looks at)."""
    return int(resp.groups[0].error_code) if resp.groups else 0


class ShareGroupAdmin(GroupAdmin):
    """Share groups: list, describe, offsets."""

    def list_share_groups(self) -> list[GroupListing]:
        """Every share group (ListGroups with the types filter)."""
        return self.list_groups(types=["share"])

    def describe_share_groups(self, group_ids: Iterable[str]) -> dict[str, ShareGroupDescription]:
        """State, epochs and members of share groups; GroupIdNotFoundError for a group the
        coordinator does not know as a share group."""
        out = {}
        for group in group_ids:
            coordinator = self._coordinator(group)
            resp = coordinator.request(
                SHARE_GROUP_DESCRIBE,
                {"group_ids": [group], "include_authorized_operations": False},
                check=_group_code,
            )
            for g in resp.groups:
                check(g.error_code, f"share group {group!r}", g.error_message)
                out[group] = ShareGroupDescription(
                    group,
                    g.group_state,
                    g.group_epoch,
                    g.assignment_epoch,
                    g.assignor_name,
                    tuple(_member(m) for m in g.members),
                    -1 if coordinator.node_id is None else coordinator.node_id,
                )
        return out

    def list_share_group_offsets(
        self, group: str, partitions: Iterable[Any] | None = None
    ) -> dict[TopicPartition, SharePartitionOffset]:
        """Each share partition's start offset and lag (all the group's when ``partitions``
        is None)."""
        topics = None
        if partitions is not None:
            topics = [
                {"topic_name": t, "partitions": ps}
                for t, ps in by_topic(as_partition(p) for p in partitions).items()
            ]
        resp = self._coordinator(group).request(
            DESCRIBE_SHARE_GROUP_OFFSETS,
            {"groups": [{"group_id": group, "topics": topics}]},
            check=_group_code,
        )
        out = {}
        for g in resp.groups:
            check(g.error_code, f"share group {group!r}", g.error_message)
            for t in g.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.topic_name, p.partition_index)
                    check(p.error_code, f"share group {group!r} {tp}", p.error_message)
                    out[tp] = SharePartitionOffset(p.start_offset, p.lag, p.leader_epoch)
        return dict(sorted(out.items()))

    def alter_share_group_offsets(self, group: str, offsets: Mapping[Any, int]) -> None:
        """Set share partitions' start offsets (the group must have no members:
        NonEmptyGroupError otherwise)."""
        by: dict[str, list[dict[str, int]]] = {}
        for key, offset in offsets.items():
            tp = as_partition(key)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise ValueError(f"{tp}: a start offset must be an int >= 0, not {offset!r}")
            by.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "start_offset": offset}
            )
        body = {
            "group_id": group,
            "topics": [{"topic_name": t, "partitions": ps} for t, ps in by.items()],
        }
        resp = self._coordinator(group).request(
            ALTER_SHARE_GROUP_OFFSETS, body, check=lambda r: r.error_code
        )
        check(resp.error_code, f"share group {group!r}", resp.error_message)
        for t in resp.responses:
            for p in t.partitions:
                check(
                    p.error_code,
                    f"share group {group!r} {t.topic_name}-{p.partition_index}",
                    p.error_message,
                )

    def reset_share_group_offsets(
        self, group: str, topics: Iterable[str], to: str = "earliest", offset: int | None = None
    ) -> dict[TopicPartition, int]:
        """Set every partition of ``topics`` to the earliest or latest offset, or ``offset``;
        returns what was set."""
        if to not in SHARE_RESET_STRATEGIES:
            raise ValueError(f"reset to {to!r}: one of {', '.join(SHARE_RESET_STRATEGIES)}")
        if to == "offset" and (offset is None or offset < 0):
            raise ValueError("reset to an offset needs offset >= 0")
        parts = [TopicPartition(t, p) for t in topics for p in self.cluster.partitions_for(t)]
        if to == "offset":
            target = {tp: int(offset or 0) for tp in parts}
        else:
            spec = OffsetSpec.EARLIEST if to == "earliest" else OffsetSpec.LATEST
            target = {
                tp: r.offset for tp, r in self.list_offsets(dict.fromkeys(parts, spec)).items()
            }
        self.alter_share_group_offsets(group, target)
        return target

    def delete_share_group_offsets(self, group: str, topics: Iterable[str]) -> None:
        """Forget the group's state for whole topics (the group must have no members)."""
        body = {"group_id": group, "topics": [{"topic_name": t} for t in topics]}
        resp = self._coordinator(group).request(
            DELETE_SHARE_GROUP_OFFSETS, body, check=lambda r: r.error_code
        )
        check(resp.error_code, f"share group {group!r}", resp.error_message)
        for t in resp.responses:
            check(t.error_code, f"share group {group!r} topic {t.topic_name!r}", t.error_message)
