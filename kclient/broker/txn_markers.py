"""Writing a transaction's markers, for the coordinator of one broker or of a MiniCluster.

Kafka's coordinator sends WriteTxnMarkers to each partition's leader; the brokers of a
MiniCluster share one process, so the leader's log is written directly: the marker goes into
the partition log of its live leader (waking its parked fetches), and for the group offsets
partition (``__consumer_offsets``) every live broker's offset manager ends the producer's
pending TxnOffsetCommit offsets.  A partition whose leader is down cannot take its marker yet.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from .cluster import ClusterView
from .txn_log import java_hash

__all__ = ["MarkerWriter", "OFFSETS_TOPIC", "offsets_partition"]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
TopicPartition = tuple[str, int]


def offsets_partition(group_id: str, partitions: int) -> TopicPartition:
    """The ``__consumer_offsets`` partition of a group (Kafka's partitionFor)."""
    return OFFSETS_TOPIC, (java_hash(group_id) & 0x7FFFFFFF) % partitions


class MarkerWriter:
    """Writes markers into the logs of a cluster's live leaders (callable, see
    :data:`~.txn_coordinator.MarkerWriter`)."""

    def __init__(self, cluster: ClusterView) -> None:
        self.cluster = cluster

    def __call__(
        self, producer_id: int, epoch: int, commit: bool, partitions: Iterable[TopicPartition]
    ) -> set[TopicPartition]:
        """Write the markers; the partitions that could not be written."""
        failed = set()
        for tp in partitions:
            try:
                if not self._write(producer_id, epoch, commit, tp):
                    failed.add(tp)
            except (OSError, ValueError) as exc:
                log.warning("marker for %s-%d not written: %s", tp[0], tp[1], exc)
                failed.add(tp)
        return failed

    def _write(self, producer_id: int, epoch: int, commit: bool, tp: TopicPartition) -> bool:
        """One partition's marker; False when its leader is down."""
        topic, partition = tp
        if topic == OFFSETS_TOPIC:
            for broker in self.cluster.live_brokers():
                coordinator: Any = getattr(broker, "coordinator", None)
                if coordinator is not None:
                    coordinator.offsets.end_txn(producer_id, epoch, commit)
            return True
        leader = self.cluster.leader(topic, partition)
        if leader is None:
            return True  # the topic is gone: nothing to end
        owner: Any = self.cluster.live.get(leader)
        if owner is None:
            return False
        log_ = owner.log_manager.get_log(topic, partition)
        if log_ is None:
            return True
        if log_.config.message_format_version < 2:
            return True  # no transactional batches in old formats
        log_.append_marker(
            producer_id, epoch, commit, leader_epoch=self.cluster.leader_epoch(topic, partition)
        )
        owner.notify_append(topic, partition, 1)
        return True
