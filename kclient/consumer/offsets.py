"""Where a group's consumed offsets live: ZooKeeper, Kafka (the group coordinator), or both.

* ``ZkOffsetStore``: ``/consumers/[group]/offsets/[topic]/[partition]``, persistent, the offset as
  a decimal string; only offsets that changed since the last commit are written (Kafka's
  ``checkpointedZkOffsets``).
* ``KafkaOffsetStore``: OffsetCommit / OffsetFetch (v1+) at the coordinator found with
  FindCoordinator; retried ``offsets.commit.max.retries`` times, rediscovering the coordinator
  when it moved (the conversations of :mod:`kclient.core.offsets`, run on this thread).
* ``DualOffsetStore`` (``dual.commit.enabled``): commits go to Kafka and then to ZooKeeper, and a
  fetch takes the larger of the two, which is how Kafka migrated groups from ZooKeeper to Kafka.

Every store maps ``(topic, partition)`` to the next offset to consume; -1 means none committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kclient.cluster import Cluster
from kclient.connection import ConnectionSettings
from kclient.core.offsets import commit_offsets, fetch_offsets
from kclient.errors import KafkaError
from kclient.io.coordinator import Coordinator
from kclient.zkutils import GroupDirs, read_data, update_persistent, zk_errors

if TYPE_CHECKING:
    from kazoo.client import KazooClient

__all__ = [
    "OffsetStore",
    "ZkOffsetStore",
    "KafkaOffsetStore",
    "DualOffsetStore",
    "Coordinator",
    "make_offset_store",
]

log = logging.getLogger(__name__)

TP = tuple[str, int]  # (topic, partition)


class OffsetStore:
    """Interface: ``fetch([(t, p)]) -> {(t, p): offset}`` and ``commit({(t, p): offset})``."""

    def fetch(self, tps: Iterable[TP]) -> dict[TP, int]:
        raise NotImplementedError

    def commit(self, offsets: Mapping[TP, int]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class ZkOffsetStore(OffsetStore):
    """Offsets in ZooKeeper, Kafka 0.8's layout.  A lost connection or an expired session
    raises :class:`ZooKeeperError` naming ``connect`` (kazoo's error chained), not kazoo's own."""

    def __init__(self, zk: KazooClient, group: str, connect: str = "") -> None:
        self.zk, self.dirs, self.group = zk, GroupDirs(group), group
        self.connect = connect or str(getattr(zk, "hosts", "")) or "ZooKeeper"
        self._checkpointed: dict[TP, int] = {}

    def fetch(self, tps: Iterable[TP]) -> dict[TP, int]:
        out: dict[TP, int] = {}
        with zk_errors(self.connect, f"fetching offsets of group {self.group}"):
            for t, p in tps:
                data = read_data(self.zk, self.dirs.offset(t, p))
                out[(t, p)] = int(data) if data and data.strip().lstrip("-").isdigit() else -1
                if out[(t, p)] >= 0:
                    self._checkpointed[(t, p)] = out[(t, p)]
        return out

    def commit(self, offsets: Mapping[TP, int]) -> None:
        with zk_errors(self.connect, f"committing offsets of group {self.group}"):
            for (t, p), off in offsets.items():
                if off < 0 or self._checkpointed.get((t, p)) == off:
                    continue
                update_persistent(self.zk, self.dirs.offset(t, p), str(off))
                self._checkpointed[(t, p)] = off


class KafkaOffsetStore(OffsetStore):
    """Offsets committed to the group coordinator (the core's OffsetCommit / OffsetFetch)."""

    def __init__(
        self,
        coordinator: Coordinator,
        group: str,
        generation: Callable[[], tuple[int, str]] = lambda: (-1, ""),
        retries: int = 5,
        backoff_ms: int = 1000,
    ) -> None:
        self.coordinator, self.group = coordinator, group
        self.generation = generation
        self.retries, self.backoff = retries, backoff_ms / 1000.0
        #: a static member's group.instance.id, sent with commits (OffsetCommit v7+)
        self.group_instance_id: str | None = None
        #: a KIP-848 member's (epoch, member id), sent with fetches (OffsetFetch v9)
        self.fetching_member: Callable[[], tuple[int, str]] | None = None

    def fetch(self, tps: Iterable[TP]) -> dict[TP, int]:
        return self.coordinator.run(
            fetch_offsets(self.coordinator.state, self.group, tps, self.fetching_member)
        )

    def commit(self, offsets: Mapping[TP, int]) -> None:
        self.coordinator.run(
            commit_offsets(
                self.coordinator.state,
                self.group,
                offsets,
                self.generation,
                self.group_instance_id,
                self.retries,
                self.backoff,
            )
        )


class DualOffsetStore(OffsetStore):
    """Kafka first, then ZooKeeper; fetch returns the larger offset of the two."""

    def __init__(self, kafka: KafkaOffsetStore, zk: ZkOffsetStore) -> None:
        self.kafka, self.zk = kafka, zk

    def fetch(self, tps: Iterable[TP]) -> dict[TP, int]:
        tps = list(tps)
        k, z = self.kafka.fetch(tps), self.zk.fetch(tps)
        return {tp: max(k.get(tp, -1), z.get(tp, -1)) for tp in tps}

    def commit(self, offsets: Mapping[TP, int]) -> None:
        self.kafka.commit(offsets)
        self.zk.commit(offsets)


def make_offset_store(
    config: Mapping[str, Any],
    group: str,
    zk: KazooClient | None = None,
    cluster: Cluster | None = None,
    generation: Callable[[], tuple[int, str]] = lambda: (-1, ""),
    settings: ConnectionSettings | None = None,
) -> OffsetStore:
    """The store ``offsets.storage`` / ``dual.commit.enabled`` ask for."""
    if config["offsets.storage"] == "zookeeper":
        if zk is None:
            raise KafkaError("offsets.storage=zookeeper needs zookeeper.connect")
        return ZkOffsetStore(zk, group, config.get("zookeeper.connect") or "")
    if cluster is None:
        raise KafkaError("offsets.storage=kafka needs brokers")
    coord = Coordinator(
        cluster,
        group,
        config["offsets.channel.backoff.ms"],
        config["offsets.commit.max.retries"],
        settings,
    )
    kafka = KafkaOffsetStore(
        coord,
        group,
        generation,
        config["offsets.commit.max.retries"],
        config["offsets.channel.backoff.ms"],
    )
    if config["dual.commit.enabled"] and zk is not None:
        return DualOffsetStore(
            kafka, ZkOffsetStore(zk, group, config.get("zookeeper.connect") or "")
        )
    return kafka
