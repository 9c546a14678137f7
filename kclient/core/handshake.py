"""The connection handshake, written once for both drivers.

:func:`api_versions` negotiates API versions: ApiVersions at the highest version kclient knows,
once more at the broker's highest when it answers UNSUPPORTED_VERSION (KIP-511), or the versions
of ``broker.version.fallback`` when ``api.version.request`` is false or the broker closes the
connection on ApiVersions (brokers before 0.10; the driver then opens a new connection).

:func:`authenticate` is the client side of SASL: SaslHandshake v1 and SaslAuthenticate rounds
(KIP-152), or, for brokers without SaslAuthenticate, SaslHandshake v0 and bare size-prefixed
tokens (:class:`~kclient.core.steps.RawExchange`).  It returns the session lifetime the broker
granted; :func:`reauth_due` says when to authenticate again on the same connection (KIP-368).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from scramp import ScramException

from kclient.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    SaslAuthenticationError,
    SecurityProtocolError,
    UnsupportedVersionError,
)
from kclient.protocol import error_codes as E
from kclient.protocol.apis import API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE
from kclient.protocol.versions import DEFAULT_BROKER_VERSION_FALLBACK, fallback_versions
from kclient.security.sasl import SaslConfig, mechanism

from .steps import Conversation, RawExchange, Request

__all__ = [
    "HandshakeConfig",
    "Negotiated",
    "api_versions",
    "authenticate",
    "reauth_due",
    "REAUTH_FRACTION",
]

log = logging.getLogger(__name__)

#: Re-authenticate at this fraction of the session lifetime (the Java client: 85-95 %).
REAUTH_FRACTION = 0.9

Versions = dict[int, tuple[int, int]]


@dataclass(frozen=True)
class HandshakeConfig:
    """What the handshake needs of a connection's settings (the driver builds it once)."""

    host: str
    port: int
    software_version: str
    api_version_request: bool = True
    broker_version_fallback: str = DEFAULT_BROKER_VERSION_FALLBACK
    sasl: SaslConfig | None = None
    software_name: str = "kclient"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class Negotiated(NamedTuple):
    """The versions to use; ``reopen``: the broker closed the connection on ApiVersions, so
    the driver opens a new one before anything else is sent; ``ask_again``: on that new
    connection it runs ``api_versions(cfg, closed_before=True)`` for the versions (a broker
    that was restarting, or a proxy whose backend was away, answers this time; a broker
    before 0.10 closes again, and then gets the fallback)."""

    versions: Versions
    reopen: bool = False
    ask_again: bool = False


def api_versions(cfg: HandshakeConfig, closed_before: bool = False) -> Conversation[Negotiated]:
    """Ask the broker for its API versions, or assume ``broker.version.fallback``'s: when it
    is off, or when the broker closed the connection on ApiVersions twice in a row
    (``closed_before``: the first time; one close alone is a broker going away, not a sign
    of an old one)."""
    if not cfg.api_version_request:
        return Negotiated(dict(fallback_versions(cfg.broker_version_fallback)))
    body = {
        "client_software_name": cfg.software_name,
        "client_software_version": cfg.software_version,
    }
    version = API_VERSIONS.max_version
    for _ in range(2):
        try:
            resp = yield Request(API_VERSIONS, body, version)
        except KafkaTimeoutError as exc:
            raise KafkaTimeoutError(
                f"{cfg.address}: ApiVersions exchange failed: "
                f"{str(exc).removeprefix(cfg.address + ': ')}"
            ) from exc
        except KafkaConnectionError as exc:
            if not exc.retriable:  # TLS expected, SASL refused: as it is
                raise
            # brokers before 0.10 close the connection on an unknown API key; an answer that
            # is garbage is not a sign of an old broker
            if not exc.closed_by_peer:
                raise KafkaConnectionError(
                    cfg.host, cfg.port, f"ApiVersions exchange failed: {exc.reason}"
                ) from exc
            if not closed_before:
                log.info("%s closed on ApiVersions; asking again on a new connection", cfg.address)
                return Negotiated({}, reopen=True, ask_again=True)
            log.info(
                "%s closed on ApiVersions again; assuming broker %s",
                cfg.address,
                cfg.broker_version_fallback,
            )
            return Negotiated(dict(fallback_versions(cfg.broker_version_fallback)), reopen=True)
        ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        if resp.error_code == 0:
            return Negotiated(ranges)
        if resp.error_code == UnsupportedVersionError.errno and API_VERSIONS.key in ranges:
            version = min(ranges[API_VERSIONS.key][1], version - 1)
            continue
        raise KafkaConnectionError(
            cfg.host, cfg.port, f"ApiVersions exchange failed: error {resp.error_code}"
        )
    raise KafkaConnectionError(
        cfg.host, cfg.port, "ApiVersions exchange failed: every ApiVersions version was rejected"
    )


