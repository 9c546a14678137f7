"""SASL between kclient and the mini-broker: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER over
SASL_PLAINTEXT and SASL_SSL, the old unframed v0 exchange, re-authentication (KIP-368), and each
failure named (wrong password, unknown mechanism, SASL against a non-SASL listener)."""

from __future__ import annotations

import base64
import json
import time

import pytest

from kclient import Producer, ProducerData, consumer
from kclient.broker import MiniBroker
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.errors import (
    InvalidConfigError,
    KafkaConnectionError,
    SaslAuthenticationError,
    SecurityProtocolError,
)
from kclient.protocol.apis import METADATA
from kclient.security import SecuritySettings
from kclient.simple import FetchRequest, SimpleConsumer

from ..hostile import HostileBroker
from ..waiting import LOAD_SLACK
from .conftest import SASL_LISTENERS, sasl_client, tls_broker_config

COMBINATIONS = [
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
]


def _produce(bootstrap, security, values=(b"v",), topic="t"):
    with Producer(
        {
            "bootstrap.servers": bootstrap,
            "message.send.max.retries": 1,
            "retry.backoff.ms": 10,
            **security,
        }
    ) as p:
        p.send([ProducerData(topic, v) for v in values])


def _fetch_all(address, security, topic="t", partition=0):
    host, port = address.rsplit(":", 1)
    with SimpleConsumer(host, int(port), security=security) as c:
        return [m.message.value for m in c.fetch(FetchRequest(topic, partition, 0, 1 << 20))]


def _connection(address, security, **overrides):
    host, port = address.rsplit(":", 1)
    settings = ConnectionSettings(security=SecuritySettings.from_keys(security), **overrides)
    return BrokerConnection(host, int(port), settings)


@pytest.mark.parametrize("protocol,mechanism", COMBINATIONS)
def test_produce_fetch_and_group_over_sasl(sasl_broker, certs, protocol, mechanism):
    address, sec = sasl_broker.bootstrap_of(protocol), sasl_client(certs, protocol, mechanism)
    sasl_broker.create_topic("g", partitions=2)
    _produce(address, sec, [b"1", b"2", b"3"], topic="g")
    fetched = _fetch_all(address, sec, "g", 0) + _fetch_all(address, sec, "g", 1)
    assert sorted(fetched) == [b"1", b"2", b"3"]
    conn = consumer.create(
        {
            "bootstrap.servers": address,
            "group.id": f"g-{mechanism}",
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 5000,
            **sec,
        }
    )
    try:
        stream = conn.create_message_streams({"g": 1})["g"][0]
        assert sorted(next(iter(stream)).message for _ in range(3)) == [b"1", b"2", b"3"]
        conn.commit_offsets()
    finally:
        conn.shutdown()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_unframed_v0_exchange(sasl_broker, certs, mechanism):
    # a client that does not ask for API versions assumes Kafka 0.10.0: SaslHandshake v0, then
    # bare tokens
    sec = sasl_client(certs, "SASL_PLAINTEXT", mechanism)
    conn = _connection(sasl_broker.bootstrap_of("SASL_PLAINTEXT"), sec, api_version_request=False)
    with conn:
        assert 36 not in conn.versions
        assert conn.request(METADATA, {"topics": []}).brokers
    bad = sasl_client(certs, "SASL_PLAINTEXT", mechanism, password="wrong")
    with pytest.raises(SaslAuthenticationError, match=f"{mechanism}.*v0 exchange"):
        _connection(
            sasl_broker.bootstrap_of("SASL_PLAINTEXT"), bad, api_version_request=False
        ).connect()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_names_mechanism_and_broker_once(sasl_broker, certs, mechanism):
    address = sasl_broker.bootstrap_of("SASL_SSL")
    bad = sasl_client(certs, "SASL_SSL", mechanism, password="wrong")
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationError) as info:
        _produce(address, bad)
    assert time.monotonic() - started < LOAD_SLACK  # refused once, not retried
    assert info.value.mechanism == mechanism and address in str(info.value)
    assert "invalid" in str(info.value).lower()
    with pytest.raises(SaslAuthenticationError):
        _fetch_all(address, bad)


