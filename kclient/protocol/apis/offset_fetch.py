"""OffsetFetch (key 9): read a group's committed positions.

v0-v7 only (single group per request); v8+ batches several groups.
v0 reads offsets stored in ZooKeeper, v1+ those stored in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, INT64, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import OffsetFetchRequest, OffsetFetchResponse

OFFSET_FETCH: Api[OffsetFetchRequest, OffsetFetchResponse] = Api(
    9,
    "OffsetFetch",
    "0-7",
    flexible=6,
    request=[
        F("group_id", STRING),
        # null (v2+) asks for the offsets of every topic the group has committed
        F(
            "topics",
            [
                F("name", STRING),
                F("partition_indexes", ArrayOf(INT32)),
            ],
            nullable="2+",
        ),
        F("require_stable", BOOLEAN, "7+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "3+"),
        F(
            "topics",
            [
                F("name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("committed_offset", INT64),
                        F("committed_leader_epoch", INT32, "5+", default=-1),
                        F("metadata", STRING, nullable="0+", default=""),
                        F("error_code", INT16),
                    ],
                ),
            ],
        ),
        F("error_code", INT16, "2+", default=0),
    ],
)
