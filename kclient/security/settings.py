"""What a client's connections share for security: the protocol, a TLS context, SASL settings."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kclient.config import load_config

from .sasl import SaslConfig
from .tls import client_context, handshake

__all__ = ["SecuritySettings"]


@dataclass(frozen=True)
class SecuritySettings:
    """``security.protocol`` and what it needs, resolved once from a loaded config."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslConfig | None = None
    auth_backoff_ms: int = 1000

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SecuritySettings:
        """The settings of a loaded producer or consumer config (a TLS context built now, so a
        bad file is reported at construction, not at the first connection)."""
        protocol = config.get("security.protocol") or "PLAINTEXT"
        ctx = client_context(config) if protocol in ("SSL", "SASL_SSL") else None
        sasl = SaslConfig.from_config(config) if protocol.startswith("SASL_") else None
        return cls(protocol, ctx, sasl, config["reconnect.backoff.max.ms"])

    @classmethod
    def from_keys(cls, keys: Mapping[str, Any] | None) -> SecuritySettings:
        """From security keys alone (``SimpleConsumer(security={...})``), checked by the one
        config table as any consumer config is."""
        return cls.from_config(load_config("consumer", keys)) if keys else cls()

    @property
    def uses_tls(self) -> bool:
        """SSL or SASL_SSL."""
        return self.ssl_context is not None

    def secure(self, sock: socket.socket, host: str, port: int) -> socket.socket:
        """The transport for a freshly connected socket: TLS-wrapped when configured."""
        if self.ssl_context is None:
            return sock
        return handshake(sock, self.ssl_context, host, port)