def test_an_unknown_user_fails_like_a_wrong_password(sasl_broker, certs):
    sec = sasl_client(certs, "SASL_PLAINTEXT", "SCRAM-SHA-256", user="alice", password="x")
    sec["sasl.username"] = "mallory"
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        _connection(sasl_broker.bootstrap_of("SASL_PLAINTEXT"), sec).connect()


def test_after_a_failure_the_broker_is_not_retried_within_the_backoff(sasl_broker, certs):
    bad = sasl_client(
        certs, "SASL_PLAINTEXT", "PLAIN", password="wrong", **{"reconnect.backoff.max.ms": 60000}
    )
    conn = _connection(sasl_broker.bootstrap_of("SASL_PLAINTEXT"), bad)
    with pytest.raises(SaslAuthenticationError) as first:
        conn.connect()
    sasl_broker.stop()  # a new attempt would now fail differently
    with pytest.raises(SaslAuthenticationError) as second:
        conn.connect()
    assert second.value is first.value


def test_a_wrong_password_is_not_retried_in_a_storm(sasl_broker, certs):
    # every TCP connection the clients open is counted by a relay in front of the listener
    host, port = sasl_broker.bootstrap_of("SASL_PLAINTEXT").rsplit(":", 1)
    bad = sasl_client(
        certs,
        "SASL_PLAINTEXT",
        "SCRAM-SHA-256",
        password="wrong",
        **{"reconnect.backoff.max.ms": 3000},
    )
    with HostileBroker((host, int(port))) as relay:
        with pytest.raises(SaslAuthenticationError, match=f"SCRAM-SHA-256.*{relay.bootstrap}"):
            with Producer(
                {
                    "bootstrap.servers": relay.bootstrap,
                    "message.send.max.retries": 5,
                    "retry.backoff.ms": 10,
                    **bad,
                }
            ) as p:
                p.send(ProducerData("t", b"x"))
        assert relay.accepted == 1  # not one per retry
        with SimpleConsumer("127.0.0.1", relay.port, security=bad) as c:
            for _ in range(5):
                with pytest.raises(SaslAuthenticationError):
                    c.fetch(FetchRequest("t", 0, 0, 1024))
            assert relay.accepted == 2  # a second client: one attempt for five fetches
            time.sleep(3.2)  # after the backoff: one new attempt, not a burst
            for _ in range(5):
                with pytest.raises(SaslAuthenticationError):
                    c.fetch(FetchRequest("t", 0, 0, 1024))
            assert relay.accepted == 3


def test_jaas_config_is_read_as_java_reads_it(sasl_broker, certs):
    sec = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="alice" password="alice-secret";',
    }
    _produce(sasl_broker.bootstrap_of("SASL_PLAINTEXT"), sec, [b"jaas"])
    assert _fetch_all(sasl_broker.bootstrap_of("SASL_PLAINTEXT"), sec) == [b"jaas"]


def _unsecured_jwt(sub, lifetime_s=3600):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part({'sub': sub, 'exp': time.time() + lifetime_s})}."


def test_oauthbearer_with_a_token_callback(sasl_broker, certs):
    calls = []

    def token(config):
        calls.append(config)
        return _unsecured_jwt("carol"), time.time() + 3600

    sec = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "ssl.ca.location": str(certs.ca),
        "oauth_cb": token,
        "sasl.oauthbearer.config": "scope=kafka",
    }
    _produce(sasl_broker.bootstrap_of("SASL_SSL"), sec, [b"oauth"])
    assert calls and calls[0] == "scope=kafka"
    expired = dict(sec, oauth_cb=lambda _: _unsecured_jwt("carol", -10))
    with pytest.raises(SaslAuthenticationError, match="OAUTHBEARER.*expired"):
        _connection(sasl_broker.bootstrap_of("SASL_SSL"), expired).connect()


