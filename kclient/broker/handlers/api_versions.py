"""ApiVersions (key 18): the APIs this broker serves and their version ranges."""
from __future__ import annotations

from typing import Any

from kclient.protocol.framing import Request

from ..network import api_versions_body


def handle(broker: Any, request: Request) -> dict:
    """List every API that has a handler, with the protocol package's version range."""
    from . import HANDLERS
    return api_versions_body(keys=set(HANDLERS))
