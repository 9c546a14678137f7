"""OAUTHBEARER's unsecured login, as the Java client's default login callback handler makes it
(``OAuthBearerUnsecuredLoginCallbackHandler``): an unsigned JWT (``alg: none``) whose claims come
from the JAAS options ``unsecuredLoginStringClaim_<name>``, ``unsecuredLoginNumberClaim_<name>``
and ``unsecuredLoginListClaim_<name>`` (the list's first character is its separator), with
``unsecuredLoginPrincipalClaimName`` (default ``sub``) and ``unsecuredLoginLifetimeSeconds``
(default 3600).  Brokers accept it only with Kafka's unsecured validator: development and tests,
as in Java."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from typing import Any

from kclient.errors import InvalidConfigError

__all__ = ["UnsecuredLogin", "OAUTHBEARER_MODULE"]

OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_PREFIX = "unsecuredLogin"


def _b64(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class UnsecuredLogin:
    """A token callback (``sasl.oauthbearer.token.callback``) minting unsecured JWTs."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.claims: dict[str, Any] = {}
        principal = options.get(f"{_PREFIX}PrincipalClaimName", "sub")
        try:
            self.lifetime = int(options.get(f"{_PREFIX}LifetimeSeconds", "3600"))
            for key, value in options.items():
                if key.startswith(f"{_PREFIX}StringClaim_"):
                    self.claims[key.split("_", 1)[1]] = value
                elif key.startswith(f"{_PREFIX}NumberClaim_"):
                    self.claims[key.split("_", 1)[1]] = float(value) if "." in value else int(value)
                elif key.startswith(f"{_PREFIX}ListClaim_"):
                    self.claims[key.split("_", 1)[1]] = (
                        [v for v in value[1:].split(value[:1]) if v] if value else []
                    )
        except ValueError as exc:
            raise InvalidConfigError(
                f"sasl.jaas.config: an unsecuredLogin number is not a number ({exc})",
                "sasl.jaas.config",
            ) from None
        if not isinstance(self.claims.get(principal), str) or not self.claims[principal]:
            raise InvalidConfigError(
                f"sasl.jaas.config: {OAUTHBEARER_MODULE} needs the principal claim "
                f'{_PREFIX}StringClaim_{principal}="<name>" (Java\'s unsecured login), or set '
                "sasl.oauthbearer.token.callback",
                "sasl.jaas.config",
            )

    def __call__(self, config: str) -> tuple[str, float]:
        """(token, expiry in seconds since the epoch), a fresh token each time."""
        now = time.time()
        claims = {"iat": round(now, 3), "exp": round(now + self.lifetime, 3), **self.claims}
        return f"{_b64({'alg': 'none'})}.{_b64(claims)}.", now + self.lifetime

    def __repr__(self) -> str:
        return f"UnsecuredLogin(claims={sorted(self.claims)})"
