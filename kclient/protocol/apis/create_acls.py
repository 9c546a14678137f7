"""CreateAcls (key 30): add ACL bindings, one result per creation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT8, INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import CreateAclsRequest, CreateAclsResponse

CREATE_ACLS: Api[CreateAclsRequest, CreateAclsResponse] = Api(
    30,
    "CreateAcls",
    "0-3",
    flexible=2,
    request=[
        F(
            "creations",
            [
                F("resource_type", INT8),
                F("resource_name", STRING),
                F("resource_pattern_type", INT8, "1+", default=3),
                F("principal", STRING),
                F("host", STRING),
                F("operation", INT8),
                F("permission_type", INT8),
            ],
        ),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "results",
            [
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
            ],
        ),
    ],
)
