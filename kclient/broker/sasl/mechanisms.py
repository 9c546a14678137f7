"""Server side of the SASL mechanisms: PLAIN, SCRAM-SHA-256/512 (RFC 5802)
and OAUTHBEARER with Kafka's unsecured-JWT validator (``OAuthBearerUnsecuredValidator``).

Each mechanism object takes the client's tokens one at a time (:meth:`step`) and returns the
server's; a failed login raises :class:`SaslFailed` with Kafka's message.  ``principal`` is set
once it is ``complete``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import secrets
import time
from typing import Protocol

from .credentials import SCRAM_MECHANISMS, CredentialStore, ScramCredential

__all__ = ["SaslFailed", "ServerMechanism", "server_mechanism", "SUPPORTED"]

log = logging.getLogger("kclient.broker.sasl")

_HASH_NAMES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SUPPORTED = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")


class SaslFailed(Exception):
    """Authentication failed; the message is what the client is told."""


class ServerMechanism(Protocol):
    """One authentication exchange on the server side."""

    complete: bool
    principal: str | None
    #: Seconds since the epoch when the credential expires (OAUTHBEARER tokens), or None.
    expires_at: float | None

    def step(self, token: bytes) -> bytes:
        """The answer to the client's next token; raises SaslFailed."""
        ...


class _Exchange:
    """State every server mechanism keeps."""

    def __init__(self) -> None:
        self.complete = False
        self.principal: str | None = None
        self.expires_at: float | None = None


class _Plain(_Exchange):
    """RFC 4616: one token ``authzid NUL authcid NUL passwd``."""

    def __init__(self, store: CredentialStore) -> None:
        super().__init__()
        self.store = store

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user or not password:
            raise SaslFailed("Authentication failed: username or password not specified")
        if authzid and authzid != user:
            raise SaslFailed(
                "Authentication failed: Client requested an authorization id "
                "that is different from username"
            )
        if not self.store.check_plain(user, password):
            raise SaslFailed("Authentication failed: Invalid username or password")
        self.complete, self.principal = True, user
        return b""


class _Scram(_Exchange):
    """RFC 5802 server against the salted credentials of the store, checking the client's
    nonce as Kafka's ``ScramSaslServer`` does: the final nonce must *end with* the server's
    (librdkafka 1.x sends the client nonce twice; a strict check would lock those clients out,
    and the proof still covers the message as sent)."""

    def __init__(self, store: CredentialStore, mechanism: str) -> None:
        super().__init__()
        self.mechanism = mechanism
        self.hash = _HASH_NAMES[mechanism]
        self.store = store
        self.credential: ScramCredential | None = None
        self.user: str | None = None
        self.first_bare = self.server_first = self.gs2 = ""
        self.nonce = ""

    def _invalid(self) -> str:
        return (
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism}"
        )

    def step(self, token: bytes) -> bytes:
        text = token.decode("utf-8", "replace")
        if self.credential is None:
            return self._first(text)
        return self._final(text)

    def _first(self, text: str) -> bytes:
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise SaslFailed(f"Invalid SCRAM client first message (mechanism {self.mechanism})")
        self.gs2, self.first_bare = parts[0] + "," + parts[1] + ",", parts[2]
        attrs = _attributes(self.first_bare)
        user = attrs.get("n", "").replace("=2C", ",").replace("=3D", "=")
        cnonce = attrs.get("r", "")
        if not user or not cnonce:
            raise SaslFailed(f"Invalid SCRAM client first message (mechanism {self.mechanism})")
        credential = self.store.scram(self.mechanism, user)
        if credential is None:
            log.info("SCRAM %s: unknown user %r", self.mechanism, user)
            raise SaslFailed(self._invalid())
        self.user, self.credential = user, credential
        self.nonce = cnonce + _base36(secrets.randbits(130))
        self.server_first = (
            f"r={self.nonce},s={base64.b64encode(credential.salt).decode()},"
            f"i={credential.iterations}"
        )
        return self.server_first.encode()

    def _final(self, text: str) -> bytes:
        credential = self.credential
        assert credential is not None, "set by the first message"
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        attrs = _attributes(without_proof)
        if not sep or attrs.get("c") != base64.b64encode(self.gs2.encode()).decode():
            raise SaslFailed(self._invalid())
        if not attrs.get("r", "").endswith(self.nonce):
            raise SaslFailed("Invalid client nonce in the final client message.")
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except (ValueError, binascii.Error):
            raise SaslFailed(self._invalid()) from None
        auth = f"{self.first_bare},{self.server_first},{without_proof}".encode()
        signature = hmac.new(credential.stored_key, auth, self.hash).digest()
        if len(proof) != len(signature):
            raise SaslFailed(self._invalid())
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(
            hashlib.new(self.hash, client_key).digest(), credential.stored_key
        ):
            log.info("SCRAM %s: wrong password for %r", self.mechanism, self.user)
            raise SaslFailed(self._invalid())
        self.complete, self.principal = True, self.user
        server_signature = hmac.new(credential.server_key, auth, self.hash).digest()
        return b"v=" + base64.b64encode(server_signature)


