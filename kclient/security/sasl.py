"""Client SASL: the settings and the sans-IO mechanisms (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER).
The exchange with a broker (SaslHandshake v0 or v1 + SaslAuthenticate) is the core's
:func:`kclient.core.handshake.authenticate`, run by both drivers.

SCRAM goes through ``scramp`` (RFC 5802/7677 with SASLprep, nonce and proof checks, including
verifying the server's signature: a well-kept library rather than hand-rolled crypto).
GSSAPI (Kerberos) is refused at construction: no maintained pure-Python Kerberos client can be
tested here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kclient.errors import InvalidConfigError

from .jaas import parse_jaas
from .unsecured import OAUTHBEARER_MODULE, UnsecuredLogin

__all__ = ["SaslConfig", "Mechanism", "mechanism", "MECHANISMS", "ScramVerifyError"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
#: A token callback: given ``sasl.oauthbearer.config``, the token, or (token, expiry in seconds
#: since the epoch) as confluent-kafka's ``oauth_cb`` returns it.
TokenCallback = Callable[[str], "str | tuple[str, float]"]


@dataclass(frozen=True)
class SaslConfig:
    """The SASL settings of one client, resolved and checked once."""

    mechanism: str
    username: str | None = None
    password: str | None = None
    token_callback: TokenCallback | None = None
    oauth_config: str = ""

    def __repr__(self) -> str:
        return f"SaslConfig({self.mechanism!r}, username={self.username!r})"  # no password

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SaslConfig:
        """From a loaded config; raises InvalidConfigError for what cannot work."""
        mechanism = config["sasl.mechanism"]
        if mechanism is None:
            raise InvalidConfigError(
                f"security.protocol {config['security.protocol']} needs sasl.mechanism (PLAIN, "
                "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)",
                "sasl.mechanism",
            )
        if mechanism == "GSSAPI":
            raise InvalidConfigError(
                "sasl.mechanism GSSAPI (Kerberos) is not supported by kclient: no maintained "
                "Kerberos library can be tested with it; use PLAIN, SCRAM-SHA-256/512 or "
                "OAUTHBEARER",
                "sasl.mechanism",
                mechanism,
            )
        username, password = config["sasl.username"], config["sasl.password"]
        callback = config["sasl.oauthbearer.token.callback"]
        if config["sasl.jaas.config"]:
            entry = parse_jaas(config["sasl.jaas.config"])
            expected = _JAAS_MODULES.get(mechanism)
            if expected and entry.module != expected:
                raise InvalidConfigError(
                    f"sasl.jaas.config names {entry.module}, but "
                    f"sasl.mechanism {mechanism} needs {expected}",
                    "sasl.jaas.config",
                )
            username = username or entry.options.get("username")
            password = password or entry.options.get("password")
            if (
                mechanism == "OAUTHBEARER"
                and callback is None
                and entry.module == OAUTHBEARER_MODULE
            ):
                callback = UnsecuredLogin(entry.options)  # Java's default login
        if mechanism == "OAUTHBEARER":
            if callback is None:
                raise InvalidConfigError(
                    "sasl.mechanism OAUTHBEARER needs "
                    "sasl.oauthbearer.token.callback (oauth_cb), or "
                    f"sasl.jaas.config naming {OAUTHBEARER_MODULE} with "
                    "unsecuredLoginStringClaim_sub",
                    "sasl.oauthbearer.token.callback",
                )
        elif not username or not password:
            raise InvalidConfigError(
                f"sasl.mechanism {mechanism} needs sasl.username and "
                "sasl.password (or sasl.jaas.config with both)",
                "sasl.username",
            )
        return cls(mechanism, username, password, callback, config["sasl.oauthbearer.config"] or "")


class Mechanism(Protocol):
    """The client side of one exchange: the first token, then an answer to each challenge
    (None once done)."""

    def first(self) -> bytes: ...

    def step(self, challenge: bytes) -> bytes | None: ...


class _Plain:
    def __init__(self, cfg: SaslConfig) -> None:
        self.cfg = cfg

    def first(self) -> bytes:
        return (
            b"\0" + (self.cfg.username or "").encode() + b"\0" + (self.cfg.password or "").encode()
        )

    def step(self, challenge: bytes) -> bytes | None:
        return None


class ScramVerifyError(ValueError):
    """The broker's SCRAM answer does not verify (scramp's ScramException, re-raised so that
    scramp is imported only by a SCRAM login)."""


class _Scram:
    def __init__(self, cfg: SaslConfig) -> None:
        from scramp import ScramClient  # imported on a SCRAM login only (import time)

        self.client = ScramClient([cfg.mechanism], cfg.username, cfg.password)
        self.round = 0

    def first(self) -> bytes:
        return str(self.client.get_client_first()).encode()

    def step(self, challenge: bytes) -> bytes | None:
        from scramp import ScramException

        self.round += 1
        try:
            if self.round == 1:
                self.client.set_server_first(challenge.decode())
                return str(self.client.get_client_final()).encode()
            self.client.set_server_final(challenge.decode())  # checks the server's signature
        except ScramException as exc:
            raise ScramVerifyError(str(exc)) from exc
        return None


class _OAuthBearer:
    def __init__(self, cfg: SaslConfig) -> None:
        self.cfg = cfg
        self.error: str | None = None

    def first(self) -> bytes:
        assert self.cfg.token_callback is not None, "checked by SaslConfig.from_config"
        got = self.cfg.token_callback(self.cfg.oauth_config)
        token = got[0] if isinstance(got, tuple) else got
        return b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01"

    def step(self, challenge: bytes) -> bytes | None:
        if challenge:  # RFC 7628: an error as JSON; answer %x01, the broker fails
            self.error = challenge.decode("utf-8", "replace")
            return b"\x01"
        return None


def mechanism(cfg: SaslConfig) -> Mechanism:
    """The client side of ``cfg``'s mechanism, fresh for one exchange."""
    if cfg.mechanism == "PLAIN":
        return _Plain(cfg)
    if cfg.mechanism == "OAUTHBEARER":
        return _OAuthBearer(cfg)
    return _Scram(cfg)
