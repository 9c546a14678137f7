"""DescribeGroups (key 15): state, protocol and members (with assignments) of classic groups."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, BYTES, INT16, INT32, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import DescribeGroupsRequest, DescribeGroupsResponse

DESCRIBE_GROUPS: Api[DescribeGroupsRequest, DescribeGroupsResponse] = Api(
    15,
    "DescribeGroups",
    "0-6",
    flexible=5,
    request=[
        F("groups", ArrayOf(STRING)),
        F("include_authorized_operations", BOOLEAN, "3+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F(
            "groups",
            [
                F("error_code", INT16),
                F("error_message", STRING, "6+", nullable="6+", default=None),
                F("group_id", STRING),
                F("group_state", STRING),
                F("protocol_type", STRING),
                F("protocol_data", STRING),
                F(
                    "members",
                    [
                        F("member_id", STRING),
                        F("group_instance_id", STRING, "4+", nullable="4+", default=None),
                        F("client_id", STRING),
                        F("client_host", STRING),
                        F("member_metadata", BYTES),
                        F("member_assignment", BYTES),
                    ],
                ),
                F("authorized_operations", INT32, "3+", default=-2147483648),
            ],
        ),
    ],
)
