"""DeleteGroups (key 42): delete empty consumer groups with their committed offsets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import DeleteGroupsRequest, DeleteGroupsResponse

DELETE_GROUPS: Api[DeleteGroupsRequest, DeleteGroupsResponse] = Api(
    42,
    "DeleteGroups",
    "0-2",
    flexible=2,
    request=[
        F("groups_names", ArrayOf(STRING)),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "results",
            [
                F("group_id", STRING),
                F("error_code", INT16),
            ],
        ),
    ],
)
