"""SaslHandshake (key 17): the client names its SASL mechanism; the broker answers with the ones
it enables.  After v0 the SASL tokens follow as bare size-prefixed frames (no request header);
after v1 they travel in SaslAuthenticate requests (KIP-152)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import INT16, STRING, ArrayOf

if TYPE_CHECKING:
    from ..messages import SaslHandshakeRequest, SaslHandshakeResponse

SASL_HANDSHAKE: Api[SaslHandshakeRequest, SaslHandshakeResponse] = Api(
    17,
    "SaslHandshake",
    "0-1",
    request=[
        F("mechanism", STRING),
    ],
    response=[
        F("error_code", INT16),
        F("mechanisms", ArrayOf(STRING)),
    ],
)
