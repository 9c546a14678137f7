"""ApiVersions (key 18): the APIs this broker serves and their version ranges."""
from __future__ import annotations

from typing import Any

from kclient.protocol.apis import API_VERSIONS
from kclient.protocol.framing import Request

from ..interface import Broker
from ..network import api_versions_body
from .registry import handles, served_versions


@handles(API_VERSIONS, "0-3")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Every registered handler's API with the versions it declared it serves."""
    return api_versions_body(served_versions())
