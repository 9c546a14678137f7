"""SaslAuthenticate (key 36, KIP-152): one SASL token each way, with the broker's error message
(v0+) and how long the authenticated session lasts before re-authentication (v1+, KIP-368)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BYTES, INT16, INT64, STRING

if TYPE_CHECKING:
    from ..messages import SaslAuthenticateRequest, SaslAuthenticateResponse

SASL_AUTHENTICATE: Api[SaslAuthenticateRequest, SaslAuthenticateResponse] = Api(
    36,
    "SaslAuthenticate",
    "0-2",
    flexible=2,
    request=[
        F("auth_bytes", BYTES),
    ],
    response=[
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("auth_bytes", BYTES),
        F("session_lifetime_ms", INT64, "1+", default=0),
    ],
)
