"""TLS between kclient and the mini-broker: every client over an SSL listener, and every failure
named for what it is (expired, unknown CA, wrong host, plaintext on TLS and the reverse, a
required client certificate missing), with certificates generated at test time."""

from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest

from kclient import Producer, ProducerData, consumer
from kclient.broker import MiniBroker
from kclient.cluster import Cluster
from kclient.connection import ConnectionSettings
from kclient.errors import (
    InvalidConfigError,
    SecurityProtocolError,
    SslAuthenticationError,
)
from kclient.security import SecuritySettings
from kclient.simple import FetchRequest, SimpleConsumer
from tests.needs import missing

from .conftest import ssl_client, tls_broker_config


def _produce(bootstrap: str, security: dict, values=(b"v",), topic="t") -> None:
    with Producer(
        {
            "bootstrap.servers": bootstrap,
            "message.send.max.retries": 1,
            "retry.backoff.ms": 10,
            **security,
        }
    ) as p:
        p.send([ProducerData(topic, v) for v in values])


def _fetch_all(address: str, security: dict, topic="t") -> list[bytes]:
    host, port = address.rsplit(":", 1)
    with SimpleConsumer(host, int(port), security=security) as c:
        return [m.message.value for m in c.fetch(FetchRequest(topic, 0, 0, 1 << 20))]


def test_producer_and_simple_consumer_over_tls(tls_broker, certs):
    ssl_addr = tls_broker.bootstrap_of("SSL")
    _produce(ssl_addr, ssl_client(certs), [b"a", b"b", b"c"])
    assert _fetch_all(ssl_addr, ssl_client(certs)) == [b"a", b"b", b"c"]
    # the PLAINTEXT listener next to it serves the same data
    assert _fetch_all(tls_broker.bootstrap, {}) == [b"a", b"b", b"c"]


def test_metadata_names_the_listener_the_client_came_in_on(tls_broker, certs):
    settings = ConnectionSettings(security=SecuritySettings.from_keys(ssl_client(certs)))
    with Cluster(tls_broker.bootstrap_of("SSL"), settings) as cluster:
        cluster.refresh([])
        (only,) = cluster.brokers.values()
        assert f"{only.host}:{only.port}" == tls_broker.bootstrap_of("SSL")
    with Cluster(tls_broker.bootstrap) as cluster:
        cluster.refresh([])
        (only,) = cluster.brokers.values()
        assert f"{only.host}:{only.port}" == tls_broker.bootstrap


def test_group_consumer_over_tls(tls_broker, certs):
    ssl_addr = tls_broker.bootstrap_of("SSL")
    tls_broker.create_topic("g", partitions=2)
    _produce(ssl_addr, ssl_client(certs), [b"1", b"2", b"3", b"4"], topic="g")
    conn = consumer.create(
        {
            "bootstrap.servers": ssl_addr,
            "group.id": "tls-group",
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 5000,
            **ssl_client(certs),
        }
    )
    try:
        stream = conn.create_message_streams({"g": 1})["g"][0]
        got = sorted(next(iter(stream)).message for _ in range(4))
        assert got == [b"1", b"2", b"3", b"4"]
        conn.commit_offsets()
    finally:
        conn.shutdown()


def test_client_certificate_required_and_given(tmp_path, certs):
    config = tls_broker_config(certs, **{"ssl.client.auth": "required"})
    with MiniBroker(log_dir=tmp_path / "b", config=config) as broker:
        ssl_addr = broker.bootstrap_of("SSL")
        with_cert = ssl_client(
            certs,
            **{
                "ssl.certificate.location": str(certs.client_cert),
                "ssl.key.location": str(certs.client_key_encrypted),
                "ssl.key.password": certs.key_password,
            },
        )
        _produce(ssl_addr, with_cert, [b"x"])
        assert _fetch_all(ssl_addr, with_cert) == [b"x"]
        with pytest.raises((SslAuthenticationError, SecurityProtocolError)) as info:
            _produce(ssl_addr, ssl_client(certs))
        assert "certificate" in str(info.value)


