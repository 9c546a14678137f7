"""Named listeners as Kafka configures them, and the TLS each secured one needs.

``listeners=PLAINTEXT://127.0.0.1:9092,EXTERNAL://0.0.0.0:9093`` names the sockets to serve;
``listener.security.protocol.map`` (``EXTERNAL:SASL_SSL``) gives each name its security
protocol (a name that is itself a protocol maps to it); ``advertised.listeners`` what clients
are told per name; ``inter.broker.listener.name`` (or ``security.inter.broker.protocol``) which
one the brokers name themselves by in ZooKeeper.

Fail closed: a listener whose protocol needs TLS without ``ssl.keystore.location`` (PEM), or
``ssl.client.auth=required`` without ``ssl.truststore.location``, refuses to start with a
ValueError naming what is missing; a JKS or PKCS12 store is refused as such rather than read
as something else.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import BrokerConfig

__all__ = ["Listener", "ListenerError", "parse_listeners", "server_context", "PROTOCOLS"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


class ListenerError(ValueError):
    """A listener that cannot be served as configured (the message names what is missing)."""


@dataclass(frozen=True)
class Listener:
    """One named socket: where it binds, its security protocol and its TLS context."""

    name: str
    host: str
    port: int
    security_protocol: str
    ssl_context: ssl.SSLContext | None = None

    @property
    def uses_tls(self) -> bool:
        """SSL or SASL_SSL."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        """SASL_PLAINTEXT or SASL_SSL."""
        return self.security_protocol.startswith("SASL_")

    def with_port(self, port: int) -> Listener:
        """The same listener bound to ``port`` (once an ephemeral port is known)."""
        return Listener(self.name, self.host, port, self.security_protocol, self.ssl_context)


def split_entries(value: str) -> list[tuple[str, str, int]]:
    """``NAME://host:port,...`` -> [(NAME, host, port)]; a bare ``host:port`` is PLAINTEXT."""
    entries = []
    for item in value.split(","):
        if not item.strip():
            continue
        name, _, address = item.strip().rpartition("://")
        host, _, port = address.rpartition(":")
        try:
            number = int(port or 0)
        except ValueError:
            raise ListenerError(
                f"listener {item.strip()!r}: port {port!r} is not a number"
            ) from None
        entries.append((name.upper() or "PLAINTEXT", host.strip("[]"), number))
    return entries


def protocol_map(cfg: BrokerConfig) -> dict[str, str]:
    """``listener.security.protocol.map`` as {NAME: PROTOCOL}, each protocol checked."""
    out = {p: p for p in PROTOCOLS}
    for item in (cfg.get("listener.security.protocol.map") or "").split(","):
        if not item.strip():
            continue
        name, sep, protocol = item.strip().partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in PROTOCOLS:
            raise ListenerError(
                f"listener.security.protocol.map entry {item.strip()!r}: "
                f"expected NAME:PROTOCOL with PROTOCOL one of {', '.join(PROTOCOLS)}"
            )
        out[name.strip().upper()] = protocol
    return out


def parse_listeners(cfg: BrokerConfig, host: str, port: int) -> list[Listener]:
    """The listeners to serve, first one first; ``host``/``port`` when ``listeners`` is unset
    (an explicit ``port`` argument overrides the first listener's port)."""
    if "listeners" not in cfg.explicit:
        return [Listener("PLAINTEXT", host, port, "PLAINTEXT")]
    protocols = protocol_map(cfg)
    listeners: list[Listener] = []
    for i, (name, lhost, lport) in enumerate(split_entries(cfg["listeners"])):
        if name not in protocols:
            raise ListenerError(
                f"listener {name} has no security protocol: add {name}:<protocol> "
                "to listener.security.protocol.map"
            )
        if any(existing.name == name for existing in listeners):
            raise ListenerError(f"listener name {name} is given twice in listeners")
        protocol = protocols[name]
        ctx = server_context(cfg, name) if protocol in ("SSL", "SASL_SSL") else None
        listeners.append(
            Listener(name, lhost or host, port if i == 0 and port else lport, protocol, ctx)
        )
    if not listeners:
        raise ListenerError("listeners is empty")
    return listeners


