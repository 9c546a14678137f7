"""DescribeCluster (key 60) v0-v1: the cluster id, the controller, the live brokers (as they
advertise themselves) and, when asked, the cluster's authorized operations (KIP-700).

Only brokers are described: asking a broker for the controllers (endpoint type 2, v1) is
MISMATCHED_ENDPOINT_TYPE, any other type UNSUPPORTED_ENDPOINT_TYPE, as Kafka answers.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import CLUSTER_NAME, NOT_REQUESTED, AclOperation, ResourceType
from kclient.protocol.apis import DESCRIBE_CLUSTER
from kclient.protocol.apis.describe_cluster import BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT
from kclient.protocol.framing import Request

from ..authorizer import allowed, authorized_operations
from ..interface import Broker, body_of
from .registry import handles


def _error(code: int, message: str) -> dict[str, Any]:
    """An answer carrying only an error (from a broker's endpoint, as Kafka's says)."""
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "endpoint_type": BROKERS_ENDPOINT,
        "cluster_id": "",
        "controller_id": -1,
        "brokers": [],
        "cluster_authorized_operations": NOT_REQUESTED,
    }


@handles(DESCRIBE_CLUSTER, "0-1")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Describe the live brokers of the cluster this broker belongs to."""
    body = body_of(request)
    if body.endpoint_type == CONTROLLERS_ENDPOINT:
        return _error(
            E.MismatchedEndpointTypeError.errno,
            "The request was sent to an endpoint of type BROKER, but we wanted an "
            "endpoint of type CONTROLLER",
        )
    if body.endpoint_type != BROKERS_ENDPOINT:
        return _error(
            E.UnsupportedEndpointTypeError.errno, f"unsupported endpoint type {body.endpoint_type}"
        )
    brokers = [
        {"broker_id": b.node_id, "host": host, "port": port, "rack": b.rack}
        for b in broker.cluster.live_brokers()
        for host, port in [b.endpoint(request.listener)]
    ]
    operations = NOT_REQUESTED
    if body.include_cluster_authorized_operations:  # 0 without Describe, as Kafka
        operations = (
            authorized_operations(broker, request, ResourceType.CLUSTER, CLUSTER_NAME)
            if allowed(broker, request, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
            else 0
        )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": BROKERS_ENDPOINT,
        "cluster_id": broker.config.get("cluster.id"),
        "controller_id": broker.cluster.controller_id(),
        "brokers": brokers,
        "cluster_authorized_operations": operations,
    }
