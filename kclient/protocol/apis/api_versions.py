"""ApiVersions (key 18): which APIs and version ranges a broker supports.

v3+ responses carry, as tagged fields (KIP-584), the features the cluster supports (tag 0) and
the finalized feature levels (tag 2: name, max level, min level), e.g. ``transaction.version``
(KIP-890's transactions v2 when 2); :func:`finalized_features` reads the latter and
:func:`feature_tags` writes both (a broker's answer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, INT32, STRING
from ..varint import decode_uvarint, encode_uvarint

if TYPE_CHECKING:
    from ..messages import ApiVersionsRequest, ApiVersionsResponse

API_VERSIONS: Api[ApiVersionsRequest, ApiVersionsResponse] = Api(
    18,
    "ApiVersions",
    "0-3",
    flexible=3,
    request=[
        F("client_software_name", STRING, "3+", default="kclient"),
        F("client_software_version", STRING, "3+", default="0"),
    ],
    response=[
        F("error_code", INT16),
        F(
            "api_keys",
            [
                F("api_key", INT16),
                F("min_version", INT16),
                F("max_version", INT16),
            ],
        ),
        F("throttle_time_ms", INT32, "1+"),
    ],
)


#: the tags of ApiVersions' SupportedFeatures, FinalizedFeaturesEpoch, FinalizedFeatures (v3+)
SUPPORTED_FEATURES_TAG, FEATURES_EPOCH_TAG, FINALIZED_FEATURES_TAG = 0, 1, 2


def _levels(features: dict[str, tuple[int, int]], max_first: bool) -> bytes:
    """A compact array of (name, two int16 levels, no tags), by name."""
    parts = [encode_uvarint(len(features) + 1)]
    for name in sorted(features):
        low, high = features[name]
        first, second = (high, low) if max_first else (low, high)
        raw = name.encode("utf-8")
        parts += [
            encode_uvarint(len(raw) + 1),
            raw,
            first.to_bytes(2, "big", signed=True),
            second.to_bytes(2, "big", signed=True),
            b"\x00",
        ]
    return b"".join(parts)


def feature_tags(
    supported: dict[str, tuple[int, int]], finalized: dict[str, tuple[int, int]], epoch: int
) -> dict[int, bytes]:
    """The v3+ response's feature tags: ``supported`` {name: (min, max version)},
    ``finalized`` {name: (min, max level)} (a feature at level 0 is left out, as Kafka does)
    and the finalized features' epoch (-1 when none is finalized)."""
    finalized = {k: v for k, v in finalized.items() if v[1] > 0}
    return {
        SUPPORTED_FEATURES_TAG: _levels(supported, max_first=False),
        FEATURES_EPOCH_TAG: (epoch if finalized else -1).to_bytes(8, "big", signed=True),
        FINALIZED_FEATURES_TAG: _levels(finalized, max_first=True),
    }


def finalized_features(resp: Any) -> dict[str, int]:
    """``{feature name: finalized max level}`` of an ApiVersions response (empty before v3 or
    when the broker finalizes none)."""
    raw = (resp.get("_tagged_fields") or {}).get(FINALIZED_FEATURES_TAG)
    if not raw:
        return {}
    out: dict[str, int] = {}
    count, pos = decode_uvarint(raw, 0)
    for _ in range(count - 1):  # a compact array: length + 1
        size, pos = decode_uvarint(raw, pos)
        name = bytes(raw[pos : pos + size - 1]).decode("utf-8")
        pos += size - 1
        max_level = int.from_bytes(raw[pos : pos + 2], "big", signed=True)
        pos += 4  # max and min version level, int16 each
        tags, pos = decode_uvarint(raw, pos)
        for _ in range(tags):  # the entry's own tagged fields: skipped
            _, pos = decode_uvarint(raw, pos)
            length, pos = decode_uvarint(raw, pos)
            pos += length
        out[name] = max_level
    return out
