"""ApiVersions (key 18): which APIs and version ranges a broker supports."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING

if TYPE_CHECKING:
    from ..messages import ApiVersionsRequest, ApiVersionsResponse

API_VERSIONS: Api[ApiVersionsRequest, ApiVersionsResponse] = Api(
    18, "ApiVersions", "0-3", flexible=3,
    request=[
        F("client_software_name", STRING, "3+", default="kclient"),
        F("client_software_version", STRING, "3+", default="0"),
    ],
    response=[
        F("error_code", INT16),
        F("api_keys", [
            F("api_key", INT16),
            F("min_version", INT16),
            F("max_version", INT16),
        ]),
        F("throttle_time_ms", INT32, "1+"),
    ],
)
