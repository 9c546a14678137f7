"""FindCoordinator (key 10): which broker coordinates a consumer group (or transaction).

v0-v3 only: v4 replaces the single ``key`` with batched ``coordinator_keys``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT8, INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import FindCoordinatorRequest, FindCoordinatorResponse

FIND_COORDINATOR: Api[FindCoordinatorRequest, FindCoordinatorResponse] = Api(
    10, "FindCoordinator", "0-3", flexible=3,
    request=[
        F("key", STRING),
        F("key_type", INT8, "1+", default=0),  # 0 = group, 1 = transaction
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F("error_message", STRING, "1+", nullable="1+", default=None),
        F("node_id", INT32),
        F("host", STRING),
        F("port", INT32),
    ],
)
