"""CreateTopics (key 19): create topics with a partition count/replication or a manual layout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT8, INT16, INT32, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import CreateTopicsRequest, CreateTopicsResponse

CREATE_TOPICS: Api[CreateTopicsRequest, CreateTopicsResponse] = Api(
    19,
    "CreateTopics",
    "0-5",
    flexible=5,
    request=[
        F(
            "topics",
            [
                F("name", STRING),
                F("num_partitions", INT32),  # -1: manual assignments or broker default
                F("replication_factor", INT16),  # -1: manual assignments or broker default
                F(
                    "assignments",
                    [
                        F("partition_index", INT32),
                        F("broker_ids", ArrayOf(INT32)),
                    ],
                ),
                F(
                    "configs",
                    [
                        F("name", STRING),
                        F("value", STRING, nullable="0+"),
                    ],
                ),
            ],
        ),
        F("timeout_ms", INT32, default=60000),
        F("validate_only", BOOLEAN, "1+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "2+"),
        F(
            "topics",
            [
                F("name", STRING),
                F("error_code", INT16),
                F("error_message", STRING, "1+", nullable="0+", default=None),
                F("num_partitions", INT32, "5+", default=-1),
                F("replication_factor", INT16, "5+", default=-1),
                F(
                    "configs",
                    [
                        F("name", STRING),
                        F("value", STRING, nullable="5+"),
                        F("read_only", BOOLEAN),
                        F("config_source", INT8, default=-1),
                        F("is_sensitive", BOOLEAN),
                    ],
                    "5+",
                    nullable="5+",
                ),
            ],
        ),
    ],
)
