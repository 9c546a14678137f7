"""Test certificates made on the spot: a CA, a broker certificate for 127.0.0.1/localhost, a client
certificate, and the bad ones (expired, wrong host, signed by another CA).

Needs the ``cryptography`` package (the test extra): X.509 certificates cannot be built with the
standard library, and shelling out to the openssl CLI would tie the tests to its version's flags.
Everything is written as PEM into one directory; RSA 2048 keeps generation under a second.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TestCertificates", "make_certificates", "JavaStores", "make_java_stores"]


@dataclass(frozen=True)
class TestCertificates:
    """Paths of the generated PEM files (``*_pem``: certificate chain and key in one file, as
    ``ssl.keystore.type=PEM`` takes it)."""

    directory: Path
    ca: Path  # the CA certificate (ssl.ca.location / ssl.truststore.location)
    server_pem: Path  # broker key + certificate for 127.0.0.1 and localhost
    server_cert: Path
    server_key: Path
    client_pem: Path  # client key + certificate signed by the CA
    client_cert: Path
    client_key: Path
    client_key_encrypted: Path  # the client key encrypted with ``key_password``
    expired_pem: Path  # broker certificate that expired yesterday
    wrong_host_pem: Path  # broker certificate for wrong.example.com only
    other_ca: Path  # a CA nobody's certificate chains to
    other_ca_server_pem: Path  # broker certificate signed by other_ca
    key_password: str = "key-secret"


def make_certificates(directory: str | Path) -> TestCertificates:
    """Generate every test certificate into ``directory`` (created if needed)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)

    def key() -> rsa.RSAPrivateKey:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def ca_cert(cn: str, k: rsa.RSAPrivateKey) -> x509.Certificate:
        return (
            x509.CertificateBuilder()
            .subject_name(name(cn))
            .issuer_name(name(cn))
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(True, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(k.public_key()), critical=False
            )
            .sign(k, hashes.SHA256())
        )

    def leaf(
        cn: str,
        k: rsa.RSAPrivateKey,
        issuer: x509.Certificate,
        issuer_key: rsa.RSAPrivateKey,
        hosts: list[str],
        server: bool,
        expired: bool = False,
    ) -> x509.Certificate:
        start = now - dt.timedelta(days=10 if expired else 1)
        end = now - dt.timedelta(days=1) if expired else now + dt.timedelta(days=30)
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(cn))
            .issuer_name(issuer.subject)
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                critical=False,
            )
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    def pem_cert(cert: x509.Certificate) -> bytes:
        return cert.public_bytes(serialization.Encoding.PEM)

    def pem_key(k: rsa.RSAPrivateKey, password: str | None = None) -> bytes:
        enc: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)

    def write(filename: str, *parts: bytes) -> Path:
        path = out / filename
        path.write_bytes(b"".join(parts))
        return path

    ca_key, other_key = key(), key()
    ca, other = ca_cert("kclient test CA", ca_key), ca_cert("kclient other CA", other_key)
    local = ["127.0.0.1", "localhost", "::1"]
    server_key, client_key = key(), key()
    server = leaf("broker", server_key, ca, ca_key, local, True)
    client = leaf("client", client_key, ca, ca_key, [], False)
    expired_key, wrong_key, foreign_key = key(), key(), key()
    expired = leaf("broker", expired_key, ca, ca_key, local, True, expired=True)
    wrong = leaf("wrong.example.com", wrong_key, ca, ca_key, ["wrong.example.com"], True)
    foreign = leaf("broker", foreign_key, other, other_key, local, True)
    password = TestCertificates.key_password
    return TestCertificates(
        directory=out,
        ca=write("ca.pem", pem_cert(ca)),
        server_pem=write("server.pem", pem_key(server_key), pem_cert(server)),
        server_cert=write("server.crt", pem_cert(server)),
        server_key=write("server.key", pem_key(server_key)),
        client_pem=write("client.pem", pem_key(client_key), pem_cert(client)),
        client_cert=write("client.crt", pem_cert(client)),
        client_key=write("client.key", pem_key(client_key)),
        client_key_encrypted=write("client-encrypted.key", pem_key(client_key, password)),
        expired_pem=write("expired.pem", pem_key(expired_key), pem_cert(expired)),
        wrong_host_pem=write("wrong-host.pem", pem_key(wrong_key), pem_cert(wrong)),
        other_ca=write("other-ca.pem", pem_cert(other)),
        other_ca_server_pem=write("other-ca-server.pem", pem_key(foreign_key), pem_cert(foreign)),
    )


@dataclass(frozen=True)
class JavaStores:
    """Trust and key stores as Java users have them (made by the JDK's keytool), one password."""

    truststore_jks: Path
    truststore_p12: Path
    keystore_jks: Path
    keystore_p12: Path
    jceks: Path  # a type kclient refuses
    password: str = "store-secret"


def make_java_stores(certs: TestCertificates) -> JavaStores:
    """JKS and PKCS12 stores of ``certs``'s CA and client certificate (needs ``keytool``)."""
    import shutil
    import subprocess

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509 import load_pem_x509_certificate

    keytool = shutil.which("keytool")
    if keytool is None:
        raise RuntimeError("keytool (the JDK's) is not on PATH")
    password = JavaStores.password
    out = certs.directory
    stores = JavaStores(
        out / "truststore.jks",
        out / "truststore.p12",
        out / "client.jks",
        out / "client.p12",
        out / "truststore.jceks",
    )
    if all(
        p.exists()
        for p in (
            stores.truststore_jks,
            stores.truststore_p12,
            stores.keystore_jks,
            stores.keystore_p12,
            stores.jceks,
        )
    ):
        return stores  # made before for the same certificates
    key = serialization.load_pem_private_key(certs.client_key.read_bytes(), None)
    client = load_pem_x509_certificate(certs.client_cert.read_bytes())
    ca = load_pem_x509_certificate(certs.ca.read_bytes())
    p12 = out / "client.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"client",
            key,  # type: ignore[arg-type]
            client,
            [ca],  # type: ignore[arg-type]
            serialization.BestAvailableEncryption(password.encode()),
        )
    )
    env = {**os.environ, "STOREPASS": password}

    def run(*args: str) -> None:
        subprocess.run([keytool, *args], env=env, check=True, capture_output=True, timeout=120)

    for kind, name in (
        ("JKS", "truststore.jks"),
        ("PKCS12", "truststore.p12"),
        ("JCEKS", "truststore.jceks"),
    ):
        run(
            "-importcert",
            "-noprompt",
            "-alias",
            "ca",
            "-file",
            str(certs.ca),
            "-keystore",
            str(out / name),
            "-storetype",
            kind,
            "-storepass:env",
            "STOREPASS",
        )
    run(
        "-importkeystore",
        "-noprompt",
        "-srckeystore",
        str(p12),
        "-srcstoretype",
        "PKCS12",
        "-srcstorepass:env",
        "STOREPASS",
        "-destkeystore",
        str(out / "client.jks"),
        "-deststoretype",
        "JKS",
        "-deststorepass:env",
        "STOREPASS",
    )
    return stores
