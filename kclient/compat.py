"""Shapes kafka-python and confluent-kafka users expect, shared by kclient's clients.

``list_topics()`` of the producer and the consumer answers a :class:`ClusterMetadata`
(confluent-kafka's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kclient.cluster import BrokerInfo, Cluster, TopicInfo

__all__ = ["ClusterMetadata", "cluster_metadata"]

#: Kafka's UNKNOWN_TOPIC_OR_PARTITION, the error code of a topic list_topics() did not find
_UNKNOWN_TOPIC = 3


@dataclass
class ClusterMetadata:
    """What ``list_topics()`` answers (confluent-kafka's ClusterMetadata): brokers by id and
    topics by name, each with ``partitions`` by id (``leader``, ``replicas``, ``isr``)."""

    cluster_id: str | None
    controller_id: int
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)


def cluster_metadata(cluster: Cluster, topic: str | None = None) -> ClusterMetadata:
    """Metadata of every topic (or of ``topic``), asked of the cluster now; never creates a
    topic (a missing one is listed with error code 3, UNKNOWN_TOPIC_OR_PARTITION)."""
    cluster.refresh(None if topic is None else [topic], allow_auto_create=False)
    topics = (
        dict(cluster.topics)
        if topic is None
        else {topic: cluster.topics.get(topic) or TopicInfo(topic, _UNKNOWN_TOPIC)}
    )
    return ClusterMetadata(cluster.cluster_id, cluster.controller_id, dict(cluster.brokers), topics)
