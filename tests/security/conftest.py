"""Fixtures of the security tests: certificates generated at test time and brokers with
secured listeners next to a PLAINTEXT one."""
from __future__ import annotations

import pytest

from kclient.broker import MiniBroker
from kclient.testing.certs import make_certificates

FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    """CA, broker, client, expired, wrong-host and foreign-CA certificates (PEM)."""
    pytest.importorskip("cryptography")
    return make_certificates(tmp_path_factory.mktemp("certs"))


def tls_broker_config(certs, keystore=None, **extra):
    """A PLAINTEXT listener plus an SSL one serving ``keystore`` (default: the good one)."""
    return {**FAST_GROUPS,
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore or certs.server_pem),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
            **extra}


@pytest.fixture
def tls_broker(tmp_path, certs):
    """A MiniBroker with PLAINTEXT and SSL listeners."""
    with MiniBroker(log_dir=tmp_path / "tls-broker", config=tls_broker_config(certs)) as b:
        yield b


def ssl_client(certs, **extra):
    """Client keys for the SSL listener, verifying it against the test CA."""
    return {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca), **extra}
