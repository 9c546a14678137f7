"""DescribeAcls (key 29): the ACL bindings matching a filter, grouped by resource pattern."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT8, INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import DescribeAclsRequest, DescribeAclsResponse

#: PatternType LITERAL: what v0 (before prefixed patterns, KIP-290) means.
_LITERAL = 3

DESCRIBE_ACLS: Api[DescribeAclsRequest, DescribeAclsResponse] = Api(
    29,
    "DescribeAcls",
    "0-3",
    flexible=2,
    request=[
        F("resource_type_filter", INT8),
        F("resource_name_filter", STRING, nullable="0+", default=None),
        F("pattern_type_filter", INT8, "1+", default=_LITERAL),
        F("principal_filter", STRING, nullable="0+", default=None),
        F("host_filter", STRING, nullable="0+", default=None),
        F("operation", INT8),
        F("permission_type", INT8),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F(
            "resources",
            [
                F("resource_type", INT8),
                F("resource_name", STRING),
                F("pattern_type", INT8, "1+", default=_LITERAL),
                F(
                    "acls",
                    [
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
