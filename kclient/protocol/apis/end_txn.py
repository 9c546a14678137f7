"""EndTxn (key 26): commit or abort a producer's ongoing transaction at its coordinator.

v5 (transaction version 2, KIP-890) answers with the producer id and epoch to use next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, INT64, STRING

if TYPE_CHECKING:
    from ..messages import EndTxnRequest, EndTxnResponse

END_TXN: Api[EndTxnRequest, EndTxnResponse] = Api(
    26,
    "EndTxn",
    "0-5",
    flexible=3,
    request=[
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("committed", BOOLEAN),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("producer_id", INT64, "5+", default=-1),
        F("producer_epoch", INT16, "5+", default=-1),
    ],
)
