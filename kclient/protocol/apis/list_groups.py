"""ListGroups (key 16): the groups a broker coordinates, filtered by state (v4+) and type (v5+)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import ListGroupsRequest, ListGroupsResponse

LIST_GROUPS: Api[ListGroupsRequest, ListGroupsResponse] = Api(
    16,
    "ListGroups",
    "0-5",
    flexible=3,
    request=[
        F("states_filter", ArrayOf(STRING), "4+"),
        F("types_filter", ArrayOf(STRING), "5+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F(
            "groups",
            [
                F("group_id", STRING),
                F("protocol_type", STRING),
                F("group_state", STRING, "4+", default=""),
                F("group_type", STRING, "5+", default=""),
            ],
        ),
    ],
)
