"""AdminClient.describe_consumer_groups: ConsumerGroupDescribe (KIP-848) for consumer groups, the
classic DescribeGroups answer for the rest, as Java's Admin does.

A KIP-848 group reports its group epoch, the epoch of its target assignment and its assignor;
each member its member epoch, current assignment and target assignment (topic names included
in the answer), rack and subscription.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kclient.errors import GroupIdNotFoundError, UnsupportedVersionError
from kclient.protocol.apis import CONSUMER_GROUP_DESCRIBE

from .base import check
from .types import (
    ConsumerGroupDescription,
    ConsumerGroupMemberDescription,
    GroupDescription,
    TopicPartition,
)

__all__ = ["describe_consumer_groups", "from_classic"]

#: ConsumerGroupDescribe v1's member types (KIP-1099)
_MEMBER_TYPES = {0: "classic", 1: "consumer"}


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    return tuple(
        sorted(
            TopicPartition(t.topic_name, p)
            for t in assignment.topic_partitions
            for p in t.partitions
        )
    )


def _member(m: Any) -> ConsumerGroupMemberDescription:
    return ConsumerGroupMemberDescription(
        m.member_id,
        m.client_id,
        m.client_host,
        m.instance_id,
        _partitions(m.assignment),
        _partitions(m.target_assignment),
        m.member_epoch,
        m.rack_id,
        tuple(m.subscribed_topic_names),
        m.subscribed_topic_regex,
        _MEMBER_TYPES.get(m.get("member_type", -1)),
    )


def from_classic(d: GroupDescription) -> ConsumerGroupDescription:
    """A classic group's DescribeGroups answer in describe_consumer_groups' terms."""
    members = tuple(
        ConsumerGroupMemberDescription(
            m.member_id,
            m.client_id,
            m.host,
            m.group_instance_id,
            m.assignment,
            m.assignment,
            member_type="classic",
        )
        for m in d.members
    )
    return ConsumerGroupDescription(
        d.group_id, d.state, "classic", d.protocol, members, d.coordinator
    )


def describe_consumer_groups(
    admin: Any, group_ids: Iterable[str]
) -> dict[str, ConsumerGroupDescription]:
    """Each group by ConsumerGroupDescribe; one the coordinator says is not a consumer group
    (GROUP_ID_NOT_FOUND), or a broker without the API, by DescribeGroups."""
    out: dict[str, ConsumerGroupDescription] = {}
    for group in group_ids:
        coordinator = admin._coordinator(group)
        node = -1 if coordinator.node_id is None else coordinator.node_id
        try:
            resp = coordinator.request(
                CONSUMER_GROUP_DESCRIBE,
                {"group_ids": [group], "include_authorized_operations": False},
                check=lambda r: next(
                    (g.error_code for g in r.groups if g.error_code in (14, 15, 16)), 0
                ),
            )
        except UnsupportedVersionError:
            out[group] = from_classic(admin.describe_groups([group])[group])
            continue
        for g in resp.groups:
            if g.error_code == GroupIdNotFoundError.errno:
                out[group] = from_classic(admin.describe_groups([group])[group])
                continue
            check(g.error_code, f"group {group!r}", g.error_message)
            out[group] = ConsumerGroupDescription(
                group,
                g.group_state,
                "consumer",
                g.assignor_name,
                tuple(_member(m) for m in g.members),
                node,
                g.group_epoch,
                g.assignment_epoch,
            )
    return out
