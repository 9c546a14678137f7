"""InitProducerId (key 22): a producer id and epoch for an idempotent or transactional producer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, INT64, STRING

if TYPE_CHECKING:
    from ..messages import InitProducerIdRequest, InitProducerIdResponse

INIT_PRODUCER_ID: Api[InitProducerIdRequest, InitProducerIdResponse] = Api(
    22,
    "InitProducerId",
    "0-6",
    flexible=2,
    request=[
        F("transactional_id", STRING, nullable="0+", default=None),
        F("transaction_timeout_ms", INT32),
        F("producer_id", INT64, "3+", default=-1),
        F("producer_epoch", INT16, "3+", default=-1),
        F("enable2_pc", BOOLEAN, "6+", default=False),
        F("keep_prepared_txn", BOOLEAN, "6+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("producer_id", INT64, default=-1),
        F("producer_epoch", INT16),
        F("ongoing_txn_producer_id", INT64, "6+", default=-1),
        F("ongoing_txn_producer_epoch", INT16, "6+", default=-1),
    ],
)
