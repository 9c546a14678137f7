"""ApiVersions (key 18): which APIs and version ranges a broker supports.

v3+ responses carry, as tagged fields (KIP-584), the features the cluster supports (tag 0) and
the finalized feature levels (tag 2: name, max level, min level), e.g. ``transaction.version``
(KIP-890's transactions v2 when 2); :func:`finalized_features` reads the latter.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING
from ..varint import decode_uvarint

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


#: the tag of ApiVersions' FinalizedFeatures (v3+)
FINALIZED_FEATURES_TAG = 2


def finalized_features(resp: Any) -> dict[str, int]:
    """``{feature name: finalized max level}`` of an ApiVersions response (empty before v3 or
    when the broker finalizes none)."""
    raw = (resp.get("_tagged_fields") or {}).get(FINALIZED_FEATURES_TAG)
    if not raw:
        return {}
    out: dict[str, int] = {}
    count, pos = decode_uvarint(raw, 0)
    for _ in range(count - 1):                       # a compact array: length + 1
        size, pos = decode_uvarint(raw, pos)
        name = bytes(raw[pos:pos + size - 1]).decode("utf-8")
        pos += size - 1
        max_level = int.from_bytes(raw[pos:pos + 2], "big", signed=True)
        pos += 4                                     # max and min version level, int16 each
        tags, pos = decode_uvarint(raw, pos)
        for _ in range(tags):                        # the entry's own tagged fields: skipped
            _, pos = decode_uvarint(raw, pos)
            length, pos = decode_uvarint(raw, pos)
            pos += length
        out[name] = max_level
    return out
