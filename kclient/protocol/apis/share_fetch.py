"""ShareFetch (key 78, KIP-932): records acquired under a time-limited lock from a share
session, carrying the acknowledgements of earlier deliveries (v2: acquire modes, RENEW)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api, One
from ..schema import Field as F
from ..types import BOOLEAN, INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, ArrayOf

if TYPE_CHECKING:
    from ..messages import ShareFetchRequest, ShareFetchResponse

#: an acknowledgement batch: offsets first..last (inclusive), one type for all or one per offset
ACKNOWLEDGEMENT_BATCH = [
    F("first_offset", INT64),
    F("last_offset", INT64),
    F("acknowledge_types", ArrayOf(INT8)),
]
#: a partition's leader as a share answer names it (NOT_LEADER_OR_FOLLOWER)
CURRENT_LEADER = One([F("leader_id", INT32), F("leader_epoch", INT32)])
#: the brokers a share answer names as the current leaders
NODE_ENDPOINTS = [
    F("node_id", INT32),
    F("host", STRING),
    F("port", INT32),
    F("rack", STRING, nullable="0+", default=None),
]

SHARE_FETCH: Api[ShareFetchRequest, ShareFetchResponse] = Api(
    78,
    "ShareFetch",
    "1-2",
    flexible=0,
    request=[
        F("group_id", STRING, nullable="0+", default=None),
        F("member_id", STRING, nullable="0+"),
        F("share_session_epoch", INT32),
        F("max_wait_ms", INT32),
        F("min_bytes", INT32),
        F("max_bytes", INT32, default=0x7FFFFFFF),
        F("max_records", INT32, "1+"),
        F("batch_size", INT32, "1+"),
        F("share_acquire_mode", INT8, "2+", default=0),
        F("is_renew_ack", BOOLEAN, "2+", default=False),
        F(
            "topics",
            [
                F("topic_id", UUID),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("acknowledgement_batches", ACKNOWLEDGEMENT_BATCH),
                    ],
                ),
            ],
        ),
        F(
            "forgotten_topics_data",
            [
                F("topic_id", UUID),
                F("partitions", ArrayOf(INT32)),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("acquisition_lock_timeout_ms", INT32, "1+"),
        F(
            "responses",
            [
                F("topic_id", UUID),
                F(
                    "partitions",
                    [
                        F("partition_index", INT32),
                        F("error_code", INT16),
                        F("error_message", STRING, nullable="0+", default=None),
                        F("acknowledge_error_code", INT16),
                        F("acknowledge_error_message", STRING, nullable="0+", default=None),
                        F("current_leader", CURRENT_LEADER),
                        F("records", RECORDS),
                        F(
                            "acquired_records",
                            [
                                F("first_offset", INT64),
                                F("last_offset", INT64),
                                F("delivery_count", INT16),
                            ],
                        ),
                    ],
                ),
            ],
        ),
        F("node_endpoints", NODE_ENDPOINTS),
    ],
)
