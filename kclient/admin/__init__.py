"""The admin client: topics, configs, groups, offsets, lag, records, the cluster and ACLs.

from kclient.admin import AdminClient, NewTopic
with AdminClient("127.0.0.1:9092") as admin:
    admin.create_topics([NewTopic("events", 3)])
"""

from kclient.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

from .client import AdminClient
from .groups import RESET_STRATEGIES
from .share_groups import (
    SHARE_RESET_STRATEGIES,
    ShareGroupDescription,
    ShareMemberDescription,
    SharePartitionOffset,
)
from .types import (
    AlterConfigOp,
    AlterConfigOpType,
    ClusterBroker,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConsumerGroupDescription,
    ConsumerGroupMemberDescription,
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
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "AdminClient",
    "RESET_STRATEGIES",
    "AlterConfigOp",
    "AlterConfigOpType",
    "ClusterBroker",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "CreatedTopic",
    "ConsumerGroupDescription",
    "ConsumerGroupMemberDescription",
    "GroupDescription",
    "GroupLag",
    "GroupListing",
    "ListOffsetsResult",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetReset",
    "OffsetSpec",
    "PartitionDescription",
    "PartitionLag",
    "TopicDescription",
    "TopicListing",
    "TopicPartition",
    "SHARE_RESET_STRATEGIES",
    "ShareGroupDescription",
    "ShareMemberDescription",
    "SharePartitionOffset",
]
