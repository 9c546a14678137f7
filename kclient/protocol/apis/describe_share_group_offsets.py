"""DescribeShareGroupOffsets (key 90, KIP-932): each partition's share-partition start offset
in share groups (v1: and its lag)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, INT64, STRING, UUID, ArrayOf

if TYPE_CHECKING:
    from ..messages import DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse

DESCRIBE_SHARE_GROUP_OFFSETS: Api[
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse
] = Api(
    90,
    "DescribeShareGroupOffsets",
    "0-1",
    flexible=0,
    request=[
        F(
            "groups",
            [
                F("group_id", STRING),
                F(
                    "topics",
                    [
                        F("topic_name", STRING),
                        F("partitions", ArrayOf(INT32)),
                    ],
                    nullable="0+",
                    default=None,
                ),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "groups",
            [
                F("group_id", STRING),
                F(
                    "topics",
                    [
                        F("topic_name", STRING),
                        F("topic_id", UUID),
                        F(
                            "partitions",
                            [
                                F("partition_index", INT32),
                                F("start_offset", INT64),
                                F("leader_epoch", INT32),
                                F("lag", INT64, "1+", default=-1),
                                F("error_code", INT16),
                                F("error_message", STRING, nullable="0+", default=None),
                            ],
                        ),
                    ],
                ),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
            ],
        ),
    ],
)
