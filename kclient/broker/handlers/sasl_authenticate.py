"""SaslAuthenticate (key 36) v0-v2: one SASL token of the connection's exchange; a failure is
SASL_AUTHENTICATION_FAILED with Kafka's message, success carries the session lifetime (v1+,
KIP-368)."""

from __future__ import annotations

from typing import Any

from kclient.protocol.apis import SASL_AUTHENTICATE
from kclient.protocol.framing import Request

from ..interface import Broker, body_of
from ..sasl import Session
from .registry import handles


@handles(SASL_AUTHENTICATE, "0-2")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """The mechanism's answer to the client's token."""
    session = request.session if isinstance(request.session, Session) else Session()
    return session.authenticate(body_of(request).auth_bytes, request.header.api_version)
