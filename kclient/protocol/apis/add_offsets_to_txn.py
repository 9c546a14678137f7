"""AddOffsetsToTxn (key 25): tell the transaction coordinator a group's offsets join the transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, INT64, STRING

if TYPE_CHECKING:
    from ..messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse

ADD_OFFSETS_TO_TXN: Api[AddOffsetsToTxnRequest, AddOffsetsToTxnResponse] = Api(
    25,
    "AddOffsetsToTxn",
    "0-4",
    flexible=3,
    request=[
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("group_id", STRING),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
    ],
)
