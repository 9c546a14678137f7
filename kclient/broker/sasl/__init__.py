"""Broker-side SASL: the user store (SCRAM-salted, never plaintext), the server mechanisms
(PLAIN, SCRAM-SHA-256/512, unsecured OAUTHBEARER) and each connection's authentication state."""

from __future__ import annotations

from .credentials import CredentialStore
from .session import SaslSession, Session

__all__ = ["CredentialStore", "SaslSession", "Session"]
