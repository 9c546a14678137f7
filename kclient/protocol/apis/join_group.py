"""JoinGroup (key 11): enter a group's rebalance; the coordinator picks a leader and protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BYTES, INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import JoinGroupRequest, JoinGroupResponse

JOIN_GROUP: Api[JoinGroupRequest, JoinGroupResponse] = Api(
    11,
    "JoinGroup",
    "0-7",
    flexible=6,
    request=[
        F("group_id", STRING),
        F("session_timeout_ms", INT32),
        F("rebalance_timeout_ms", INT32, "1+", default=-1),
        F("member_id", STRING, default=""),
        F("group_instance_id", STRING, "5+", nullable="5+", default=None),
        F("protocol_type", STRING),
        F(
            "protocols",
            [
                F("name", STRING),
                F("metadata", BYTES),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32, "2+"),
        F("error_code", INT16),
        F("generation_id", INT32, default=-1),
        F("protocol_type", STRING, "7+", nullable="7+", default=None),
        F("protocol_name", STRING, nullable="7+", default=""),
        F("leader", STRING, default=""),
        F("member_id", STRING, default=""),
        F(
            "members",
            [
                F("member_id", STRING),
                F("group_instance_id", STRING, "5+", nullable="5+", default=None),
                F("metadata", BYTES),
            ],
        ),
    ],
)
