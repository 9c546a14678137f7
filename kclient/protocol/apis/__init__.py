"""The Kafka APIs kclient speaks, one declarative module each, and a registry by API key."""

from __future__ import annotations

from typing import Any

from ..schema import Api
from .add_offsets_to_txn import ADD_OFFSETS_TO_TXN
from .add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from .alter_configs import ALTER_CONFIGS
from .alter_share_group_offsets import ALTER_SHARE_GROUP_OFFSETS
from .api_versions import API_VERSIONS
from .consumer_group_describe import CONSUMER_GROUP_DESCRIBE
from .consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from .create_acls import CREATE_ACLS
from .create_partitions import CREATE_PARTITIONS
from .create_topics import CREATE_TOPICS
from .delete_acls import DELETE_ACLS
from .delete_groups import DELETE_GROUPS
from .delete_records import DELETE_RECORDS
from .delete_share_group_offsets import DELETE_SHARE_GROUP_OFFSETS
from .delete_topics import DELETE_TOPICS
from .describe_acls import DESCRIBE_ACLS
from .describe_cluster import DESCRIBE_CLUSTER
from .describe_configs import DESCRIBE_CONFIGS
from .describe_groups import DESCRIBE_GROUPS
from .describe_share_group_offsets import DESCRIBE_SHARE_GROUP_OFFSETS
from .end_txn import END_TXN
from .fetch import FETCH
from .find_coordinator import FIND_COORDINATOR
from .heartbeat import HEARTBEAT
from .incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from .init_producer_id import INIT_PRODUCER_ID
from .join_group import JOIN_GROUP
from .leave_group import LEAVE_GROUP
from .list_groups import LIST_GROUPS
from .list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, LIST_OFFSETS
from .metadata import METADATA
from .offset_commit import OFFSET_COMMIT
from .offset_delete import OFFSET_DELETE
from .offset_fetch import OFFSET_FETCH
from .produce import PRODUCE
from .sasl_authenticate import SASL_AUTHENTICATE
from .sasl_handshake import SASL_HANDSHAKE
from .share_acknowledge import SHARE_ACKNOWLEDGE
from .share_fetch import SHARE_FETCH
from .share_group_describe import SHARE_GROUP_DESCRIBE
from .share_group_heartbeat import SHARE_GROUP_HEARTBEAT
from .sync_group import SYNC_GROUP
from .txn_offset_commit import TXN_OFFSET_COMMIT
from .write_txn_markers import WRITE_TXN_MARKERS

ALL_APIS: tuple[Api[Any, Any], ...] = (
    PRODUCE,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    SYNC_GROUP,
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    INIT_PRODUCER_ID,
    DESCRIBE_CONFIGS,
    DESCRIBE_CLUSTER,
    OFFSET_DELETE,
    DELETE_RECORDS,
    CREATE_PARTITIONS,
    ALTER_CONFIGS,
    DELETE_GROUPS,
    INCREMENTAL_ALTER_CONFIGS,
    SASL_HANDSHAKE,
    SASL_AUTHENTICATE,
    ADD_PARTITIONS_TO_TXN,
    ADD_OFFSETS_TO_TXN,
    END_TXN,
    WRITE_TXN_MARKERS,
    TXN_OFFSET_COMMIT,
    DESCRIBE_ACLS,
    CREATE_ACLS,
    DELETE_ACLS,
    CONSUMER_GROUP_HEARTBEAT,
    CONSUMER_GROUP_DESCRIBE,
    SHARE_GROUP_HEARTBEAT,
    SHARE_GROUP_DESCRIBE,
    SHARE_FETCH,
    SHARE_ACKNOWLEDGE,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
)
APIS: dict[int, Api[Any, Any]] = {api.key: api for api in ALL_APIS}
APIS_BY_NAME: dict[str, Api[Any, Any]] = {api.name: api for api in ALL_APIS}

__all__ = [
    "Api",
    "ALL_APIS",
    "APIS",
    "APIS_BY_NAME",
    "API_VERSIONS",
    "CREATE_TOPICS",
    "DELETE_TOPICS",
    "FETCH",
    "FIND_COORDINATOR",
    "HEARTBEAT",
    "INIT_PRODUCER_ID",
    "DESCRIBE_GROUPS",
    "LIST_GROUPS",
    "DESCRIBE_CLUSTER",
    "DESCRIBE_CONFIGS",
    "OFFSET_DELETE",
    "JOIN_GROUP",
    "LEAVE_GROUP",
    "LIST_OFFSETS",
    "METADATA",
    "OFFSET_COMMIT",
    "OFFSET_FETCH",
    "PRODUCE",
    "SYNC_GROUP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "DELETE_RECORDS",
    "CREATE_PARTITIONS",
    "ALTER_CONFIGS",
    "DELETE_GROUPS",
    "INCREMENTAL_ALTER_CONFIGS",
    "SASL_HANDSHAKE",
    "SASL_AUTHENTICATE",
    "ADD_PARTITIONS_TO_TXN",
    "ADD_OFFSETS_TO_TXN",
    "END_TXN",
    "WRITE_TXN_MARKERS",
    "TXN_OFFSET_COMMIT",
    "DESCRIBE_ACLS",
    "CREATE_ACLS",
    "DELETE_ACLS",
    "CONSUMER_GROUP_HEARTBEAT",
    "CONSUMER_GROUP_DESCRIBE",
    "SHARE_GROUP_HEARTBEAT",
    "SHARE_GROUP_DESCRIBE",
    "SHARE_FETCH",
    "SHARE_ACKNOWLEDGE",
    "DESCRIBE_SHARE_GROUP_OFFSETS",
    "ALTER_SHARE_GROUP_OFFSETS",
    "DELETE_SHARE_GROUP_OFFSETS",
]