def inter_broker_listener(cfg: BrokerConfig, listeners: list[Listener]) -> Listener:
    """The listener brokers name themselves by (``inter.broker.listener.name``, else the first
    of ``security.inter.broker.protocol``, else the first listener)."""
    wanted = cfg.get("inter.broker.listener.name")
    if wanted:
        for each in listeners:
            if each.name == wanted.upper():
                return each
        raise ListenerError(
            f"inter.broker.listener.name {wanted} is not among the listeners "
            f"({', '.join(e.name for e in listeners)})"
        )
    if "security.inter.broker.protocol" in cfg.explicit:
        protocol = cfg["security.inter.broker.protocol"].upper()
        for each in listeners:
            if each.security_protocol == protocol:
                return each
        raise ListenerError(f"security.inter.broker.protocol {protocol}: no listener uses it")
    return listeners[0]


def server_context(cfg: BrokerConfig, name: str) -> ssl.SSLContext:
    """The TLS context of listener ``name`` from the ``ssl.*`` keys (PEM files only)."""
    _require_pem(cfg, "ssl.keystore.type")
    _require_pem(cfg, "ssl.truststore.type")
    keystore = cfg.get("ssl.keystore.location")
    if not keystore:
        raise ListenerError(
            f"listener {name} uses TLS but ssl.keystore.location is not set: give a PEM file "
            "with the broker's private key and certificate chain (ssl.keystore.type=PEM)"
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(
        _tls_version(v) for v in (cfg.get("ssl.enabled.protocols") or "").split(",") if v.strip()
    )
    if versions:
        ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    _load(
        ctx.load_cert_chain,
        "ssl.keystore.location",
        keystore,
        keyfile=cfg.get("ssl.key.location"),
        password=cfg.get("ssl.key.password"),
    )
    auth = (cfg.get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise ListenerError(f"ssl.client.auth {auth!r}: expected none, requested or required")
    truststore = cfg.get("ssl.truststore.location")
    if auth != "none" and not truststore:
        raise ListenerError(
            f"listener {name}: ssl.client.auth={auth} needs "
            "ssl.truststore.location (PEM CA certificates client certificates "
            "must chain to)"
        )
    if truststore:
        if os.path.isdir(truststore):
            _load(ctx.load_verify_locations, "ssl.truststore.location", None, capath=truststore)
        else:
            _load(ctx.load_verify_locations, "ssl.truststore.location", truststore)
    ctx.verify_mode = _CLIENT_AUTH[auth]
    if cfg.get("ssl.cipher.suites"):
        try:
            ctx.set_ciphers(cfg["ssl.cipher.suites"])
        except ssl.SSLError:
            raise ListenerError(
                f"ssl.cipher.suites: no cipher matches {cfg['ssl.cipher.suites']!r}"
            ) from None
    return ctx


def _tls_version(name: str) -> ssl.TLSVersion:
    """One ``ssl.enabled.protocols`` entry."""
    try:
        return _TLS_VERSIONS[name.strip()]
    except KeyError:
        raise ListenerError(
            f"ssl.enabled.protocols: {name.strip()!r} is not one of {', '.join(_TLS_VERSIONS)}"
        ) from None


def _require_pem(cfg: BrokerConfig, key: str) -> None:
    """Only PEM stores are read; say so for JKS and PKCS12."""
    kind = (cfg.get(key) or "PEM").upper()
    if kind != "PEM":
        raise ListenerError(
            f"{key}={kind} is not supported: the mini-broker reads PEM files "
            f"only (set {key}=PEM; convert with keytool/openssl)"
        )


def _load(call: object, key: str, path: str | None, **kwargs: object) -> None:
    """``call(path, **kwargs)``, a failure reported as the config key that named the file."""
    try:
        call(path, **kwargs) if path is not None else call(**kwargs)  # type: ignore[operator]
    except (OSError, ssl.SSLError) as exc:
        where = path or kwargs.get("capath")
        raise ListenerError(
            f"{key} {where!r} cannot be loaded: {exc} (a PEM file? the right ssl.key.password?)"
        ) from exc