def authenticate(
    cfg: HandshakeConfig, versions: Mapping[int, tuple[int, int]]
) -> Conversation[float | None]:
    """The SASL exchange on a fresh (or idle) connection; returns the session lifetime in
    seconds (None: unlimited).  Raises SaslAuthenticationError naming mechanism and broker."""
    sasl = cfg.sasl
    assert sasl is not None, "authenticate runs only with sasl settings"

    def fail(reason: str) -> SaslAuthenticationError:
        return SaslAuthenticationError(cfg.host, cfg.port, reason, mechanism=sasl.mechanism)

    framed = SASL_AUTHENTICATE.key in versions
    hs_top = versions.get(SASL_HANDSHAKE.key, (0, 0))[1]
    resp = yield Request(
        SASL_HANDSHAKE, {"mechanism": sasl.mechanism}, min(1 if framed else 0, hs_top)
    )
    _check_handshake(cfg, resp, fail)
    mech = mechanism(sasl)
    token: bytes | None = mech.first()
    lifetime_ms = 0
    auth_version = min(2, versions.get(SASL_AUTHENTICATE.key, (0, 0))[1])
    try:
        while token is not None:
            if framed:
                answer = yield Request(SASL_AUTHENTICATE, {"auth_bytes": token}, auth_version)
                if answer.error_code:
                    detail = getattr(mech, "error", None)
                    raise fail(
                        f"{answer.error_message or f'error {answer.error_code}'}"
                        + (f" ({detail})" if detail else "")
                    )
                challenge = bytes(answer.auth_bytes)
                lifetime_ms = getattr(answer, "session_lifetime_ms", 0) or 0
            else:
                try:
                    challenge = yield RawExchange(token)
                except KafkaConnectionError as exc:  # v0 has no error message: it closes
                    raise fail(
                        "the broker closed the connection during the SaslHandshake v0 "
                        f"exchange (wrong credentials?): {exc.reason}"
                    ) from exc
            token = mech.step(challenge)
    except ScramException as exc:
        raise fail(f"the broker's SCRAM answer does not verify: {exc}") from exc
    return lifetime_ms / 1000.0 if lifetime_ms > 0 else None


def _check_handshake(cfg: HandshakeConfig, resp: Any, fail: Any) -> None:
    """Raise what a SaslHandshake error means (a non-SASL listener, a mechanism not enabled)."""
    if resp.error_code == E.IllegalSaslStateError.errno:
        raise SecurityProtocolError(
            cfg.host,
            cfg.port,
            "the listener does not use SASL "
            "(SaslHandshake: ILLEGAL_SASL_STATE): a PLAINTEXT or SSL "
            "listener? set security.protocol to match it",
        )
    if resp.error_code == E.UnsupportedSaslMechanismError.errno:
        raise fail(
            f"the broker does not enable {cfg.sasl.mechanism if cfg.sasl else '?'}; it "
            f"enables {', '.join(resp.mechanisms) or 'none'}"
        )
    if resp.error_code:
        raise fail(f"SaslHandshake failed with error {resp.error_code}")


def reauth_due(lifetime_s: float | None, now: float) -> float | None:
    """When to re-authenticate (the clock of ``now``): at :data:`REAUTH_FRACTION` of the
    session lifetime (KIP-368); None when the session does not expire."""
    if lifetime_s is None:
        return None
    return now + lifetime_s * REAUTH_FRACTION
