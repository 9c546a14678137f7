"""Client SASL: the mechanisms (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) and the exchange with a
broker, over SaslHandshake v1 + SaslAuthenticate (KIP-152) or, for brokers without
SaslAuthenticate, SaslHandshake v0 followed by bare size-prefixed tokens.

SCRAM goes through ``scramp`` (RFC 5802/7677 with SASLprep, nonce and proof checks, including
verifying the server's signature: a well-kept library rather than hand-rolled crypto).
GSSAPI (Kerberos) is refused at construction: no maintained pure-Python Kerberos client can be
tested here.  :func:`authenticate` returns the session lifetime the broker granted (KIP-368) so
the connection can re-authenticate before it runs out.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from scramp import ScramClient, ScramException

from kclient.errors import (
    InvalidConfigError,
    KafkaConnectionError,
    SaslAuthenticationError,
    SecurityProtocolError,
)
from kclient.protocol import error_codes as E
from kclient.protocol.apis import SASL_AUTHENTICATE, SASL_HANDSHAKE

from .jaas import parse_jaas

__all__ = ["SaslConfig", "authenticate", "MECHANISMS"]

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
                "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)", "sasl.mechanism")
        if mechanism == "GSSAPI":
            raise InvalidConfigError(
                "sasl.mechanism GSSAPI (Kerberos) is not supported by kclient: no maintained "
                "Kerberos library can be tested with it; use PLAIN, SCRAM-SHA-256/512 or "
                "OAUTHBEARER", "sasl.mechanism", mechanism)
        username, password = config["sasl.username"], config["sasl.password"]
        if config["sasl.jaas.config"]:
            entry = parse_jaas(config["sasl.jaas.config"])
            expected = _JAAS_MODULES.get(mechanism)
            if expected and entry.module != expected:
                raise InvalidConfigError(f"sasl.jaas.config names {entry.module}, but "
                                         f"sasl.mechanism {mechanism} needs {expected}",
                                         "sasl.jaas.config")
            username = username or entry.options.get("username")
            password = password or entry.options.get("password")
        if mechanism == "OAUTHBEARER":
            if config["sasl.oauthbearer.token.callback"] is None:
                raise InvalidConfigError("sasl.mechanism OAUTHBEARER needs "
                                         "sasl.oauthbearer.token.callback (oauth_cb)",
                                         "sasl.oauthbearer.token.callback")
        elif not username or not password:
            raise InvalidConfigError(f"sasl.mechanism {mechanism} needs sasl.username and "
                                     "sasl.password (or sasl.jaas.config with both)",
                                     "sasl.username")
        return cls(mechanism, username, password, config["sasl.oauthbearer.token.callback"],
                   config["sasl.oauthbearer.config"] or "")


class _Mechanism(Protocol):
    """The client side of one exchange: the first token, then an answer to each challenge
    (None once done)."""

    def first(self) -> bytes: ...

    def step(self, challenge: bytes) -> bytes | None: ...


class _Plain:
    def __init__(self, cfg: SaslConfig) -> None:
        self.cfg = cfg

    def first(self) -> bytes:
        return b"\0" + (self.cfg.username or "").encode() + b"\0" + \
            (self.cfg.password or "").encode()

    def step(self, challenge: bytes) -> bytes | None:
        return None


class _Scram:
    def __init__(self, cfg: SaslConfig) -> None:
        self.client = ScramClient([cfg.mechanism], cfg.username, cfg.password)
        self.round = 0

    def first(self) -> bytes:
        return str(self.client.get_client_first()).encode()

    def step(self, challenge: bytes) -> bytes | None:
        self.round += 1
        if self.round == 1:
            self.client.set_server_first(challenge.decode())
            return str(self.client.get_client_final()).encode()
        self.client.set_server_final(challenge.decode())   # checks the server's signature
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
        if challenge:            # RFC 7628: an error as JSON; answer %x01, the broker fails
            self.error = challenge.decode("utf-8", "replace")
            return b"\x01"
        return None


def _mechanism(cfg: SaslConfig) -> _Mechanism:
    if cfg.mechanism == "PLAIN":
        return _Plain(cfg)
    if cfg.mechanism == "OAUTHBEARER":
        return _OAuthBearer(cfg)
    return _Scram(cfg)


class Channel(Protocol):
    """What :func:`authenticate` needs of a connection."""

    host: str
    port: int
    versions: dict[int, tuple[int, int]]

    def request(self, api: Any, body: Any, version: int | None = None) -> Any: ...

    def raw_exchange(self, token: bytes) -> bytes: ...


def authenticate(conn: Channel, cfg: SaslConfig) -> float | None:
    """Run the SASL exchange on a fresh (or idle) connection; returns the session lifetime in
    seconds (None: unlimited).  Raises SaslAuthenticationError naming mechanism and broker."""
    def fail(reason: str) -> SaslAuthenticationError:
        return SaslAuthenticationError(conn.host, conn.port, reason, mechanism=cfg.mechanism)

    framed = SASL_AUTHENTICATE.key in conn.versions
    hs_range = conn.versions.get(SASL_HANDSHAKE.key, (0, 0))
    resp = conn.request(SASL_HANDSHAKE, {"mechanism": cfg.mechanism},
                        version=min(1 if framed else 0, hs_range[1]))
    if resp.error_code == E.IllegalSaslStateError.errno:
        raise SecurityProtocolError(conn.host, conn.port, "the listener does not use SASL "
                                    "(SaslHandshake: ILLEGAL_SASL_STATE): a PLAINTEXT or SSL "
                                    "listener? set security.protocol to match it")
    if resp.error_code == E.UnsupportedSaslMechanismError.errno:
        raise fail(f"the broker does not enable {cfg.mechanism}; it enables "
                   f"{', '.join(resp.mechanisms) or 'none'}")
    if resp.error_code:
        raise fail(f"SaslHandshake failed with error {resp.error_code}")
    mech = _mechanism(cfg)
    token: bytes | None = mech.first()
    lifetime_ms = 0
    auth_version = min(2, conn.versions.get(SASL_AUTHENTICATE.key, (0, 0))[1])
    try:
        while token is not None:
            if framed:
                answer = conn.request(SASL_AUTHENTICATE, {"auth_bytes": token},
                                      version=auth_version)
                if answer.error_code:
                    detail = getattr(mech, "error", None)
                    raise fail(f"{answer.error_message or f'error {answer.error_code}'}"
                               + (f" ({detail})" if detail else ""))
                challenge = bytes(answer.auth_bytes)
                lifetime_ms = getattr(answer, "session_lifetime_ms", 0) or 0
            else:
                try:
                    challenge = conn.raw_exchange(token)
                except KafkaConnectionError as exc:   # v0 has no error message: it closes
                    raise fail("the broker closed the connection during the SaslHandshake v0 "
                               f"exchange (wrong credentials?): {exc.reason}") from exc
            token = mech.step(challenge)
    except ScramException as exc:
        raise fail(f"the broker's SCRAM answer does not verify: {exc}") from exc
    return lifetime_ms / 1000.0 if lifetime_ms > 0 else None


def reauth_due(lifetime_s: float | None, now: float | None = None,
               fraction: float = 0.9) -> float | None:
    """When to re-authenticate (monotonic seconds): at ``fraction`` of the lifetime, as the
    Java client does at 85-95 % (KIP-368)."""
    if lifetime_s is None:
        return None
    return (time.monotonic() if now is None else now) + lifetime_s * fraction
