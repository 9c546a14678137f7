"""AddPartitionsToTxn (key 24): add the partitions a transactional producer writes to its transaction.

v0-v3 carry one transaction (the client form); v4+ batch several transactions and add
``verify_only`` (KIP-890, broker to coordinator), which is why Kafka names the v0-v3 fields
``v3_and_below_*``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT16, INT32, INT64, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse


def _topics(versions: str) -> F:
    return F("topics", [F("name", STRING), F("partitions", ArrayOf(INT32))], versions)


def _topic_results(name: str, versions: str) -> F:
    return F(
        name,
        [
            F("name", STRING),
            F(
                "results_by_partition",
                [
                    F("partition_index", INT32),
                    F("partition_error_code", INT16),
                ],
            ),
        ],
        versions,
    )


ADD_PARTITIONS_TO_TXN: Api[AddPartitionsToTxnRequest, AddPartitionsToTxnResponse] = Api(
    24,
    "AddPartitionsToTxn",
    "0-5",
    flexible=3,
    request=[
        F(
            "transactions",
            [
                F("transactional_id", STRING),
                F("producer_id", INT64),
                F("producer_epoch", INT16),
                F("verify_only", BOOLEAN, default=False),
                _topics("0+"),
            ],
            "4+",
        ),
        F("v3_and_below_transactional_id", STRING, "0-3", default=""),
        F("v3_and_below_producer_id", INT64, "0-3", default=-1),
        F("v3_and_below_producer_epoch", INT16, "0-3", default=-1),
        F("v3_and_below_topics", [F("name", STRING), F("partitions", ArrayOf(INT32))], "0-3"),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16, "4+", default=0),
        F(
            "results_by_transaction",
            [
                F("transactional_id", STRING),
                _topic_results("topic_results", "0+"),
            ],
            "4+",
        ),
        _topic_results("results_by_topic_v3_and_below", "0-3"),
    ],
)
