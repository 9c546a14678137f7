"""OffsetCommit (key 8): store consumed positions for a group in the coordinator.

v9 (KIP-848) is v8's layout: a consumer-protocol member sends its member epoch in
``generation_id_or_member_epoch`` and may be answered STALE_MEMBER_EPOCH."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, INT64, STRING

if TYPE_CHECKING:
    from ..messages import OffsetCommitRequest, OffsetCommitResponse

OFFSET_COMMIT: Api[OffsetCommitRequest, OffsetCommitResponse] = Api(
    8,
    "OffsetCommit",
    "0-9",
    flexible=8,
    request=[
        F("group_id", STRING),
        F("generation_id_or_member_epoch", INT32, "1+", default=-1),
        F("member_id", STRING, "1+", default=""),
        F("group_instance_id", STRING, "7+", nullable="7+", default=None),
        F("retention_time_ms", INT64, "2-4", default=-1),
        F(
            "topics",
            [
                F("name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("committed_offset", INT64),
                        F("committed_leader_epoch", INT32, "6+", default=-1),
                        F("commit_timestamp", INT64, "1", default=-1),
                        F("committed_metadata", STRING, nullable="0+", default=""),
                    ],
                ),
            ],
        ),
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
                        F("error_code", INT16),
                    ],
                ),
            ],
        ),
    ],
)
