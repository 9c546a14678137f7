"""Java key and trust stores read as PEM: PKCS12 through ``cryptography`` (pyca), JKS converted to
PKCS12 by the JDK's own ``keytool`` first (every Spark or Kafka host has a JDK; no maintained
Python library reads JKS).  Passwords reach keytool through its environment, never its command
line.  JCEKS, BCFKS and other types are refused by name."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kclient.errors import InvalidConfigError

__all__ = ["StoreContents", "read_store", "store_type_of", "STORE_TYPES"]

STORE_TYPES = ("PEM", "PKCS12", "JKS")
_JKS_MAGIC, _JCEKS_MAGIC = b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce"


@dataclass(frozen=True)
class StoreContents:
    """What a store holds, as PEM: trusted certificates, and a private key with its chain."""

    certificates: bytes = b""
    chain: bytes = b""
    key: bytes = b""

    def __repr__(self) -> str:
        return f"StoreContents(certificates={len(self.certificates)} B, key={bool(self.key)})"


def store_type_of(path: str, declared: str | None) -> str:
    """The store's type: the declared one (checked), else what its first bytes say (Java's
    default type JKS reads PKCS12 files too)."""
    try:
        head = Path(path).read_bytes()[:64]
    except OSError as exc:
        raise InvalidConfigError(
            f"cannot read the store {path!r}: {exc.strerror}", "ssl.truststore.location", path
        ) from None
    found = (
        "JKS"
        if head.startswith(_JKS_MAGIC)
        else "JCEKS"
        if head.startswith(_JCEKS_MAGIC)
        else "PEM"
        if b"-----BEGIN" in head or head.lstrip()[:1] == b"-"
        else "PKCS12"
        if head[:1] == b"\x30"
        else "unknown"
    )
    kind = "JCEKS" if found == "JCEKS" else (declared or found).strip().upper()
    if kind not in STORE_TYPES:
        raise InvalidConfigError(
            f"store {path!r} is of type {kind}: kclient reads PEM, PKCS12 and JKS stores "
            "(convert it with keytool -importkeystore -deststoretype PKCS12)",
            "ssl.keystore.type",
            kind,
            STORE_TYPES,
        )
    if (kind == "PEM") != (found == "PEM"):
        raise InvalidConfigError(
            f"store {path!r} is declared {kind} but holds {found}",
            "ssl.keystore.type",
            kind,
            STORE_TYPES,
        )
    return found if kind != "PEM" and found in ("JKS", "PKCS12") else kind


def read_store(
    path: str, kind: str, password: str | None, key_password: str | None = None
) -> StoreContents:
    """A PKCS12 or JKS store's certificates, key and chain as PEM."""
    if kind == "JKS":
        return _read_pkcs12(_jks_to_pkcs12(path, password, key_password), password, path)
    return _read_pkcs12(Path(path).read_bytes(), password, path)


def _read_pkcs12(data: bytes, password: str | None, path: str) -> StoreContents:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    pem = serialization.Encoding.PEM
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(
            data, password.encode() if password else None
        )
    except ValueError:
        raise InvalidConfigError(
            f"cannot read the PKCS12 store {path!r}: a wrong or missing "
            "store password, or not a PKCS12 file",
            "ssl.keystore.password",
        ) from None
    certs = b"".join(c.public_bytes(pem) for c in extra)
    if key is None:
        return StoreContents(certificates=(cert.public_bytes(pem) if cert else b"") + certs)
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    chain = (cert.public_bytes(pem) if cert else b"") + certs
    return StoreContents(certificates=chain, chain=chain, key=key_pem)


def _keytool() -> str:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "keytool") if home else shutil.which("keytool")
    if not found or not os.path.exists(found):
        raise InvalidConfigError(
            "a JKS store needs the JDK's keytool (JAVA_HOME or PATH) to "
            "be read; or convert it to PKCS12 or PEM",
            "ssl.keystore.type",
        )
    return found


def _jks_to_pkcs12(path: str, password: str | None, key_password: str | None) -> bytes:
    """The JKS store at ``path`` as PKCS12 bytes (keytool -importkeystore)."""
    if not password:
        raise InvalidConfigError(
            f"the JKS store {path!r} needs its password "
            "(ssl.keystore.password / ssl.truststore.password)",
            "ssl.keystore.password",
        )
    with tempfile.TemporaryDirectory(prefix="kclient-store-") as tmp:
        out = os.path.join(tmp, "store.p12")
        env = {
            **os.environ,
            "KCLIENT_STOREPASS": password,
            "KCLIENT_KEYPASS": key_password or password,
        }
        cmd = [
            _keytool(),
            "-importkeystore",
            "-noprompt",
            "-srckeystore",
            path,
            "-srcstoretype",
            "JKS",
            "-srcstorepass:env",
            "KCLIENT_STOREPASS",
            "-destkeystore",
            out,
            "-deststoretype",
            "PKCS12",
            "-deststorepass:env",
            "KCLIENT_STOREPASS",
        ]
        if key_password:
            cmd += ["-srckeypass:env", "KCLIENT_KEYPASS"]
        done = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0 or not os.path.exists(out):
            reason = (done.stdout + done.stderr).strip().splitlines()
            raise InvalidConfigError(
                f"cannot read the JKS store {path!r}: keytool says "
                f"{reason[-1] if reason else done.returncode}",
                "ssl.keystore.location",
                path,
            )
        return Path(out).read_bytes()
