"""Security options as Spark users write them for ``format("kafka")``: ``kafka.security.protocol``,
``kafka.ssl.*`` (Java's names; PEM, PKCS12 and JKS stores) and ``kafka.sasl.*`` (``sasl.mechanism``
and Java's ``sasl.jaas.config``), turned into kclient's security keys.

:class:`SparkSecurity` travels with the options to every task (it pickles; its ``repr`` names
keys, never values).  Each Python process builds its TLS context once (:meth:`client_keys`):
stores are read there, where the files are, and key material written for OpenSSL lives only
in a private directory removed as soon as the context holds it.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from kclient.config import KEYS, load_config
from kclient.errors import InvalidConfigError
from kclient.security.settings import SecuritySettings
from kclient.security.stores import StoreContents, read_store, store_type_of
from kclient.security.tls import client_context

__all__ = ["SparkSecurity", "Redacted", "parse_security", "SECRET_WORDS"]

log = logging.getLogger(__name__)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: option names whose values are never shown
SECRET_WORDS = ("password", "jaas", "secret", "ssl.keystore.key", "token", "credential")
#: Java keys with no meaning for OpenSSL (they pick JSSE implementations): accepted, ignored
IGNORED = {
    "ssl.protocol",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "sasl.kerberos.service.name",
}
#: Java keys that load Java code: refused
REFUSED = {
    "ssl.provider": "a JSSE provider is Java code",
    "ssl.engine.factory.class": "an SSL engine factory is Java code",
    "sasl.login.class": "a login class is Java code",
    "sasl.login.callback.handler.class": "a login callback handler is Java code: for "
    "OAUTHBEARER set kafka.sasl.oauthbearer.token.callback to a Python function's dotted path",
    "sasl.client.callback.handler.class": "a client callback handler is Java code",
    "sasl.oauthbearer.token.endpoint.url": "kclient does not fetch OAuth tokens itself: set "
    "kafka.sasl.oauthbearer.token.callback to a Python function's dotted path",
}
#: Java store keys, read here rather than passed on
STORE_KEYS = {
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "ssl.truststore.certificates",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
}
_KCLIENT_KEYS = {k.name for k in KEYS} | {a for k in KEYS for a in k.aliases}


def _secret(name: str) -> bool:
    return any(w in name for w in SECRET_WORDS)


class Redacted(dict):  # type: ignore[type-arg]
    """A client config whose repr hides secret values (it may end up in a traceback)."""

    def __repr__(self) -> str:
        return (
            "{"
            + ", ".join(
                f"{k!r}: '***'" if _secret(str(k)) else f"{k!r}: {v!r}" for k, v in self.items()
            )
            + "}"
        )

    __str__ = __repr__


@dataclass(frozen=True)
class SparkSecurity:
    """The security options of one read or write (Java names without ``kafka.``)."""

    protocol: str = "PLAINTEXT"
    options: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}=***" if _secret(k) else f"{k}={v}" for k, v in self.options)
        return f"SparkSecurity({self.protocol}{', ' if shown else ''}{shown})"

    __str__ = __repr__

    @property
    def secured(self) -> bool:
        return self.protocol != "PLAINTEXT"

    def client_keys(self) -> dict[str, Any]:
        """kclient's security keys (with a built ``ssl.context``), once per process."""
        if not self.secured:
            return {}
        with _lock:
            keys = _built.get(self)
            if keys is None:
                keys = _built[self] = Redacted(_client_keys(self))
            return keys


_lock = threading.Lock()
_built: dict[SparkSecurity, dict[str, Any]] = {}


def parse_security(opts: dict[str, str]) -> SparkSecurity:
    """The ``kafka.security.protocol`` / ``kafka.ssl.*`` / ``kafka.sasl.*`` options, checked now
    (stores read, the TLS context built, JAAS parsed) so a mistake fails the query's planning."""
    protocol = opts.get("kafka.security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ValueError(
            f"kafka.security.protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}"
        )
    given = {
        k[len("kafka.") :]: v
        for k, v in opts.items()
        if k.startswith(("kafka.ssl.", "kafka.sasl."))
    }
    for name in sorted(given):
        if name in REFUSED:
            raise ValueError(f"option 'kafka.{name}' is not supported: {REFUSED[name]}")
        if name.startswith("sasl.kerberos.") and name not in IGNORED:
            raise ValueError(
                f"option 'kafka.{name}': GSSAPI (Kerberos) is not supported by "
                "kclient; use PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER"
            )
        if name not in IGNORED and name not in STORE_KEYS and name not in _KCLIENT_KEYS:
            raise ValueError(
                f"option 'kafka.{name}' is not a security setting kclient knows "
                "(docs/spark.md lists them)"
            )
    uses_tls, uses_sasl = protocol in ("SSL", "SASL_SSL"), protocol.startswith("SASL_")
    stray = sorted(
        n
        for n in given
        if n not in IGNORED
        and (n.startswith("ssl.") and not uses_tls or n.startswith("sasl.") and not uses_sasl)
    )
    if stray:
        raise ValueError(
            f"kafka.security.protocol={protocol} does not use "
            f"{', '.join('kafka.' + n for n in stray)}"
        )
    sec = SparkSecurity(
        protocol, tuple(sorted((k, v) for k, v in given.items() if k not in IGNORED))
    )
    if sec.secured:
        try:
            SecuritySettings.from_keys(sec.client_keys())
        except InvalidConfigError as exc:  # its .value may be a secret: message only
            raise ValueError(str(exc)) from None
        except OSError as exc:
            raise ValueError(f"cannot read {exc.filename!r}: {exc.strerror}") from None
    return sec


