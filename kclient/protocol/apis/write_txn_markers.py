"""WriteTxnMarkers (key 27): a transaction coordinator asks partition leaders to write markers.

v1-v2 only: Kafka 4 removed v0 (KIP-896) and neither oracle the tests use still defines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT8, INT16, INT32, INT64, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

WRITE_TXN_MARKERS: Api[WriteTxnMarkersRequest, WriteTxnMarkersResponse] = Api(
    27,
    "WriteTxnMarkers",
    "1-2",
    flexible=1,
    request=[
        F(
            "markers",
            [
                F("producer_id", INT64),
                F("producer_epoch", INT16),
                F("transaction_result", BOOLEAN),  # False = abort, True = commit
                F(
                    "topics",
                    [
                        F("name", STRING),
                        F("partition_indexes", ArrayOf(INT32)),
                    ],
                ),
                F("coordinator_epoch", INT32),
                F("transaction_version", INT8, "2+", default=0),
            ],
        ),
    ],
    response=[
        F(
            "markers",
            [
                F("producer_id", INT64),
                F(
                    "topics",
                    [
                        F("name", STRING),
                        F(
                            "partitions",
                            [
                                F("partition_index", INT32),
                                F("error_code", INT16),
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ],
)
