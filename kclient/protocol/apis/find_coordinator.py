"""FindCoordinator (key 10): which broker coordinates a consumer group (or transaction).

v4 (KIP-699) replaces the single ``key`` with batched ``coordinator_keys`` and answers with one
``coordinators`` entry per key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT8, INT16, INT32, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import FindCoordinatorRequest, FindCoordinatorResponse

FIND_COORDINATOR: Api[FindCoordinatorRequest, FindCoordinatorResponse] = Api(
    10,
    "FindCoordinator",
    "0-4",
    flexible=3,
    request=[
        F("key", STRING, "0-3"),
        F("key_type", INT8, "1+", default=0),  # 0 = group, 1 = transaction
        F("coordinator_keys", ArrayOf(STRING), "4+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16, "0-3"),
        F("error_message", STRING, "1-3", nullable="1+", default=None),
        F("node_id", INT32, "0-3"),
        F("host", STRING, "0-3"),
        F("port", INT32, "0-3"),
        F(
            "coordinators",
            [
                F("key", STRING),
                F("node_id", INT32),
                F("host", STRING),
                F("port", INT32),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
            ],
            "4+",
        ),
    ],
)
