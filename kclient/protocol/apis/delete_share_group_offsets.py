"""DeleteShareGroupOffsets (key 92, KIP-932): forget a share group's state for whole topics
(the group must be empty)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING, UUID

if TYPE_CHECKING:
    from ..messages import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse

DELETE_SHARE_GROUP_OFFSETS: Api[DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse] = (
    Api(
        92,
        "DeleteShareGroupOffsets",
        "0",
        flexible=0,
        request=[
            F("group_id", STRING),
            F(
                "topics",
                [
                    F("topic_name", STRING),
                ],
            ),
        ],
        response=[
            F("throttle_time_ms", INT32),
            F("error_code", INT16),
            F("error_message", STRING, nullable="0+", default=None),
            F(
                "responses",
                [
                    F("topic_name", STRING),
                    F("topic_id", UUID),
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+", default=None),
                ],
            ),
        ],
    )
)