def test_a_ca_directory_as_openssl_hashes_it(tls_broker, certs, tmp_path):
    openssl = shutil.which("openssl")
    if openssl is None:
        missing("openssl not installed")
    subject_hash = subprocess.run(
        [openssl, "x509", "-hash", "-noout", "-in", str(certs.ca)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ca_dir = tmp_path / "cas"
    ca_dir.mkdir()
    shutil.copy(certs.ca, ca_dir / f"{subject_hash}.0")
    keys = {"security.protocol": "SSL", "ssl.ca.location": str(ca_dir)}
    _produce(tls_broker.bootstrap_of("SSL"), keys, [b"dir"])
    assert _fetch_all(tls_broker.bootstrap_of("SSL"), keys) == [b"dir"]
    (ca_dir / f"{subject_hash}.0").unlink()  # an empty directory trusts nobody
    with pytest.raises(SslAuthenticationError, match="certificate not accepted"):
        _produce(tls_broker.bootstrap_of("SSL"), keys)


def test_a_wrong_key_password_is_a_config_error(certs):
    with pytest.raises(InvalidConfigError, match="ssl.key.password"):
        SecuritySettings.from_keys(
            ssl_client(
                certs,
                **{
                    "ssl.certificate.location": str(certs.client_cert),
                    "ssl.key.location": str(certs.client_key_encrypted),
                    "ssl.key.password": "wrong",
                },
            )
        )


@pytest.mark.parametrize(
    "keystore,reason",
    [
        ("expired_pem", "certificate has expired"),
        ("wrong_host_pem", "mismatch, certificate is not valid for .127.0.0.1"),
        ("other_ca_server_pem", "unable to get local issuer certificate"),
    ],
)
def test_a_certificate_that_does_not_verify_names_why(tmp_path, certs, keystore, reason):
    config = tls_broker_config(certs, getattr(certs, keystore))
    with MiniBroker(log_dir=tmp_path / "b", config=config) as broker:
        with pytest.raises(SslAuthenticationError, match=reason) as info:
            _produce(broker.bootstrap_of("SSL"), ssl_client(certs))
        assert broker.bootstrap_of("SSL") in str(info.value)
        host, port = broker.bootstrap_of("SSL").rsplit(":", 1)
        with pytest.raises(SslAuthenticationError, match=reason):
            SimpleConsumer(host, int(port), security=ssl_client(certs)).fetch(
                FetchRequest("t", 0, 0, 1024)
            )


def test_hostname_verification_can_be_turned_off(tmp_path, certs):
    config = tls_broker_config(certs, certs.wrong_host_pem)
    with MiniBroker(log_dir=tmp_path / "b", config=config) as broker:
        relaxed = ssl_client(certs, **{"ssl.endpoint.identification.algorithm": ""})
        _produce(broker.bootstrap_of("SSL"), relaxed, [b"ok"])
        assert _fetch_all(broker.bootstrap_of("SSL"), relaxed) == [b"ok"]


def test_plaintext_client_on_a_tls_listener_says_so(tls_broker):
    with pytest.raises(SecurityProtocolError, match="answered in TLS.*PLAINTEXT"):
        _produce(tls_broker.bootstrap_of("SSL"), {})
    with pytest.raises(SecurityProtocolError, match="answered in TLS"):
        _fetch_all(tls_broker.bootstrap_of("SSL"), {})


def test_tls_client_on_a_plaintext_listener_says_so(tls_broker, certs):
    with pytest.raises(SecurityProtocolError, match="closed the connection during the handshake"):
        _produce(tls_broker.bootstrap, ssl_client(certs))


def test_an_ssl_context_object_is_used_as_given(tls_broker, certs):
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    _produce(
        tls_broker.bootstrap_of("SSL"), {"security.protocol": "ssl", "ssl.context": ctx}, [b"ctx"]
    )
    assert _fetch_all(
        tls_broker.bootstrap_of("SSL"), {"security.protocol": "SSL", "ssl.context": ctx}
    ) == [b"ctx"]


@pytest.mark.parametrize(
    "keys,match",
    [
        ({"security.protocol": "TLS"}, "security.protocol"),
        ({"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, "ssl.ca.location"),
        ({"security.protocol": "SSL", "ssl.enabled.protocols": "TLSv1.1"}, "TLSv1.1"),
        ({"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "ssl.truststore.type"),
        ({"security.protocol": "SSL", "ssl.cipher.suites": "NO-SUCH-CIPHER"}, "ssl.cipher.suites"),
        ({"ssl.context": "not a context"}, "ssl.context"),
    ],
)
def test_bad_security_keys_are_reported_at_construction(keys, match):
    with pytest.raises(InvalidConfigError, match=match):
        Producer({"bootstrap.servers": "127.0.0.1:1", **keys})


def test_protocol_floor_refuses_an_older_broker(tmp_path, certs):
    config = tls_broker_config(certs, **{"ssl.enabled.protocols": "TLSv1.2"})
    with MiniBroker(log_dir=tmp_path / "b", config=config) as broker:
        with pytest.raises(SslAuthenticationError, match="(?i)version|protocol"):
            _produce(
                broker.bootstrap_of("SSL"),
                ssl_client(certs, **{"ssl.enabled.protocols": "TLSv1.3"}),
            )
