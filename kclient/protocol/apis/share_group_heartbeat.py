"""ShareGroupHeartbeat (key 76, KIP-932): a share-group member joins, stays and leaves; the
coordinator answers with its epoch and the partitions assigned to it (by topic id)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api, One
from ..schema import Field as F
from ..types import INT16, INT32, STRING, UUID, ArrayOf

if TYPE_CHECKING:
    from ..messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse

SHARE_GROUP_HEARTBEAT: Api[ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse] = Api(
    76,
    "ShareGroupHeartbeat",
    "1",
    flexible=0,
    request=[
        F("group_id", STRING),
        F("member_id", STRING),
        F("member_epoch", INT32),
        F("rack_id", STRING, nullable="0+", default=None),
        F("subscribed_topic_names", ArrayOf(STRING), nullable="0+", default=None),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("member_id", STRING, nullable="0+", default=None),
        F("member_epoch", INT32),
        F("heartbeat_interval_ms", INT32),
        F(
            "assignment",
            One(
                [
                    F(
                        "topic_partitions",
                        [
                            F("topic_id", UUID),
                            F("partitions", ArrayOf(INT32)),
                        ],
                    ),
                ]
            ),
            nullable="0+",
            default=None,
        ),
    ],
)
