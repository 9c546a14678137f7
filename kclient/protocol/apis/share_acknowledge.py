"""ShareAcknowledge (key 79, KIP-932): acknowledgements (accept, release, reject, renew) of
acquired records without fetching more, in a share session or closing it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, STRING, UUID
from .share_fetch import ACKNOWLEDGEMENT_BATCH, CURRENT_LEADER, NODE_ENDPOINTS

if TYPE_CHECKING:
    from ..messages import ShareAcknowledgeRequest, ShareAcknowledgeResponse

SHARE_ACKNOWLEDGE: Api[ShareAcknowledgeRequest, ShareAcknowledgeResponse] = Api(
    79,
    "ShareAcknowledge",
    "1-2",
    flexible=0,
    request=[
        F("group_id", STRING, nullable="0+", default=None),
        F("member_id", STRING, nullable="0+"),
        F("share_session_epoch", INT32),
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
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("acquisition_lock_timeout_ms", INT32, "2+"),
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
                        F("current_leader", CURRENT_LEADER),
                    ],
                ),
            ],
        ),
        F("node_endpoints", NODE_ENDPOINTS),
    ],
)
