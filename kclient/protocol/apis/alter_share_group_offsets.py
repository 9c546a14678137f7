"""AlterShareGroupOffsets (key 91, KIP-932): set the start offset of a share group's partitions
(the group must be empty)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, INT64, STRING, UUID

if TYPE_CHECKING:
    from ..messages import AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse

ALTER_SHARE_GROUP_OFFSETS: Api[AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse] = Api(
    91,
    "AlterShareGroupOffsets",
    "0",
    flexible=0,
    request=[
        F("group_id", STRING),
        F(
            "topics",
            [
                F("topic_name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("start_offset", INT64),
                    ],
                ),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F(
            "responses",
            [
                F("topic_name", STRING),
                F("topic_id", UUID),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("error_code", INT16),
                        F("error_message", STRING, nullable="0+", default=None),
                    ],
                ),
            ],
        ),
    ],
)
