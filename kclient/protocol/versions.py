"""Version negotiation: pick the highest version both sides support, or assume an old broker's.

Brokers before 0.10 have no ApiVersions; like librdkafka (``api.version.request=false``,
``broker.version.fallback``) we then assume the ranges the named release shipped with.
"""

from __future__ import annotations

from typing import Any

from .errors import UnsupportedVersionError
from .schema import Api

__all__ = [
    "FALLBACK_VERSIONS",
    "DEFAULT_BROKER_VERSION_FALLBACK",
    "fallback_versions",
    "pick_version",
]

#: The release assumed for a broker that does not answer ApiVersions (librdkafka's default).
DEFAULT_BROKER_VERSION_FALLBACK = "0.10.0"

# api key -> (min, max) each old release accepted
_V080 = {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0)}
_V081 = {**_V080, 8: (0, 0), 9: (0, 0)}
_V082 = {**_V081, 8: (0, 1), 9: (0, 1), 10: (0, 0)}
_V090 = {**_V082, 0: (0, 1), 1: (0, 1), 8: (0, 2), 11: (0, 0), 12: (0, 0), 13: (0, 0), 14: (0, 0)}
_V0100 = {**_V090, 0: (0, 2), 1: (0, 2), 3: (0, 1), 18: (0, 0)}

FALLBACK_VERSIONS: dict[str, dict[int, tuple[int, int]]] = {
    "0.8.0": _V080,
    "0.8.1": _V081,
    "0.8.2": _V082,
    "0.9.0": _V090,
    "0.10.0": _V0100,
}


def fallback_versions(release: str) -> dict[int, tuple[int, int]]:
    """The API ranges of an old broker release such as "0.8.2" or "0.9.0.1"."""
    parts = release.split(".")
    key = ".".join(parts[:3])
    if key not in FALLBACK_VERSIONS:
        known = ", ".join(FALLBACK_VERSIONS)
        raise ValueError(
            f"broker.version.fallback {release!r} is not one of {known} "
            "(0.10.0 and later brokers answer ApiVersions)"
        )
    return FALLBACK_VERSIONS[key]


def pick_version(
    api: Api[Any, Any], broker: dict[int, tuple[int, int]], highest: int | None = None
) -> int:
    """The highest version of ``api`` that both we and the broker support (capped by ``highest``)."""
    if api.key not in broker:
        raise UnsupportedVersionError(f"the broker does not support {api.name}")
    lo, hi = broker[api.key]
    top = min(hi, api.max_version, api.max_version if highest is None else highest)
    if top < max(lo, api.min_version):
        raise UnsupportedVersionError(
            f"no common {api.name} version: broker v{lo}-v{hi}, kclient "
            f"v{api.min_version}-v{api.max_version}"
        )
    return top
