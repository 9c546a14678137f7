"""The admin client: topics, configs, groups, offsets, lag, records and the cluster.

    from kclient.admin import AdminClient, NewTopic
    with AdminClient("127.0.0.1:9092") as admin:
        admin.create_topics([NewTopic("events", 3)])
"""
from .client import AdminClient
from .groups import RESET_STRATEGIES
from .types import (
    AlterConfigOp,
    AlterConfigOpType,
    ClusterBroker,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    CreatedTopic,
    GroupDescription,
    GroupLag,
    GroupListing,
    ListOffsetsResult,
    MemberDescription,
    NewPartitions,
    NewTopic,
    OffsetAndMetadata,
    OffsetReset,
    OffsetSpec,
    PartitionDescription,
    PartitionLag,
    TopicDescription,
    TopicListing,
    TopicPartition,
)

__all__ = [
    "AdminClient", "RESET_STRATEGIES", "AlterConfigOp", "AlterConfigOpType", "ClusterBroker",
    "ClusterDescription", "ConfigEntry", "ConfigResource", "ConfigResourceType", "CreatedTopic",
    "GroupDescription", "GroupLag", "GroupListing", "ListOffsetsResult", "MemberDescription",
    "NewPartitions", "NewTopic", "OffsetAndMetadata", "OffsetReset", "OffsetSpec",
    "PartitionDescription", "PartitionLag", "TopicDescription", "TopicListing", "TopicPartition",
]
