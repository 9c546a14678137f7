"""OffsetFetch (key 9): read a group's committed positions.

v0-v7 ask for one group; v8+ batch several (``groups``), v9 with the asking member's id and
epoch (KIP-848: the coordinator checks them against a consumer group's member).  v0 reads
offsets stored in ZooKeeper, v1+ those stored in Kafka.  A body may carry both shapes (see
:func:`kclient.core.offsets.offset_fetch_body`): each version writes only its own fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, INT64, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import OffsetFetchRequest, OffsetFetchResponse


def _asked(versions: str) -> F:
    # null (v2+) asks for the offsets of every topic the group has committed
    return F(
        "topics",
        [
            F("name", STRING),
            F("partition_indexes", ArrayOf(INT32)),
        ],
        versions,
        nullable="2+",
    )


def _answered(versions: str, leader_epoch: str) -> F:
    return F(
        "topics",
        [
            F("name", STRING),
            F(
                "partitions",
                [
                    F("partition_index", INT32),
                    F("committed_offset", INT64),
                    F("committed_leader_epoch", INT32, leader_epoch, default=-1),
                    F("metadata", STRING, nullable="0+", default=""),
                    F("error_code", INT16),
                ],
            ),
        ],
        versions,
    )


OFFSET_FETCH: Api[OffsetFetchRequest, OffsetFetchResponse] = Api(
    9,
    "OffsetFetch",
    "0-9",
    flexible=6,
    request=[
        F("group_id", STRING, "0-7", default=""),
        _asked("0-7"),
        F(
            "groups",
            [
                F("group_id", STRING),
                F("member_id", STRING, "9+", nullable="9+", default=None),
                F("member_epoch", INT32, "9+", default=-1),
                _asked("0+"),
            ],
            "8+",
        ),
        F("require_stable", BOOLEAN, "7+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "3+"),
        _answered("0-7", "5+"),
        F("error_code", INT16, "2-7", default=0),
        F(
            "groups",
            [
                F("group_id", STRING),
                _answered("0+", "0+"),
                F("error_code", INT16, default=0),
            ],
            "8+",
        ),
    ],
)
