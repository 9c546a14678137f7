"""ConsumerGroupHeartbeat (key 68): a KIP-848 member joins, heartbeats, acks and leaves in one API.

The member sends its epoch (0 joins, -1 leaves, -2 a static member leaving to come back); fields
left null did not change since the last heartbeat. v1 adds the broker-side regex subscription
and requires the member to generate its own member id (KIP-1082).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api, One
from ..schema import Field as F
from ..types import INT16, INT32, STRING, UUID, ArrayOf

if TYPE_CHECKING:
    from ..messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

#: The member epoch that leaves the group, and the one a static member leaves with to return.
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


def _topic_partitions() -> list[F]:
    return [F("topic_id", UUID), F("partitions", ArrayOf(INT32))]


CONSUMER_GROUP_HEARTBEAT: Api[ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse] = Api(
    68,
    "ConsumerGroupHeartbeat",
    "0-1",
    flexible=0,
    request=[
        F("group_id", STRING),
        F("member_id", STRING),
        F("member_epoch", INT32),
        F("instance_id", STRING, nullable="0+", default=None),
        F("rack_id", STRING, nullable="0+", default=None),
        F("rebalance_timeout_ms", INT32, default=-1),
        F("subscribed_topic_names", ArrayOf(STRING), nullable="0+", default=None),
        F("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
        F("server_assignor", STRING, nullable="0+", default=None),
        F("topic_partitions", _topic_partitions(), nullable="0+", default=None),
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
            One([F("topic_partitions", _topic_partitions())]),
            nullable="0+",
            default=None,
        ),
    ],
)