def _attributes(message: str) -> dict[str, str]:
    """``a=1,b=2`` -> {"a": "1", "b": "2"} (SCRAM attribute lists)."""
    return dict(part.split("=", 1) for part in message.split(",") if "=" in part)


class _OAuthBearer(_Exchange):
    """RFC 7628 client response ``n,,\\x01auth=Bearer <jwt>\\x01\\x01``, the token validated as
    Kafka's unsecured validator does: alg ``none``, a ``sub`` claim, ``exp`` in the future."""

    def step(self, token: bytes) -> bytes:
        text = token.decode("utf-8", "replace")
        fields = dict(kv.split("=", 1) for kv in text.split("\x01")[1:] if "=" in kv)
        auth = fields.get("auth", "")
        if not text.startswith(("n,", "y,")) or not auth.startswith("Bearer "):
            raise SaslFailed("Invalid OAUTHBEARER client first message")
        claims = _unsecured_claims(auth[len("Bearer ") :].strip())
        sub, exp = claims.get("sub"), claims.get("exp")
        if not isinstance(sub, str) or not sub:
            raise SaslFailed("OAUTHBEARER token has no 'sub' claim (the principal)")
        if not isinstance(exp, (int, float)) or exp <= time.time():
            raise SaslFailed("OAUTHBEARER token is expired or has no 'exp' claim")
        self.complete, self.principal, self.expires_at = True, sub, float(exp)
        return b""


def _unsecured_claims(jwt: str) -> dict[str, object]:
    """The claims of an unsigned JWS (``header.payload.``), as Kafka's unsecured validator reads it."""
    parts = jwt.split(".")
    if len(parts) != 3 or parts[2]:
        raise SaslFailed("OAUTHBEARER token is not an unsecured JWS (header.payload.)")
    try:
        header, claims = (
            json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))) for p in parts[:2]
        )
    except (ValueError, binascii.Error) as exc:
        raise SaslFailed(f"OAUTHBEARER token cannot be decoded: {exc}") from exc
    if not isinstance(header, dict) or header.get("alg") != "none" or not isinstance(claims, dict):
        raise SaslFailed("OAUTHBEARER token must be unsecured (alg none) on this broker")
    return claims


def _base36(number: int) -> str:
    """``number`` in digits and lower-case letters (Java's ``BigInteger.toString(36)``)."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while number:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
    return out or "0"


def server_mechanism(name: str, store: CredentialStore) -> ServerMechanism:
    """A fresh exchange of mechanism ``name`` (one of :data:`SUPPORTED`)."""
    if name == "PLAIN":
        return _Plain(store)
    if name in SCRAM_MECHANISMS:
        return _Scram(store, name)
    if name == "OAUTHBEARER":
        return _OAuthBearer()
    raise ValueError(f"unsupported SASL mechanism {name}")
