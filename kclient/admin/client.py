"""AdminClient: Kafka's Admin API operations, snake_cased, returning plain data classes."""

from __future__ import annotations

from .acls import AclAdmin
from .share_groups import ShareGroupAdmin

__all__ = ["AdminClient"]


class AdminClient(ShareGroupAdmin, AclAdmin):
    """Administer a Kafka-protocol cluster: topics, partitions, configs, groups (share groups
    too), offsets, lag, records, the cluster description and ACLs.

        with AdminClient("127.0.0.1:9092") as admin:
            admin.create_topic("events", num_partitions=3)
            admin.consumer_group_lag("g1").total

    Every call raises the typed error of the broker's answer (``kclient.errors``), e.g.
    TopicAlreadyExistsError, UnknownTopicOrPartitionError, InvalidPartitionsError,
    InvalidConfigurationError, NonEmptyGroupError, GroupIdNotFoundError,
    ClusterAuthorizationFailedError, SecurityDisabledError.
    """

    def __enter__(self) -> AdminClient:
        return self
