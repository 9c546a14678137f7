"""Fixtures of the security tests: certificates generated at test time and brokers with
secured listeners next to a PLAINTEXT one."""

from __future__ import annotations

import pytest

from kclient.broker import MiniBroker
from kclient.testing.certs import make_certificates
from tests.needs import need_module

FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    """CA, broker, client, expired, wrong-host and foreign-CA certificates (PEM)."""
    need_module("cryptography")
    return make_certificates(tmp_path_factory.mktemp("certs"))


def tls_broker_config(certs, keystore=None, **extra):
    """A PLAINTEXT listener plus an SSL one serving ``keystore`` (default: the good one)."""
    return {
        **FAST_GROUPS,
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore or certs.server_pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs.ca),
        **extra,
    }


@pytest.fixture
def tls_broker(tmp_path, certs):
    """A MiniBroker with PLAINTEXT and SSL listeners."""
    with MiniBroker(log_dir=tmp_path / "tls-broker", config=tls_broker_config(certs)) as b:
        yield b


def ssl_client(certs, **extra):
    """Client keys for the SSL listener, verifying it against the test CA."""
    return {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca), **extra}


USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SASL_LISTENERS = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"


@pytest.fixture
def sasl_broker(tmp_path, certs):
    """A MiniBroker with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL listeners; users alice, bob."""
    config = tls_broker_config(certs, listeners=SASL_LISTENERS)
    with MiniBroker(log_dir=tmp_path / "sasl-broker", config=config, sasl_users=USERS) as b:
        yield b


def sasl_client(certs, protocol, mechanism, user="alice", password=None, **extra):
    """Client keys for a SASL listener."""
    keys = {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password or USERS[user],
        **extra,
    }
    if protocol == "SASL_SSL":
        keys["ssl.ca.location"] = str(certs.ca)
    return keys


ACL_USERS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def acl_config(**extra):
    """A SASL_PLAINTEXT listener, the authorizer on, admin a super user."""
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin",
        **FAST_GROUPS,
        **extra,
    }


@pytest.fixture
def acl_broker(tmp_path):
    """A broker enforcing ACLs (users alice, bob and the super user admin); topic "orders"."""
    with MiniBroker(
        log_dir=tmp_path / "acl-broker", config=acl_config(), sasl_users=ACL_USERS
    ) as b:
        b.create_topic("orders", partitions=1)
        yield b


def acl_keys(user):
    """Client keys of ``user`` for the ACL broker (SCRAM-SHA-256)."""
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": ACL_USERS[user],
    }
