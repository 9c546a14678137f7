"""Produce (key 0): v0-v2 carry message sets (magic 0/1), v3+ record batches (magic 2).

v10-v12 add only tagged fields and error codes (TRANSACTION_ABORTABLE at v11); v12 inside a
transaction means transactions v2 (KIP-890): the broker adds the partition to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, INT64, NULLABLE_STRING, RECORDS, STRING

if TYPE_CHECKING:
    from ..messages import ProduceRequest, ProduceResponse

PRODUCE: Api[ProduceRequest, ProduceResponse] = Api(
    0,
    "Produce",
    "0-12",
    flexible=9,
    request=[
        F("transactional_id", NULLABLE_STRING, "3+"),
        F("acks", INT16, default=1),
        F("timeout_ms", INT32, default=30000),
        F(
            "topic_data",
            [
                F("name", STRING),
                F(
                    "partition_data",
                    [
                        F("index", INT32),
                        F("records", RECORDS),
                    ],
                ),
            ],
        ),
    ],
    response=[
        F(
            "responses",
            [
                F("name", STRING),
                F(
                    "partition_responses",
                    [
                        F("index", INT32),
                        F("error_code", INT16),
                        F("base_offset", INT64),
                        F("log_append_time_ms", INT64, "2+", default=-1),
                        F("log_start_offset", INT64, "5+", default=-1),
                        F(
                            "record_errors",
                            [
                                F("batch_index", INT32),
                                F("batch_index_error_message", NULLABLE_STRING),
                            ],
                            "8+",
                        ),
                        F("error_message", NULLABLE_STRING, "8+"),
                    ],
                ),
            ],
        ),
        F("throttle_time_ms", INT32, "1+"),
    ],
)
