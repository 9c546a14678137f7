"""DeleteRecords (key 21): advance partitions' log start offset, deleting what lies before it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, INT64, STRING

if TYPE_CHECKING:
    from ..messages import DeleteRecordsRequest, DeleteRecordsResponse

#: The offset meaning "up to the high watermark" (delete everything).
HIGH_WATERMARK = -1

DELETE_RECORDS: Api[DeleteRecordsRequest, DeleteRecordsResponse] = Api(
    21,
    "DeleteRecords",
    "0-2",
    flexible=2,
    request=[
        F(
            "topics",
            [
                F("name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("offset", INT64),
                    ],
                ),
            ],
        ),
        F("timeout_ms", INT32, default=30000),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "topics",
            [
                F("name", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("low_watermark", INT64),
                        F("error_code", INT16),
                    ],
                ),
            ],
        ),
    ],
)
