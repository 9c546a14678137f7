"""DeleteAcls (key 31): remove the ACL bindings matching each filter, naming what was removed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT8, INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import DeleteAclsRequest, DeleteAclsResponse

DELETE_ACLS: Api[DeleteAclsRequest, DeleteAclsResponse] = Api(
    31,
    "DeleteAcls",
    "0-3",
    flexible=2,
    request=[
        F(
            "filters",
            [
                F("resource_type_filter", INT8),
                F("resource_name_filter", STRING, nullable="0+", default=None),
                F("pattern_type_filter", INT8, "1+", default=3),
                F("principal_filter", STRING, nullable="0+", default=None),
                F("host_filter", STRING, nullable="0+", default=None),
                F("operation", INT8),
                F("permission_type", INT8),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "filter_results",
            [
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
                F(
                    "matching_acls",
                    [
                        F("error_code", INT16),
                        F("error_message", STRING, nullable="0+", default=None),
                        F("resource_type", INT8),
                        F("resource_name", STRING),
                        F("pattern_type", INT8, "1+", default=3),
                        F("principal", STRING),
                        F("host", STRING),
                        F("operation", INT8),
                        F("permission_type", INT8),
                    ],
                ),
            ],
        ),
    ],
)
