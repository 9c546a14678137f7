"""Client TLS: an ``ssl.SSLContext`` from Kafka's ``ssl.*`` keys, and a handshake whose failures
name their cause.

The context is built once per client (``ConnectionSettings``) and shared by its connections.
A failed handshake raises :class:`SslAuthenticationError` with OpenSSL's verification reason
(expired, unknown CA, host name mismatch); a broker that closes the connection during the
handshake, or that answers in plaintext, is a PLAINTEXT listener: :class:`SecurityProtocolError`.
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Mapping
from typing import Any

from kclient.errors import InvalidConfigError, SecurityProtocolError, SslAuthenticationError

__all__ = ["client_context", "handshake", "TLS_VERSIONS", "looks_like_tls"]

#: ``ssl.enabled.protocols`` names -> OpenSSL versions.
TLS_VERSIONS: dict[str, ssl.TLSVersion] = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


def protocol_range(
    names: tuple[str, ...], key: str = "ssl.enabled.protocols"
) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """(lowest, highest) TLS version of an ``ssl.enabled.protocols`` list."""
    unknown = [n for n in names if n not in TLS_VERSIONS]
    if unknown or not names:
        raise InvalidConfigError(
            f"{key}: {', '.join(unknown) or 'nothing'} is not a TLS version kclient speaks "
            f"(TLSv1.0/1.1 are broken; use {' or '.join(TLS_VERSIONS)})",
            key,
            names,
            list(TLS_VERSIONS),
        )
    versions = sorted(TLS_VERSIONS[n] for n in names)
    return versions[0], versions[-1]


def client_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """The TLS context a loaded config names (``ssl.context`` if given, used as is)."""
    given = config["ssl.context"]
    if isinstance(given, ssl.SSLContext):
        return given
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version, ctx.maximum_version = protocol_range(config["ssl.enabled.protocols"])
    ca = config["ssl.ca.location"]
    try:
        if ca is None:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        elif os.path.isdir(ca):
            ctx.load_verify_locations(capath=ca)
        else:
            ctx.load_verify_locations(cafile=ca)
    except (OSError, ssl.SSLError) as exc:
        raise InvalidConfigError(
            f"ssl.ca.location {ca!r}: cannot load CA certificates: {exc}", "ssl.ca.location", ca
        ) from exc
    _load_client_certificate(ctx, config)
    if config["ssl.cipher.suites"]:
        try:
            ctx.set_ciphers(config["ssl.cipher.suites"])
        except ssl.SSLError as exc:
            raise InvalidConfigError(
                f"ssl.cipher.suites: no cipher matches {config['ssl.cipher.suites']!r}",
                "ssl.cipher.suites",
                config["ssl.cipher.suites"],
            ) from exc
    verify = config["enable.ssl.certificate.verification"]
    ctx.check_hostname = verify and config["ssl.endpoint.identification.algorithm"] == "https"
    if not verify:
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _load_client_certificate(ctx: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    """The client certificate and key for brokers that ask for one (``ssl.client.auth``)."""
    cert, key = config["ssl.certificate.location"], config["ssl.key.location"]
    if cert is None:
        if key is not None:
            raise InvalidConfigError(
                "ssl.key.location is set but ssl.certificate.location is "
                "not: a key needs its certificate",
                "ssl.certificate.location",
            )
        return
    try:
        ctx.load_cert_chain(cert, key, config["ssl.key.password"])
    except (OSError, ssl.SSLError) as exc:
        raise InvalidConfigError(
            f"cannot load the client certificate {cert!r} (key {key or 'in the same file'}): "
            f"{exc} (a wrong ssl.key.password, or a key that does not match the certificate?)",
            "ssl.certificate.location",
            cert,
        ) from exc


def handshake(sock: socket.socket, ctx: ssl.SSLContext, host: str, port: int) -> ssl.SSLSocket:
    """TLS over a connected socket (its timeout bounds the handshake); errors name the cause."""
    try:
        return ctx.wrap_socket(sock, server_hostname=host)
    except ssl.SSLCertVerificationError as exc:
        sock.close()
        reason = exc.verify_message or str(exc)
        raise SslAuthenticationError(
            host, port, f"TLS handshake failed: broker certificate not accepted: {reason}"
        ) from exc
    except (ssl.SSLEOFError, ConnectionResetError, BrokenPipeError) as exc:
        sock.close()
        raise SecurityProtocolError(
            host,
            port,
            "TLS handshake failed: the broker closed the connection during the "
            "handshake (a PLAINTEXT or SASL_PLAINTEXT listener? or it refused our client "
            f"certificate): {exc}",
        ) from exc
    except ssl.SSLError as exc:
        sock.close()
        if exc.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
            raise SecurityProtocolError(
                host,
                port,
                f"TLS handshake failed: the broker did not answer in TLS ({exc.reason})"
                ": a PLAINTEXT listener? set security.protocol to match it",
            ) from exc
        raise SslAuthenticationError(host, port, f"TLS handshake failed: {exc}") from exc


def looks_like_tls(head: bytes | bytearray) -> bool:
    """Whether a response's first bytes are a TLS record (an alert or a handshake) rather than a
    Kafka size prefix: a plaintext client talking to a TLS listener."""
    return len(head) >= 3 and head[0] in (0x15, 0x16) and head[1] == 0x03 and head[2] <= 0x04
