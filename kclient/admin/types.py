"""The plain data classes AdminClient takes and returns, named as Kafka's Admin API names them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from kclient.structs import OffsetAndMetadata, TopicPartition

__all__ = [
    "TopicPartition",
    "NewTopic",
    "CreatedTopic",
    "TopicListing",
    "PartitionDescription",
    "TopicDescription",
    "NewPartitions",
    "ConfigResourceType",
    "ConfigResource",
    "ConfigEntry",
    "AlterConfigOpType",
    "AlterConfigOp",
    "GroupListing",
    "MemberDescription",
    "GroupDescription",
    "OffsetAndMetadata",
    "OffsetSpec",
    "ListOffsetsResult",
    "PartitionLag",
    "GroupLag",
    "OffsetReset",
    "ClusterBroker",
    "ClusterDescription",
]


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: a partition count (-1: the broker's num.partitions) or an assignment
    (partition -> broker ids), a replication factor (-1: the broker's default) and configs."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: dict[int, list[int]] | None = None
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreatedTopic:
    """A topic the broker created (or, with validate_only, would create)."""

    name: str
    num_partitions: int
    replication_factor: int


@dataclass(frozen=True)
class TopicListing:
    """One topic of list_topics."""

    name: str
    topic_id: str | None
    is_internal: bool


@dataclass(frozen=True)
class PartitionDescription:
    """A partition's leader, replicas and in-sync replicas (broker ids)."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicDescription:
    """What describe_topics reports of a topic."""

    name: str
    topic_id: str | None
    is_internal: bool
    partitions: tuple[PartitionDescription, ...]


@dataclass(frozen=True)
class NewPartitions:
    """The new total partition count of a topic, with the replicas of each new partition."""

    total_count: int
    new_assignments: list[list[int]] | None = None


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type codes."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    GROUP = 32  # a group's own configs (share groups: share.auto.offset.reset, ...)


@dataclass(frozen=True)
class ConfigResource:
    """A topic (by name), a broker (by id as a string; "" for the cluster default) or a group
    (by id)."""

    type: ConfigResourceType
    name: str


@dataclass(frozen=True)
class ConfigEntry:
    """One config value with where it came from (Kafka's ConfigSource names)."""

    name: str
    value: str | None
    source: str
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    synonyms: tuple[tuple[str, str | None, str], ...] = ()


class AlterConfigOpType(IntEnum):
    """IncrementalAlterConfigs operations."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class AlterConfigOp:
    """One change of incremental_alter_configs."""

    name: str
    value: str | None
    op: AlterConfigOpType = AlterConfigOpType.SET


@dataclass(frozen=True)
class GroupListing:
    """One group of list_groups; ``storage`` says where its offsets live (kafka, zookeeper)."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"
    storage: str = "kafka"


@dataclass(frozen=True)
class MemberDescription:
    """A group member and the partitions assigned to it."""

    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ConsumerGroupMemberDescription:
    """A member of describe_consumer_groups: a KIP-848 member carries its member epoch and
    current and target assignments (a classic member: epoch None, target as current)."""

    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartition, ...]
    target_assignment: tuple[TopicPartition, ...]
    member_epoch: int | None = None
    rack_id: str | None = None
    subscribed_topics: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    #: "consumer" (KIP-848), "classic" (a classic member of a consumer group) or None (unknown)
    member_type: str | None = None


@dataclass(frozen=True)
class ConsumerGroupDescription:
    """What describe_consumer_groups reports: a KIP-848 group's epochs and assignor beside
    the members (a classic group: ``group_type`` classic, the epochs None)."""

    group_id: str
    state: str
    group_type: str
    assignor: str
    members: tuple[ConsumerGroupMemberDescription, ...]
    coordinator: int
    group_epoch: int | None = None
    #: the epoch of the target assignment (kafka-consumer-groups' TARGET-ASSIGNMENT-EPOCH)
    assignment_epoch: int | None = None


@dataclass(frozen=True)
class GroupDescription:
    """What describe_groups reports of a group."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: int
    storage: str = "kafka"


class OffsetSpec:
    """What list_offsets looks up: EARLIEST, LATEST, or a timestamp in ms."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3

    @staticmethod
    def for_timestamp(ms: int) -> int:
        """The spec of the first offset stamped at or after ``ms``."""
        if ms < 0:
            raise ValueError(f"a timestamp spec must be >= 0, not {ms}")
        return ms


@dataclass(frozen=True)
class ListOffsetsResult:
    """An offset found by list_offsets, with its record's timestamp (-1 for earliest/latest)."""

    offset: int
    timestamp: int
    leader_epoch: int = -1


@dataclass(frozen=True)
class PartitionLag:
    """One row of ``kafka-consumer-groups --describe``: committed offset (-1: none), log end,
    lag (None when nothing is committed) and the member that owns the partition."""

    topic: str
    partition: int
    current_offset: int
    log_end_offset: int
    lag: int | None
    consumer_id: str = "-"
    host: str = "-"
    client_id: str = "-"


@dataclass(frozen=True)
class GroupLag:
    """A group's lag per partition, summed per topic and in all."""

    group_id: str
    state: str
    partitions: tuple[PartitionLag, ...]
    storage: str = "kafka"

    @property
    def total(self) -> int:
        """Lag over every partition with a committed offset."""
        return sum(p.lag for p in self.partitions if p.lag is not None)

    def by_topic(self) -> dict[str, int]:
        """Topic -> summed lag."""
        out: dict[str, int] = {}
        for p in self.partitions:
            out[p.topic] = out.get(p.topic, 0) + (p.lag or 0)
        return out


@dataclass(frozen=True)
class OffsetReset:
    """One partition of a reset plan: the committed offset before (-1: none) and after."""

    topic: str
    partition: int
    current_offset: int
    new_offset: int


@dataclass(frozen=True)
class ClusterBroker:
    """A broker of describe_cluster."""

    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class ClusterDescription:
    """The cluster id, the controller (-1 unknown) and the brokers."""

    cluster_id: str | None
    controller_id: int
    brokers: tuple[ClusterBroker, ...]
