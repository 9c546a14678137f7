"""``--security`` of the producer and consumer benches: the mini-broker gets a PLAINTEXT listener
(topic set-up and verification) next to an SSL or SASL_SSL one, and every client is given the
same Kafka keys for the secured one, so the benches compare the clients over TLS."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

CHOICES = ("plaintext", "ssl", "sasl_ssl")
USER, PASSWORD = "bench", "bench-secret"
MECHANISM = "PLAIN"


def listener(security: str) -> str:
    """The listener name the clients connect to."""
    return security.upper()


def make_ca_and_keystore() -> tuple[str, str]:
    """(CA file, broker PEM keystore), generated into a temporary directory."""
    from kclient.testing.certs import make_certificates

    certs = make_certificates(Path(tempfile.mkdtemp(prefix="kclient-bench-certs-")))
    return str(certs.ca), str(certs.server_pem)


def broker_config(security: str, keystore: str, secured_port: int = 0) -> dict[str, str]:
    """server.properties settings: PLAINTEXT first, then the secured listener."""
    if security == "plaintext":
        return {}
    config = {
        "listeners": f"PLAINTEXT://127.0.0.1:0,{listener(security)}://127.0.0.1:{secured_port}",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": keystore,
    }
    if security == "sasl_ssl":
        config["sasl.enabled.mechanisms"] = MECHANISM
    return config


def broker_users(security: str) -> dict[str, str]:
    """SASL users of the bench broker."""
    return {USER: PASSWORD} if security == "sasl_ssl" else {}


def write_credentials(directory: Path) -> str:
    """A ``sasl.credentials.file`` with the bench user (for a broker in its own process)."""
    from kclient.broker.sasl.credentials import CredentialStore

    store = CredentialStore()
    store.add_user(USER, PASSWORD)
    path = directory / "bench-users.json"
    store.save(str(path))
    return str(path)


def client_keys(security: str, ca: str | None) -> dict[str, Any]:
    """Keys for kclient and librdkafka (both take Kafka's names)."""
    if security == "plaintext":
        return {}
    keys: dict[str, Any] = {"security.protocol": listener(security), "ssl.ca.location": ca}
    if security == "sasl_ssl":
        keys.update({"sasl.mechanism": MECHANISM, "sasl.username": USER, "sasl.password": PASSWORD})
    return keys


def kafka_python_keys(security: str, ca: str | None) -> dict[str, Any]:
    """The same for kafka-python's keyword arguments."""
    if security == "plaintext":
        return {}
    keys: dict[str, Any] = {"security_protocol": listener(security), "ssl_cafile": ca}
    if security == "sasl_ssl":
        keys.update(
            {
                "sasl_mechanism": MECHANISM,
                "sasl_plain_username": USER,
                "sasl_plain_password": PASSWORD,
            }
        )
    return keys
