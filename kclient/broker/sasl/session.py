"""Each connection's security state: who the peer is, and for SASL listeners where the
authentication stands.

States of a :class:`SaslSession` (Kafka's ``SaslServerAuthenticator``)::

    HANDSHAKE --SaslHandshake v1--> AUTHENTICATE --SaslAuthenticate ok--> COMPLETE
        |                              \\--fails--> FAILED (the next request closes it)
        \\--SaslHandshake v0--> RAW (bare size-prefixed tokens, no request header) --> COMPLETE

Before COMPLETE only ApiVersions and the SASL requests are admitted; anything else closes the
connection, as Kafka does.  With ``connections.max.reauth.ms`` (or an expiring OAUTHBEARER
token) a session has a lifetime (KIP-368): the client re-authenticates with SaslHandshake v1 +
SaslAuthenticate on the same connection; a request after the lifetime closes it.
"""

from __future__ import annotations

import logging
import ssl
import time
from dataclasses import dataclass
from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.framing import API_VERSIONS_KEY, Request

from ..principal import PrincipalMapper
from .credentials import CredentialStore
from .mechanisms import SaslFailed, ServerMechanism, server_mechanism

__all__ = ["Session", "SaslSession", "SaslSettings", "RefusedSession", "ANONYMOUS", "tls_principal"]

log = logging.getLogger("kclient.broker.sasl")

ANONYMOUS = "User:ANONYMOUS"
SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY = 17, 36


def tls_principal(sock: Any, mapper: PrincipalMapper | None = None) -> str:
    """``User:<subject DN>`` of a verified client certificate (Kafka's default SSL principal,
    e.g. ``User:CN=client``), mapped by ``ssl.principal.mapping.rules``; else ANONYMOUS."""
    if not isinstance(sock, ssl.SSLSocket):
        return ANONYMOUS
    cert = sock.getpeercert()
    if not cert:
        return ANONYMOUS
    parts = [f"{_SHORT.get(k, k)}={v}" for rdn in reversed(cert.get("subject", ())) for k, v in rdn]
    if not parts:
        return ANONYMOUS
    dn = ",".join(parts)
    return "User:" + (mapper.name(dn) if mapper is not None else dn)


_SHORT = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
}


class Session:
    """A connection of a PLAINTEXT or SSL listener: authenticated by the transport alone."""

    raw_mode = False

    def __init__(self, principal: str = ANONYMOUS, listener: str = "PLAINTEXT") -> None:
        self.principal = principal
        self.listener = listener

    def admit(self, request: Request) -> str | None:
        """None to dispatch ``request``, else why the connection is closed instead."""
        return None

    def handshake(self, mechanism: str, version: int) -> dict[str, Any]:
        """SaslHandshake on a listener without SASL: ILLEGAL_SASL_STATE, as Kafka answers."""
        return {"error_code": E.IllegalSaslStateError.errno, "mechanisms": []}

    def authenticate(self, token: bytes, version: int) -> dict[str, Any]:
        """SaslAuthenticate on a listener without SASL."""
        return {
            "error_code": E.IllegalSaslStateError.errno,
            "error_message": "SASL is not enabled on this listener",
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }


class RefusedSession(Session):
    """A connection whose peer got no principal (no ssl.principal.mapping.rules rule matched
    its certificate): its first request closes it, saying why."""

    def __init__(self, reason: str, listener: str) -> None:
        super().__init__(ANONYMOUS, listener)
        self.reason = reason

    def admit(self, request: Request) -> str | None:
        return f"authentication failed: {self.reason}"


@dataclass(frozen=True)
class SaslSettings:
    """What every SASL connection of a broker shares."""

    mechanisms: tuple[str, ...]
    store: CredentialStore
    max_reauth_ms: int = 0


