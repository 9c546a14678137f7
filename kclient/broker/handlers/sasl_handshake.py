"""SaslHandshake (key 17) v0-v1: choose the connection's SASL mechanism (its session keeps the
state); a listener without SASL answers ILLEGAL_SASL_STATE, as Kafka does."""

from __future__ import annotations

from typing import Any

from kclient.protocol.apis import SASL_HANDSHAKE
from kclient.protocol.framing import Request

from ..interface import Broker, body_of
from ..sasl import Session
from .registry import handles


@handles(SASL_HANDSHAKE, "0-1")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """The enabled mechanisms, and whether the asked one is among them."""
    session = request.session if isinstance(request.session, Session) else Session()
    return session.handshake(body_of(request).mechanism, request.header.api_version)
