"""TxnOffsetCommit (key 28): stage a group's offsets in a transaction; visible only on commit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, INT64, STRING

if TYPE_CHECKING:
    from ..messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse

TXN_OFFSET_COMMIT: Api[TxnOffsetCommitRequest, TxnOffsetCommitResponse] = Api(
    28,
    "TxnOffsetCommit",
    "0-5",
    flexible=3,
    request=[
        F("transactional_id", STRING),
        F("group_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("generation_id", INT32, "3+", default=-1),
        F("member_id", STRING, "3+", default=""),
        F("group_instance_id", STRING, "3+", nullable="3+", default=None),
        F(
            "topics",
            [
                F("name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("committed_offset", INT64),
                        F("committed_leader_epoch", INT32, "2+", default=-1),
                        F("committed_metadata", STRING, nullable="0+", default=""),
                    ],
                ),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32),
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
