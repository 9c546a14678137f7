"""CreatePartitions (key 37): raise topics' partition counts (never lower them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import CreatePartitionsRequest, CreatePartitionsResponse

CREATE_PARTITIONS: Api[CreatePartitionsRequest, CreatePartitionsResponse] = Api(
    37,
    "CreatePartitions",
    "0-3",
    flexible=2,
    request=[
        F(
            "topics",
            [
                F("name", STRING),
                F("count", INT32),
                F("assignments", [F("broker_ids", ArrayOf(INT32))], nullable="0+", default=None),
            ],
        ),
        F("timeout_ms", INT32, default=30000),
        F("validate_only", BOOLEAN, default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "results",
            [
                F("name", STRING),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
            ],
        ),
    ],
)
