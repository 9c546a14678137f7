"""LeaveGroup (key 13): members leave a group (one member in v0-v2, a batch in v3+)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import LeaveGroupRequest, LeaveGroupResponse

LEAVE_GROUP: Api[LeaveGroupRequest, LeaveGroupResponse] = Api(
    13,
    "LeaveGroup",
    "0-4",
    flexible=4,
    request=[
        F("group_id", STRING),
        F("member_id", STRING, "0-2", default=""),
        F(
            "members",
            [
                F("member_id", STRING),
                F("group_instance_id", STRING, "3+", nullable="3+", default=None),
            ],
            "3+",
        ),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F(
            "members",
            [
                F("member_id", STRING),
                F("group_instance_id", STRING, "3+", nullable="3+", default=None),
                F("error_code", INT16),
            ],
            "3+",
        ),
    ],
)
