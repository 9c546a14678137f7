"""Metadata (key 3): brokers, topics, partition leaders and replicas.

v8 adds authorized operations (the cluster's until v10, then DescribeCluster's), v10 topic
ids, v12 lookups by topic id (null names).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, NULLABLE_STRING, STRING, UUID, ArrayOf

if TYPE_CHECKING:
    from ..messages import MetadataRequest, MetadataResponse

METADATA: Api[MetadataRequest, MetadataResponse] = Api(
    3,
    "Metadata",
    "0-12",
    flexible=9,
    request=[
        F(
            "topics",
            [  # null (v1+) = all topics
                F("topic_id", UUID, "10+"),
                F("name", STRING, nullable="10+"),
            ],
            nullable="1+",
        ),
        F("allow_auto_topic_creation", BOOLEAN, "4+", default=True),
        F("include_cluster_authorized_operations", BOOLEAN, "8-10", default=False),
        F("include_topic_authorized_operations", BOOLEAN, "8+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "3+"),
        F(
            "brokers",
            [
                F("node_id", INT32),
                F("host", STRING),
                F("port", INT32),
                F("rack", NULLABLE_STRING, "1+"),
            ],
        ),
        F("cluster_id", NULLABLE_STRING, "2+"),
        F("controller_id", INT32, "1+", default=-1),
        F(
            "topics",
            [
                F("error_code", INT16),
                F("name", STRING, nullable="12+"),
                F("topic_id", UUID, "10+"),
                F("is_internal", BOOLEAN, "1+"),
                F(
                    "partitions",
                    [
                        F("error_code", INT16),
                        F("partition_index", INT32),
                        F("leader_id", INT32),
                        F("leader_epoch", INT32, "7+", default=-1),
                        F("replica_nodes", ArrayOf(INT32)),
                        F("isr_nodes", ArrayOf(INT32)),
                        F("offline_replicas", ArrayOf(INT32), "5+"),
                    ],
                ),
                F("topic_authorized_operations", INT32, "8+", default=-2147483648),
            ],
        ),
        F("cluster_authorized_operations", INT32, "8-10", default=-2147483648),
    ],
)
