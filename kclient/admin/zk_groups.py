"""The 0.8 consumer groups kept in ZooKeeper: members under ``/consumers/<group>/ids``, owners
under ``.../owners/<topic>/<n>`` (the owning thread id) and offsets under
``.../offsets/<topic>/<n>`` (a decimal string), as Kafka 0.8's ZookeeperConsumerConnector
writes them and ``kafka-consumer-groups --zookeeper`` read them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kclient.errors import GroupIdNotFoundError, NonEmptyGroupError
from kclient.zkutils import (
    CONSUMERS_PATH,
    GroupDirs,
    NoNodeError,
    NotEmptyError,
    get_children,
    read_data,
    update_persistent,
)

from .types import (
    GroupDescription,
    GroupListing,
    MemberDescription,
    OffsetAndMetadata,
    TopicPartition,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

__all__ = ["list_groups", "describe", "delete", "fetch_offsets", "commit_offsets"]

#: The protocol type and state names the ZooKeeper groups are reported with.
ZK_PROTOCOL = "zookeeper"


def _state(zk: KazooClient, dirs: GroupDirs) -> str:
    """Stable with registered consumers, Empty otherwise."""
    return "Stable" if get_children(zk, dirs.ids_dir) else "Empty"


def list_groups(zk: KazooClient) -> list[GroupListing]:
    """Every group under /consumers."""
    return [
        GroupListing(g, ZK_PROTOCOL, _state(zk, GroupDirs(g)), "zookeeper", "zookeeper")
        for g in sorted(get_children(zk, CONSUMERS_PATH))
    ]


def _owners(zk: KazooClient, dirs: GroupDirs) -> dict[TopicPartition, str]:
    """Partition -> owning thread id (``<consumer id>-<n>``)."""
    out = {}
    for topic in get_children(zk, dirs.owners_dir):
        for p in get_children(zk, f"{dirs.owners_dir}/{topic}"):
            owner = read_data(zk, dirs.owner(topic, int(p)))
            if owner and p.isdigit():
                out[TopicPartition(topic, int(p))] = owner
    return out


def describe(zk: KazooClient, group: str) -> GroupDescription:
    """Members (registered consumer ids) and what their threads own."""
    dirs = GroupDirs(group)
    if not zk.exists(dirs.group_dir):
        raise GroupIdNotFoundError(f"group {group!r} in ZooKeeper ({dirs.group_dir})")
    owners = _owners(zk, dirs)
    members = []
    for consumer_id in sorted(get_children(zk, dirs.ids_dir)):
        owned = tuple(
            sorted(tp for tp, thread in owners.items() if thread.rpartition("-")[0] == consumer_id)
        )
        host = consumer_id.rsplit("-", 2)[0].rpartition("_")[2] if "_" in consumer_id else "-"
        members.append(MemberDescription(consumer_id, consumer_id, host, None, owned))
    return GroupDescription(
        group, _state(zk, dirs), ZK_PROTOCOL, "range", tuple(members), -1, "zookeeper"
    )


def delete(zk: KazooClient, group: str) -> None:
    """Remove an inactive group's znodes (NonEmptyGroupError while consumers are registered)."""
    dirs = GroupDirs(group)
    if not zk.exists(dirs.group_dir):
        raise GroupIdNotFoundError(f"group {group!r} in ZooKeeper ({dirs.group_dir})")
    if get_children(zk, dirs.ids_dir):
        raise NonEmptyGroupError(f"group {group!r} has registered consumers in ZooKeeper")
    try:
        zk.delete(dirs.group_dir, recursive=True)
    except (NoNodeError, NotEmptyError) as exc:
        raise NonEmptyGroupError(f"group {group!r} changed while deleting: {exc}") from exc


def fetch_offsets(
    zk: KazooClient, group: str, partitions: list[TopicPartition] | None
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The committed offsets (all, or of ``partitions``)."""
    dirs = GroupDirs(group)
    if partitions is None:
        partitions = [
            TopicPartition(t, int(p))
            for t in get_children(zk, dirs.offsets_dir)
            for p in get_children(zk, f"{dirs.offsets_dir}/{t}")
            if p.isdigit()
        ]
    out = {}
    for tp in partitions:
        data = read_data(zk, dirs.offset(tp.topic, tp.partition))
        if data and data.strip().lstrip("-").isdigit() and int(data) >= 0:
            out[tp] = OffsetAndMetadata(int(data))
    return dict(sorted(out.items()))


def commit_offsets(
    zk: KazooClient, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
) -> None:
    """Write offsets (refused while consumers are registered: they would overwrite them)."""
    dirs = GroupDirs(group)
    if get_children(zk, dirs.ids_dir):
        raise NonEmptyGroupError(f"group {group!r} has registered consumers in ZooKeeper")
    for tp, value in offsets.items():
        update_persistent(zk, dirs.offset(tp.topic, tp.partition), str(value.offset))
