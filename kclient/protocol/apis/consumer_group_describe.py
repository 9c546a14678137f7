"""ConsumerGroupDescribe (key 69): a KIP-848 group's epochs, assignor and members, each with its
current and target assignment. v1 adds each member's type (KIP-1099: classic or consumer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api, One
from ..schema import Field as F
from ..types import BOOLEAN, INT8, INT16, INT32, STRING, UUID, ArrayOf

if TYPE_CHECKING:
    from ..messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse


def _assignment() -> One:
    return One(
        [
            F(
                "topic_partitions",
                [
                    F("topic_id", UUID),
                    F("topic_name", STRING),
                    F("partitions", ArrayOf(INT32)),
                ],
            )
        ]
    )


CONSUMER_GROUP_DESCRIBE: Api[ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse] = Api(
    69,
    "ConsumerGroupDescribe",
    "0-1",
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
                        F("instance_id", STRING, nullable="0+", default=None),
                        F("rack_id", STRING, nullable="0+", default=None),
                        F("member_epoch", INT32),
                        F("client_id", STRING),
                        F("client_host", STRING),
                        F("subscribed_topic_names", ArrayOf(STRING)),
                        F("subscribed_topic_regex", STRING, nullable="0+", default=None),
                        F("assignment", _assignment()),
                        F("target_assignment", _assignment()),
                        F("member_type", INT8, "1+", default=-1),
                    ],
                ),
                F("authorized_operations", INT32, default=-2147483648),
            ],
        ),
    ],
)
