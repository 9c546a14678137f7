"""WriteTxnMarkers (key 27) v1-v2: write commit or abort markers to partitions this broker leads.

Kafka's coordinators send it to partition leaders; the mini-broker's own coordinator writes
markers directly (:mod:`kclient.broker.txn_markers`), so this serves other senders, such as
``kafka-transactions.sh abort`` ending a hanging transaction.  As Kafka: CLUSTER_ACTION on the
cluster is required (else CLUSTER_AUTHORIZATION_FAILED for every partition); a partition this
broker does not lead gets its Produce error; a marker older than the producer's epoch
INVALID_PRODUCER_EPOCH; the offsets topic ends the producer's staged TxnOffsetCommit offsets.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from kclient.protocol.apis import WRITE_TXN_MARKERS
from kclient.protocol.errors import BrokerResponseError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of
from ..txn_markers import OFFSETS_TOPIC
from .registry import handles


def _write(broker: Broker, marker: Any, topic: str, partition: int) -> int:
    """One partition's marker; its error code."""
    commit = bool(marker.transaction_result)
    if topic == OFFSETS_TOPIC:
        broker.coordinator.offsets.end_txn(marker.producer_id, marker.producer_epoch, commit)
        return 0
    log_, code = broker.partition_log(topic, partition)
    if log_ is None:
        return code
    if log_.config.message_format_version < 2:
        return E.UnsupportedForMessageFormatError.errno
    try:
        log_.append_marker(
            marker.producer_id,
            marker.producer_epoch,
            commit,
            marker.coordinator_epoch,
            leader_epoch=broker.cluster.leader_epoch(topic, partition),
        )
    except BrokerResponseError as exc:
        return exc.errno
    except OSError:
        return E.KafkaStorageError.errno
    broker.notify_append(topic, partition, 1)
    return 0


@handles(WRITE_TXN_MARKERS, "1-2")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Write every marker to every partition named; per-partition error codes."""
    body: Any = body_of(request)
    permitted = allowed(
        broker, request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
    )
    denied = E.ClusterAuthorizationFailedError.errno
    return {
        "markers": [
            {
                "producer_id": m.producer_id,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {
                                "partition_index": p,
                                "error_code": _write(broker, m, t.name, p) if permitted else denied,
                            }
                            for p in t.partition_indexes
                        ],
                    }
                    for t in m.topics
                ],
            }
            for m in body.markers
        ]
    }
