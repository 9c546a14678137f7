"""The connection handshake, written once for both drivers.

:func:`api_versions` negotiates API versions: ApiVersions at the highest version kclient knows,
once more at the broker's highest when it answers UNSUPPORTED_VERSION (KIP-511), or the versions
of ``broker.version.fallback`` when ``api.version.request`` is false or the broker is one before
0.10: it closes the connection on ApiVersions twice and answers Metadata v0
(:func:`old_broker_probe`; the driver opens a new connection after each close).

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

from kclient.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    SaslAuthenticationError,
    SecurityProtocolError,
    UnsupportedVersionError,
)
from kclient.protocol import error_codes as E
from kclient.protocol.apis import API_VERSIONS, METADATA, SASL_AUTHENTICATE, SASL_HANDSHAKE
from kclient.protocol.versions import DEFAULT_BROKER_VERSION_FALLBACK, fallback_versions
from kclient.security.sasl import SaslConfig, ScramVerifyError, mechanism

from .steps import Conversation, RawExchange, Request

__all__ = [
    "HandshakeConfig",
    "Negotiated",
    "api_versions",
    "old_broker_probe",
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
    """The versions to use; ``reopen``: the broker closed the connection, so the driver opens
    a new one before anything else is sent; ``follow_up``: the conversation to run first on
    that new connection, for the versions (its :class:`Negotiated` is handled the same way)."""

    versions: Versions
    reopen: bool = False
    follow_up: Conversation[Negotiated] | None = None


def api_versions(cfg: HandshakeConfig, closed_before: bool = False) -> Conversation[Negotiated]:
    """Ask the broker for its API versions, or assume ``broker.version.fallback``'s when it is
    off.  A close on ApiVersions is asked again on a new connection (``closed_before``: the
    first close; one close alone is a broker going away), then, after a second one, probed
    for a broker before 0.10 (:func:`old_broker_probe`): a close is no proof of an old
    broker, a Kafka node starting up closes too (issue 25)."""
    if not cfg.api_version_request:
        return Negotiated(dict(fallback_versions(cfg.broker_version_fallback)))
    try:
        return (yield from _ask(cfg))
    except KafkaConnectionError as exc:
        if not exc.closed_by_peer or not exc.retriable:
            raise
    if not closed_before:
        log.info("%s closed on ApiVersions; asking again on a new connection", cfg.address)
        return Negotiated({}, reopen=True, follow_up=api_versions(cfg, closed_before=True))
    log.info("%s closed on ApiVersions again; probing for a broker before 0.10", cfg.address)
    return Negotiated({}, reopen=True, follow_up=old_broker_probe(cfg))


def old_broker_probe(cfg: HandshakeConfig) -> Conversation[Negotiated]:
    """Tell a broker before 0.10 from one that is not ready: Metadata v0 (which every broker
    since 0.8 answers), then ApiVersions.  An old broker answers the first and closes on the
    second: ``broker.version.fallback``'s versions are used on a new connection.  A broker
    that answers both was starting: its versions.  One that answers neither (a node starting
    up, a proxy whose backend is away, a Kafka 4 broker without Metadata v0) is a failed
    connection, retriable, tried again after the reconnect backoff as any other (Java has no
    fallback at all: a close is a failed connection)."""
    try:
        yield Request(METADATA, {"topics": []}, 0)
    except (KafkaConnectionError, KafkaTimeoutError) as exc:
        if not getattr(exc, "retriable", True):
            raise
        raise KafkaConnectionError(
            cfg.host,
            cfg.port,
            "closed the connection on ApiVersions twice and did not answer Metadata v0 "
            "either: not a broker before 0.10, one not ready yet (starting, or behind a "
            f"proxy whose backend is away); {str(exc).removeprefix(cfg.address + ': ')}",
        ) from exc
    try:
        return (yield from _ask(cfg))
    except KafkaConnectionError as exc:
        if not exc.closed_by_peer or not exc.retriable:
            raise
    log.info(
        "%s answers Metadata v0 and closes on ApiVersions: a broker before 0.10, assuming %s",
        cfg.address,
        cfg.broker_version_fallback,
    )
    return Negotiated(dict(fallback_versions(cfg.broker_version_fallback)), reopen=True)


def _ask(cfg: HandshakeConfig) -> Conversation[Negotiated]:
    """ApiVersions on this connection, at the highest version, then at the broker's highest
    when it answers UNSUPPORTED_VERSION (KIP-511); a close is raised as it is."""
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
            # TLS expected, SASL refused: as it is; a close: the caller decides what it means
            if not exc.retriable or exc.closed_by_peer:
                raise
            # an answer that is garbage is not a sign of an old broker
            raise KafkaConnectionError(
                cfg.host, cfg.port, f"ApiVersions exchange failed: {exc.reason}"
            ) from exc
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
    except ScramVerifyError as exc:
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
