"""DescribeCluster (key 60, KIP-700): the cluster id, controller and brokers, and the cluster's
authorized operations (which Metadata carried until v10)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT8, INT16, INT32, NULLABLE_STRING, STRING

if TYPE_CHECKING:
    from ..messages import DescribeClusterRequest, DescribeClusterResponse

#: EndpointType (v1+): describe the brokers or the KRaft controllers.
BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2

DESCRIBE_CLUSTER: Api[DescribeClusterRequest, DescribeClusterResponse] = Api(
    60,
    "DescribeCluster",
    "0-1",
    flexible=0,
    request=[
        F("include_cluster_authorized_operations", BOOLEAN),
        F("endpoint_type", INT8, "1+", default=BROKERS_ENDPOINT),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", NULLABLE_STRING, default=None),
        F("endpoint_type", INT8, "1+", default=BROKERS_ENDPOINT),
        F("cluster_id", STRING),
        F("controller_id", INT32, default=-1),
        F(
            "brokers",
            [
                F("broker_id", INT32),
                F("host", STRING),
                F("port", INT32),
                F("rack", NULLABLE_STRING, default=None),
            ],
        ),
        F("cluster_authorized_operations", INT32, default=-2147483648),
    ],
)
