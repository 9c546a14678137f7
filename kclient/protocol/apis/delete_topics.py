"""DeleteTopics (key 20): delete topics by name (v0-v5; v6's topic ids are not used)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import DeleteTopicsRequest, DeleteTopicsResponse

DELETE_TOPICS: Api[DeleteTopicsRequest, DeleteTopicsResponse] = Api(
    20,
    "DeleteTopics",
    "0-5",
    flexible=4,
    request=[
        F("topic_names", ArrayOf(STRING)),
        F("timeout_ms", INT32),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F(
            "responses",
            [
                F("name", STRING),
                F("error_code", INT16),
                F("error_message", STRING, "5+", nullable="5+", default=None),
            ],
        ),
    ],
)
