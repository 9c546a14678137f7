"""IncrementalAlterConfigs (key 44, KIP-339): set, delete, append to or subtract from single
config keys of a topic or broker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT8, INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

#: AlterConfigOp.OpType codes.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

INCREMENTAL_ALTER_CONFIGS: Api[IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse] = (
    Api(
        44,
        "IncrementalAlterConfigs",
        "0-1",
        flexible=1,
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
                            F("config_operation", INT8),
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
)
