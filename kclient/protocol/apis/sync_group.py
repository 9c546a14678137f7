"""SyncGroup (key 14): the leader hands out assignments; every member receives its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BYTES, INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import SyncGroupRequest, SyncGroupResponse

SYNC_GROUP: Api[SyncGroupRequest, SyncGroupResponse] = Api(
    14,
    "SyncGroup",
    "0-5",
    flexible=4,
    request=[
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, "3+", nullable="3+", default=None),
        F("protocol_type", STRING, "5+", nullable="5+", default=None),
        F("protocol_name", STRING, "5+", nullable="5+", default=None),
        F(
            "assignments",
            [
                F("member_id", STRING),
                F("assignment", BYTES),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F("protocol_type", STRING, "5+", nullable="5+", default=None),
        F("protocol_name", STRING, "5+", nullable="5+", default=None),
        F("assignment", BYTES),
    ],
)
