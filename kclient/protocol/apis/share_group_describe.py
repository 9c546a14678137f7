"""ShareGroupDescribe (key 77, KIP-932): a share group's state, epochs and members with their
subscriptions and assignments."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api, One
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, STRING, UUID, ArrayOf

if TYPE_CHECKING:
    from ..messages import ShareGroupDescribeRequest, ShareGroupDescribeResponse

SHARE_GROUP_DESCRIBE: Api[ShareGroupDescribeRequest, ShareGroupDescribeResponse] = Api(
    77,
    "ShareGroupDescribe",
    "1",
    flexible=0,
    request=[
        F("group_ids", ArrayOf(STRING)),
        F("include_authorized_operations", BOOLEAN, default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "groups",
            [
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
                F("group_id", STRING),
                F("group_state", STRING),
                F("group_epoch", INT32),
                F("assignment_epoch", INT32),
                F("assignor_name", STRING),
                F(
                    "members",
                    [
                        F("member_id", STRING),
                        F("rack_id", STRING, nullable="0+", default=None),
                        F("member_epoch", INT32),
                        F("client_id", STRING),
                        F("client_host", STRING),
                        F("subscribed_topic_names", ArrayOf(STRING)),
                        F(
                            "assignment",
                            One(
                                [
                                    F(
                                        "topic_partitions",
                                        [
                                            F("topic_id", UUID),
                                            F("topic_name", STRING),
                                            F("partitions", ArrayOf(INT32)),
                                        ],
                                    ),
                                ]
                            ),
                        ),
                    ],
                ),
                F("authorized_operations", INT32, default=-2147483648),
            ],
        ),
    ],
)
