"""Cluster metadata, written once for both drivers: what a Metadata request asks at each version,
what its answer means (brokers, topics, partition leaders), and the ListOffsets body and answers
that the clusters and consumers build on it.

:class:`ClusterState` is the plain state both clusters (:class:`kclient.cluster.Cluster`,
:class:`kclient.aio.cluster.AIOCluster`) are: the known brokers and topics, updated by
:meth:`ClusterState.apply` from the answer of the :func:`refresh_metadata` conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kclient.errors import LeaderNotAvailableError, UnknownTopicOrPartitionError, error_for_code
from kclient.protocol.apis import METADATA
from kclient.structs import TopicPartition

from .steps import ANY_NODE, Conversation, Request

if TYPE_CHECKING:
    from kclient.protocol.messages import MetadataResponse

__all__ = [
    "BrokerInfo",
    "PartitionInfo",
    "TopicInfo",
    "ClusterState",
    "metadata_body",
    "refresh_metadata",
    "topics_from_metadata",
    "list_offsets_body",
    "list_offsets_answers",
]


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    error_code: int = 0


@dataclass
class TopicInfo:
    name: str
    error_code: int = 0
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    is_internal: bool = False


def metadata_body(names: list[str] | None, allow_auto_create: bool, version: int) -> dict[str, Any]:
    """A Metadata request for ``names`` (None: every topic; v0 says that with an empty list)."""
    topics: Any
    if names is None:
        topics = [] if version == 0 else None
    else:
        topics = [{"name": n} for n in names]
    return {"topics": topics, "allow_auto_topic_creation": allow_auto_create}


def refresh_metadata(
    topics: Iterable[str] | None = None, allow_auto_create: bool = True
) -> Conversation[MetadataResponse]:
    """Ask any broker for the metadata of ``topics`` (None: all topics)."""
    names = None if topics is None else sorted(set(topics))
    resp: MetadataResponse = yield Request(
        METADATA, lambda version: metadata_body(names, allow_auto_create, version), node=ANY_NODE
    )
    return resp


def topics_from_metadata(
    resp: MetadataResponse, known: Mapping[str, TopicInfo] | None
) -> dict[str, TopicInfo]:
    """The topics a Metadata answer describes, over ``known`` (None: the answer is complete)."""
    topics = dict(known or {})
    for t in resp.topics:
        if t.name is None:  # only a lookup by topic id (v12) answers without one
            continue
        info = TopicInfo(t.name, t.error_code, is_internal=t.is_internal)
        for p in t.partitions:
            info.partitions[p.partition_index] = PartitionInfo(
                t.name,
                p.partition_index,
                p.leader_id,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                p.error_code,
            )
        topics[t.name] = info
    return topics


class ClusterState:
    """Known brokers and topics, as the last Metadata answers said."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self.last_refresh = 0.0

    def apply(self, resp: MetadataResponse, full: bool, now: float) -> None:
        """Take a Metadata answer (``full``: it names every topic) received at ``now``."""
        self.brokers = {
            b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in resp.brokers
        }
        self.controller_id = resp.controller_id
        self.cluster_id = resp.cluster_id
        self.topics = topics_from_metadata(resp, None if full else self.topics)
        self.last_refresh = now

    def leader(self, topic: str, partition: int) -> int | None:
        """The leader's node id from what is known (None: unknown, or no live leader)."""
        info = self.topics.get(topic)
        part = info.partitions.get(partition) if info is not None else None
        if part is None or part.leader < 0 or part.leader not in self.brokers:
            return None
        return part.leader

    def no_leader(self, topic: str, partition: int) -> Exception:
        """Why ``topic``/``partition`` has no leader: unknown partition, or none elected."""
        info = self.topics.get(topic)
        part = info.partitions.get(partition) if info is not None else None
        if part is None:
            return UnknownTopicOrPartitionError(f"{topic}/{partition}")
        return LeaderNotAvailableError(
            f"{topic}/{partition} has no leader (leader id {part.leader})"
        )

    def partition_ids(self, topic: str) -> list[int]:
        """The partition ids of ``topic``; raises the topic's error (unknown: UNKNOWN_TOPIC)."""
        info = self.topics.get(topic)
        if info is None or info.error_code or not info.partitions:
            code = info.error_code if info is not None else 0
            raise error_for_code(code or UnknownTopicOrPartitionError.errno)(f"topic {topic!r}")
        return sorted(info.partitions)


def list_offsets_body(
    query: Mapping[TopicPartition, int], isolation_level: int = 0
) -> dict[str, Any]:
    """A ListOffsets request body asking for ``{tp: timestamp}`` (-2 earliest, -1 latest)."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, timestamp in query.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "timestamp": timestamp, "max_num_offsets": 1}
        )
    return {
        "replica_id": -1,
        "isolation_level": isolation_level,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }


def list_offsets_answers(resp: Any, version: int) -> Iterator[tuple[TopicPartition, int, int, int]]:
    """``(tp, error code, offset, timestamp)`` per partition of a ListOffsets answer (v0: its
    first old-style offset, timestamp -1)."""
    for t in resp.topics:
        for p in t.partitions:
            if version == 0:
                offset = p.old_style_offsets[0] if p.old_style_offsets else -1
                yield TopicPartition(t.name, p.partition_index), p.error_code, offset, -1
            else:
                yield TopicPartition(t.name, p.partition_index), p.error_code, p.offset, p.timestamp
