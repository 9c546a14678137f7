"""OffsetDelete (key 47): remove a group's committed offsets of topics it no longer reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import OffsetDeleteRequest, OffsetDeleteResponse

OFFSET_DELETE: Api[OffsetDeleteRequest, OffsetDeleteResponse] = Api(
    47,
    "OffsetDelete",
    "0",
    request=[
        F("group_id", STRING),
        F(
            "topics",
            [
                F("name", STRING),
                F("partitions", [F("partition_index", INT32)]),
            ],
        ),
    ],
    response=[
        F("error_code", INT16),
        F("throttle_time_ms", INT32),
        F(
            "topics",
            [
                F("name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("error_code", INT16),
                    ],
                ),
            ],
        ),
    ],
)