def test_reauthentication_before_the_session_runs_out(tmp_path, certs):
    config = tls_broker_config(
        certs, listeners=SASL_LISTENERS, **{"connections.max.reauth.ms": "1500"}
    )
    with MiniBroker(log_dir=tmp_path / "b", config=config, sasl_users={"alice": "pw"}) as b:
        sec = sasl_client(certs, "SASL_PLAINTEXT", "SCRAM-SHA-256", password="pw")
        sec["sasl.password"] = "pw"
        with _connection(b.bootstrap_of("SASL_PLAINTEXT"), sec) as conn:
            for _ in range(4):  # 3.2 s: two lifetimes
                assert conn.request(METADATA, {"topics": []}).brokers
                time.sleep(0.8)
        # a client that does not re-authenticate is cut off after the lifetime
        with _connection(b.bootstrap_of("SASL_PLAINTEXT"), sec) as conn:
            conn._reauth_at = None
            time.sleep(1.8)
            with pytest.raises(KafkaConnectionError, match="closed by the broker"):
                conn.request(METADATA, {"topics": []})


def test_sasl_client_on_a_plaintext_listener_says_so(sasl_broker, certs):
    sec = sasl_client(certs, "SASL_PLAINTEXT", "PLAIN")
    with pytest.raises(SecurityProtocolError, match="does not use SASL"):
        _produce(sasl_broker.bootstrap, sec)


def test_plaintext_client_on_a_sasl_listener_is_cut_off(sasl_broker):
    conn = _connection(sasl_broker.bootstrap_of("SASL_PLAINTEXT"), {})
    with conn, pytest.raises(KafkaConnectionError, match="closed by the broker"):
        conn.request(METADATA, {"topics": []})


def test_a_mechanism_the_broker_does_not_enable(tmp_path, certs):
    config = tls_broker_config(
        certs, listeners=SASL_LISTENERS, **{"sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    )
    with MiniBroker(log_dir=tmp_path / "b", config=config, sasl_users={"alice": "x"}) as b:
        sec = sasl_client(certs, "SASL_PLAINTEXT", "PLAIN", password="x")
        with pytest.raises(SaslAuthenticationError, match="does not enable PLAIN.*SCRAM-SHA-512"):
            _connection(b.bootstrap_of("SASL_PLAINTEXT"), sec).connect()


@pytest.mark.parametrize(
    "keys,match",
    [
        ({"security.protocol": "SASL_SSL"}, "needs sasl.mechanism"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "GSSAPI.*not supported"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "sasl.username"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "token.callback"),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "PlainLoginModule username=x;",
            },
            "sasl.jaas.config",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                'username="a" password="b";',
            },
            "ScramLoginModule",
        ),
    ],
)
def test_bad_sasl_keys_are_reported_at_construction(keys, match):
    with pytest.raises(InvalidConfigError, match=match):
        Producer({"bootstrap.servers": "127.0.0.1:1", **keys})


def test_a_sasl_listener_without_users_refuses_to_start(tmp_path):
    with pytest.raises(ValueError, match="SASL_PLAINTEXT uses SASL but there are no users"):
        MiniBroker(log_dir=tmp_path / "b", config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0"})
    with pytest.raises(ValueError, match="GSSAPI is not supported"):
        MiniBroker(
            log_dir=tmp_path / "b",
            config={
                "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms": "GSSAPI",
            },
            sasl_users={"a": "b"},
        )


def test_a_scram_answer_that_does_not_verify_raises_scram_verify_error():
    """A server-first with another nonce, then a server signature that does not match: both
    are refused as ScramVerifyError (scramp's exception, kept out of the import path)."""
    from kclient.security.sasl import SaslConfig, ScramVerifyError, mechanism

    cfg = SaslConfig("SCRAM-SHA-256", "alice", "secret")
    m = mechanism(cfg)
    m.first()
    with pytest.raises(ScramVerifyError):
        m.step(b"r=not-my-nonce,s=c2FsdHNhbHRzYWx0c2FsdA==,i=4096")
    m = mechanism(cfg)
    nonce = m.first().decode().split("r=", 1)[1]
    m.step(f"r={nonce}server,s=c2FsdHNhbHRzYWx0c2FsdA==,i=4096".encode())
    with pytest.raises(ScramVerifyError):
        m.step(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