class SaslSession(Session):
    """A connection of a SASL_PLAINTEXT or SASL_SSL listener (see the module docstring)."""

    def __init__(self, settings: SaslSettings, listener: str, peer: str) -> None:
        super().__init__(ANONYMOUS, listener)
        self.settings = settings
        self.peer = peer
        self.state = "HANDSHAKE"
        self.mechanism: ServerMechanism | None = None
        self.mechanism_name = ""
        self.expires_at: float | None = None  # monotonic seconds, when a lifetime is set
        self.reauthenticating = False

    @property
    def raw_mode(self) -> bool:  # type: ignore[override]
        """Whether the next frames are bare SASL tokens (after SaslHandshake v0)."""
        return self.state == "RAW"

    def admit(self, request: Request) -> str | None:
        key = request.header.api_key
        if self.state == "COMPLETE":
            if (
                self.expires_at is not None
                and time.monotonic() > self.expires_at
                and key != SASL_HANDSHAKE_KEY
            ):
                return f"SASL session of {self.principal} expired (not re-authenticated)"
            return None
        if self.state == "FAILED":
            return f"request after failed SASL authentication ({self.mechanism_name})"
        allowed = {
            "HANDSHAKE": (API_VERSIONS_KEY, SASL_HANDSHAKE_KEY),
            "AUTHENTICATE": (SASL_AUTHENTICATE_KEY,),
        }.get(self.state, ())
        if key not in allowed:
            name = request.api.name if request.api is not None else f"api key {key}"
            return f"unexpected {name} request during SASL {self.state.lower()} (not authenticated)"
        return None

    def handshake(self, mechanism: str, version: int) -> dict[str, Any]:
        """Pick the mechanism; v0 switches to bare tokens, v1 to SaslAuthenticate."""
        enabled = list(self.settings.mechanisms)
        if self.state not in ("HANDSHAKE", "COMPLETE") or (
            self.state == "COMPLETE" and version < 1
        ):
            self.state = "FAILED"
            return {"error_code": E.IllegalSaslStateError.errno, "mechanisms": enabled}
        if mechanism not in enabled:
            self.state = "FAILED"
            return {"error_code": E.UnsupportedSaslMechanismError.errno, "mechanisms": enabled}
        self.reauthenticating = self.state == "COMPLETE"
        self.mechanism_name = mechanism
        self.mechanism = server_mechanism(mechanism, self.settings.store)
        self.state = "RAW" if version == 0 else "AUTHENTICATE"
        return {"error_code": 0, "mechanisms": enabled}

    def authenticate(self, token: bytes, version: int) -> dict[str, Any]:
        """One SaslAuthenticate round: the mechanism's answer, or Kafka's error."""
        if self.state != "AUTHENTICATE" or self.mechanism is None:
            self.state = "FAILED"
            return {
                "error_code": E.IllegalSaslStateError.errno,
                "error_message": f"SaslAuthenticate in state {self.state}",
                "auth_bytes": b"",
                "session_lifetime_ms": 0,
            }
        try:
            answer = self.step(bytes(token))
        except SaslFailed as exc:
            return {
                "error_code": E.SaslAuthenticationFailedError.errno,
                "error_message": str(exc),
                "auth_bytes": b"",
                "session_lifetime_ms": 0,
            }
        return {
            "error_code": 0,
            "error_message": None,
            "auth_bytes": answer,
            "session_lifetime_ms": self._lifetime_ms() if self.state == "COMPLETE" else 0,
        }

    def raw_token(self, token: bytes) -> bytes | None:
        """One bare token of the v0 exchange: the answer, or None (close: v0 has no errors)."""
        try:
            return self.step(token)
        except SaslFailed as exc:
            log.warning(
                "SASL %s authentication from %s failed: %s", self.mechanism_name, self.peer, exc
            )
            return None

    def step(self, token: bytes) -> bytes:
        """Feed the mechanism; on completion the principal and lifetime are set."""
        assert self.mechanism is not None, "a mechanism is chosen by the handshake"
        try:
            answer = self.mechanism.step(token)
        except SaslFailed:
            self.state = "FAILED"
            raise
        if self.mechanism.complete:
            principal = f"User:{self.mechanism.principal}"
            if self.reauthenticating and principal != self.principal:
                self.state = "FAILED"
                raise SaslFailed(
                    f"re-authentication as {principal} on a connection of "
                    f"{self.principal} is not allowed"
                )
            self.principal, self.state = principal, "COMPLETE"
            lifetime = self._lifetime_ms()
            self.expires_at = time.monotonic() + lifetime / 1000.0 if lifetime else None
        return answer

    def _lifetime_ms(self) -> int:
        """KIP-368: the session's lifetime (0: unlimited), bounded by a token's expiry."""
        limits = [self.settings.max_reauth_ms] if self.settings.max_reauth_ms > 0 else []
        expiry = self.mechanism.expires_at if self.mechanism is not None else None
        if expiry is not None:
            limits.append(max(0, int((expiry - time.time()) * 1000)))
        return min(limits) if limits else 0
