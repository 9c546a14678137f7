"""Fetch (key 1): v0-v3 return message sets, v4+ record batches (and transaction metadata)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT8, INT16, INT32, INT64, RECORDS, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import FetchRequest, FetchResponse

FETCH: Api[FetchRequest, FetchResponse] = Api(
    1,
    "Fetch",
    "0-12",
    flexible=12,
    request=[
        F("replica_id", INT32, default=-1),
        F("max_wait_ms", INT32, default=500),
        F("min_bytes", INT32, default=1),
        F("max_bytes", INT32, "3+", default=0x7FFFFFFF),
        F("isolation_level", INT8, "4+"),
        F("session_id", INT32, "7+"),
        F("session_epoch", INT32, "7+", default=-1),
        F(
            "topics",
            [
                F("topic", STRING),
                F(
                    "partitions",
                    [
                        F("partition", INT32),
                        F("current_leader_epoch", INT32, "9+", default=-1),
                        F("fetch_offset", INT64),
                        F("last_fetched_epoch", INT32, "12+", default=-1),
                        F("log_start_offset", INT64, "5+", default=-1),
                        F("partition_max_bytes", INT32),
                    ],
                ),
            ],
        ),
        F(
            "forgotten_topics_data",
            [
                F("topic", STRING),
                F("partitions", ArrayOf(INT32)),
            ],
            "7+",
        ),
        F("rack_id", STRING, "11+", default=""),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16, "7+"),
        F("session_id", INT32, "7+"),
        F(
            "responses",
            [
                F("topic", STRING),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("error_code", INT16),
                        F("high_watermark", INT64),
                        F("last_stable_offset", INT64, "4+", default=-1),
                        F("log_start_offset", INT64, "5+", default=-1),
                        F(
                            "aborted_transactions",
                            [
                                F("producer_id", INT64),
                                F("first_offset", INT64),
                            ],
                            "4+",
                            nullable="4+",
                            default=None,
                        ),
                        F("preferred_read_replica", INT32, "11+", default=-1),
                        F("records", RECORDS),
                    ],
                ),
            ],
        ),
    ],
)