def _client_keys(sec: SparkSecurity) -> dict[str, Any]:
    """kclient keys: SASL passed on, TLS material read from the stores into one context."""
    given = dict(sec.options)
    keys: dict[str, Any] = {"security.protocol": sec.protocol}
    keys.update({k: v for k, v in given.items() if k not in STORE_KEYS})
    if sec.protocol in ("SSL", "SASL_SSL"):
        tls = {k: keys.pop(k) for k in list(keys) if k.startswith("ssl.")}
        keys["ssl.context"] = _context(given, tls)
    return keys


def _context(given: dict[str, str], tls: dict[str, Any]) -> Any:
    """The TLS context: CA and client certificate from the stores, the rest from ``tls``."""
    trust = _trusted(given)
    key_store = _key_store(given)
    with tempfile.TemporaryDirectory(prefix="kclient-tls-") as tmp:
        os.chmod(tmp, 0o700)
        if trust is not None:
            tls["ssl.ca.location"] = _write(tmp, "ca.pem", trust.certificates)
        if key_store is not None:
            tls["ssl.certificate.location"] = _write(
                tmp, "client.pem", key_store.key + key_store.chain
            )
            tls.pop("ssl.key.location", None)
            tls.pop("ssl.key.password", None)
        elif given.get("ssl.key.password") and tls.get("ssl.certificate.location"):
            tls["ssl.key.password"] = given["ssl.key.password"]
        return client_context(load_config("consumer", tls))


def _write(directory: str, name: str, data: bytes) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _store(given: dict[str, str], which: str) -> tuple[str, str, bytes | StoreContents] | None:
    """``ssl.<which>store.location`` as (path, type, PEM bytes or the store read), or None."""
    path = given.get(f"ssl.{which}store.location")
    if not path:
        return None
    kind = store_type_of(path, given.get(f"ssl.{which}store.type"))
    if kind == "PEM":
        with open(path, "rb") as f:
            return path, kind, f.read()
    return (
        path,
        kind,
        read_store(
            path,
            kind,
            given.get(f"ssl.{which}store.password"),
            given.get("ssl.key.password") if which == "key" else None,
        ),
    )


def _trusted(given: dict[str, str]) -> StoreContents | None:
    """The truststore's certificates (None: kclient's ssl.ca.location, or the system's)."""
    if given.get("ssl.truststore.certificates"):
        return StoreContents(certificates=given["ssl.truststore.certificates"].encode())
    found = _store(given, "trust")
    if found is None:
        return None
    path, _, got = found
    if isinstance(got, bytes):
        return StoreContents(certificates=got)
    if not got.certificates:
        raise ValueError(f"the truststore {path!r} holds no certificate")
    return got


def _key_store(given: dict[str, str]) -> StoreContents | None:
    """The client's key and certificate chain (None: no client certificate)."""
    if given.get("ssl.keystore.key") or given.get("ssl.keystore.certificate.chain"):
        if not (given.get("ssl.keystore.key") and given.get("ssl.keystore.certificate.chain")):
            raise ValueError(
                "kafka.ssl.keystore.key and kafka.ssl.keystore.certificate.chain "
                "go together (PEM text)"
            )
        return _pem_key(
            given["ssl.keystore.key"].encode(),
            given["ssl.keystore.certificate.chain"].encode(),
            given.get("ssl.key.password"),
        )
    found = _store(given, "key")
    if found is None:
        return None
    path, _, got = found
    if isinstance(got, bytes):
        return _pem_key(got, got, given.get("ssl.key.password"))
    if not got.key:
        raise ValueError(f"the keystore {path!r} holds no private key")
    return got


def _pem_key(key: bytes, chain: bytes, password: str | None) -> StoreContents:
    """A PEM key (decrypted with ``password`` if encrypted) and its certificate chain."""
    from cryptography.hazmat.primitives import serialization

    blocks = _pem_blocks(key, b"PRIVATE KEY")
    if not blocks:
        raise ValueError("the keystore holds no PEM private key")
    try:
        loaded = serialization.load_pem_private_key(
            blocks[0], password.encode() if password else None
        )
    except (ValueError, TypeError):
        raise ValueError(
            "cannot load the keystore's private key: a wrong or missing kafka.ssl.key.password?"
        ) from None
    plain = loaded.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    certs = b"".join(_pem_blocks(chain, b"CERTIFICATE"))
    if not certs:
        raise ValueError("the keystore holds no PEM certificate")
    return StoreContents(certificates=certs, chain=certs, key=plain)


def _pem_blocks(data: bytes, label: bytes) -> list[bytes]:
    """The PEM blocks of ``data`` whose label ends with ``label``."""
    out, rest = [], data
    while b"-----BEGIN " in rest:
        start = rest.index(b"-----BEGIN ")
        head_end = rest.index(b"-----", start + 11)
        name = rest[start + 11 : head_end]
        stop = rest.find(b"-----END " + name + b"-----", head_end)
        if stop < 0:
            break
        stop += len(b"-----END " + name + b"-----")
        if name.endswith(label):
            out.append(rest[start:stop] + b"\n")
        rest = rest[stop:]
    return out
