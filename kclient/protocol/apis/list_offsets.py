"""ListOffsets (key 2): offsets by timestamp; v0 returns up to N offsets before a time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT8, INT16, INT32, INT64, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import ListOffsetsRequest, ListOffsetsResponse

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2

LIST_OFFSETS: Api[ListOffsetsRequest, ListOffsetsResponse] = Api(
    2,
    "ListOffsets",
    "0-5",
    flexible=6,
    request=[
        F("replica_id", INT32, default=-1),
        F("isolation_level", INT8, "2+"),
        F(
            "topics",
            [
                F("name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("current_leader_epoch", INT32, "4+", default=-1),
                        F("timestamp", INT64),
                        F("max_num_offsets", INT32, "0", default=1),
                    ],
                ),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32, "2+"),
        F(
            "topics",
            [
                F("name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("error_code", INT16),
                        F("old_style_offsets", ArrayOf(INT64), "0"),
                        F("timestamp", INT64, "1+", default=-1),
                        F("offset", INT64, "1+", default=-1),
                        F("leader_epoch", INT32, "4+", default=-1),
                    ],
                ),
            ],
        ),
    ],
)
