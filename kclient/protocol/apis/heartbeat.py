"""Heartbeat (key 12): a member tells the coordinator it is alive; errors signal a rebalance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import HeartbeatRequest, HeartbeatResponse

HEARTBEAT: Api[HeartbeatRequest, HeartbeatResponse] = Api(
    12,
    "Heartbeat",
    "0-4",
    flexible=4,
    request=[
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, "3+", nullable="3+", default=None),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
    ],
)
