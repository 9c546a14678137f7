"""AlterConfigs (key 33): replace a resource's whole set of dynamic configs (deprecated by
IncrementalAlterConfigs, still what older tools send)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT8, INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import AlterConfigsRequest, AlterConfigsResponse

ALTER_CONFIGS: Api[AlterConfigsRequest, AlterConfigsResponse] = Api(
    33,
    "AlterConfigs",
    "0-2",
    flexible=2,
    request=[
        F(
            "resources",
            [
                F("resource_type", INT8),
                F("resource_name", STRING),
                F(
                    "configs",
                    [
                        F("name", STRING),
                        F("value", STRING, nullable="0+", default=None),
                    ],
                ),
            ],
        ),
        F("validate_only", BOOLEAN, default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "responses",
            [
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
                F("resource_type", INT8),
                F("resource_name", STRING),
            ],
        ),
    ],
)
