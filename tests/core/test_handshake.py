"""The connection handshake of kclient.core.handshake, run by both drivers: ApiVersions with the
downgrade retry (KIP-511) and the old-broker fallback, every SASL mechanism over SaslHandshake v1
+ SaslAuthenticate and over v0's bare tokens (a RawExchange), and re-authentication (KIP-368).

``open_conn`` opens a connection of either driver (parametrized ``threaded`` / ``asyncio``), so
each behaviour is checked through both; ``drive`` runs one conversation on the mini-broker."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
import time

import pytest

import kclient
from kclient.aio.connection import AIOConnection
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.core.handshake import HandshakeConfig, api_versions, reauth_due
from kclient.core.steps import RawExchange, exchange_of
from kclient.errors import KafkaConnectionError, KafkaTimeoutError, SaslAuthenticationError
from kclient.protocol.apis import API_VERSIONS, METADATA, PRODUCE, SASL_AUTHENTICATE
from kclient.protocol.framing import ServerProtocol
from kclient.security import SecuritySettings
from tests.old_broker import serve_like_0_9
from tests.security.conftest import certs, sasl_broker, sasl_client  # noqa: F401 - fixtures

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.fixture(params=["threaded", "asyncio"])
def open_conn(request):
    """``open_conn(address, settings, work)``: connect with this parameter's driver, call
    ``work(request_metadata)`` and return ``(versions, work's result)``; the connection is
    closed after.  ``request_metadata()`` answers a Metadata request on that connection."""

    def threaded(address, settings, work=lambda ask: None):
        host, port = address.rsplit(":", 1)
        with BrokerConnection(host, int(port), settings) as conn:
            return conn.versions, work(lambda: conn.request(METADATA, {"topics": []}))

    def in_loop(address, settings, work=lambda ask: None):
        host, port = address.rsplit(":", 1)

        async def main():
            conn = await AIOConnection(host, int(port), settings).connect()
            loop = asyncio.get_running_loop()

            def ask():  # work runs in a thread; each request on the connection's loop
                return asyncio.run_coroutine_threadsafe(
                    conn.request(METADATA, {"topics": []}), loop
                ).result()

            try:
                return conn.versions, await asyncio.to_thread(work, ask)
            finally:
                await conn.wait_closed()

        return asyncio.run(main())

    return threaded if request.param == "threaded" else in_loop


def _sasl_settings(certs, mechanism, protocol="SASL_PLAINTEXT", **overrides):  # noqa: F811
    keys = sasl_client(certs, protocol, mechanism, **overrides.pop("keys", {}))
    return ConnectionSettings(
        client_id="handshake-test", security=SecuritySettings.from_keys(keys), **overrides
    )


def test_api_versions_through_both_drivers(drive, mini_broker):
    host, port = mini_broker.bootstrap.split(":")
    cfg = HandshakeConfig(host, int(port), kclient.__version__)
    versions, reopen, follow_up = drive(lambda: api_versions(cfg))
    assert not reopen and follow_up is None
    assert versions[API_VERSIONS.key][1] >= 3 and METADATA.key in versions


def test_no_api_version_request_assumes_the_fallback_without_a_request():
    cfg = HandshakeConfig("h", 1, "x", api_version_request=False, broker_version_fallback="0.9.0")
    conversation = api_versions(cfg)
    with pytest.raises(StopIteration) as done:
        next(conversation)  # returns before yielding any request
    assert done.value.value.versions[PRODUCE.key] == (0, 1)


class _ApiVersionsBroker:
    """A broker on a thread that answers ApiVersions, at most ``top`` (an older broker), and
    Metadata (empty) at any version; it closes the first ``close_first`` connections on
    their first request (a broker restarting, or a proxy whose backend is away); ``old``:
    every connection is a broker before 0.10's (:func:`tests.old_broker.serve_like_0_9`)."""

    def __init__(self, top: int = 3, close_first: int = 0, old: bool = False) -> None:
        self.top, self.close_first, self.old = top, close_first, old
        self.asked: list[tuple[int, str | None]] = []  # (version, client software version)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.accepted = threading.Semaphore(0)  # released once per connection accepted
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        n = 0
        while True:
            try:
                c, _ = self.server.accept()
            except OSError:
                return
            self.conns.append(c)
            self.accepted.release()
            threading.Thread(
                target=self._serve, args=(c, n < self.close_first), daemon=True
            ).start()
            n += 1

    def _serve(self, c: socket.socket, close: bool) -> None:
        if self.old:
            serve_like_0_9(c)
            return
        try:
            self._answer(c, close)
        except OSError:  # closed by close() at the end of the test
            pass

    def _answer(self, c: socket.socket, close: bool) -> None:
        proto = ServerProtocol({API_VERSIONS.key: API_VERSIONS, METADATA.key: METADATA})
        while data := c.recv(65536):
            if close:
                c.close()
                return
            for req in proto.receive_bytes(data):
                if req.header.api_key == METADATA.key:
                    c.sendall(proto.encode_response(req.header, {"brokers": [], "topics": []}))
                    continue
                version = req.header.api_version
                self.asked.append(
                    (
                        version,
                        req.body.client_software_version
                        if version >= 3 and req.body is not None
                        else None,
                    )
                )
                keys = [{"api_key": API_VERSIONS.key, "min_version": 0, "max_version": self.top}]
                if version > self.top:  # KIP-511: a v0 answer naming what it does support
                    body = {"error_code": 35, "api_keys": keys}
                    c.sendall(proto.encode_response(req.header, body, 0))
                else:
                    keys.append({"api_key": METADATA.key, "min_version": 0, "max_version": 9})
                    c.sendall(
                        proto.encode_response(req.header, {"error_code": 0, "api_keys": keys})
                    )

    def close(self) -> None:
        self.server.close()
        for c in self.conns:
            c.close()


def test_an_older_broker_answers_unsupported_version_and_the_client_asks_again(open_conn):
    broker = _ApiVersionsBroker(top=2)
    try:
        versions, _ = open_conn(f"127.0.0.1:{broker.port}", ConnectionSettings())
    finally:
        broker.close()
    assert [v for v, _ in broker.asked] == [API_VERSIONS.max_version, 2]
    assert versions[API_VERSIONS.key] == (0, 2) and versions[METADATA.key] == (0, 9)


def test_the_client_software_version_is_kclients_one_version(open_conn):
    broker = _ApiVersionsBroker(top=API_VERSIONS.max_version)
    try:
        open_conn(f"127.0.0.1:{broker.port}", ConnectionSettings())
    finally:
        broker.close()
    assert broker.asked == [(API_VERSIONS.max_version, kclient.__version__)]


def test_a_broker_closing_on_api_versions_gets_the_fallback_versions(open_conn):
    """A broker before 0.10 closes on every ApiVersions and answers Metadata v0: asked on two
    connections, probed on a third, then the fallback versions are used on a fourth."""
    broker = _ApiVersionsBroker(old=True)
    try:
        versions, _ = open_conn(
            f"127.0.0.1:{broker.port}", ConnectionSettings(broker_version_fallback="0.8.2")
        )
        assert all(broker.accepted.acquire(timeout=30) for _ in range(4)), (
            "the client asks again on a new connection, probes on a third, then opens one "
            "for the fallback"
        )
    finally:
        broker.close()
    assert versions[PRODUCE.key] == (0, 0)


@pytest.mark.parametrize("closes", [1, 2])
def test_closes_then_an_answer_are_a_broker_that_was_starting(open_conn, closes):
    """A broker that closes one or two connections on ApiVersions (restarting, or behind a
    proxy whose backend was away) and then answers gets its own versions, not the fallback
    (issue 25: such connections were taken for 0.10.0 brokers for their life, and the chaos
    harness's idempotent sends failed with UNSUPPORTED_VERSION)."""
    broker = _ApiVersionsBroker(close_first=closes)
    try:
        versions, _ = open_conn(
            f"127.0.0.1:{broker.port}", ConnectionSettings(broker_version_fallback="0.10.0")
        )
    finally:
        broker.close()
    assert versions[API_VERSIONS.key] == (0, 3) and versions[METADATA.key] == (0, 9)


def test_closes_on_every_request_are_a_failed_connection_not_an_old_broker(open_conn):
    """A broker that closes on ApiVersions twice and on the Metadata v0 probe (starting up,
    a proxy whose backend is away) is a failed, retriable connection: the next connect gets
    the broker's versions once it answers."""
    broker = _ApiVersionsBroker(close_first=3)
    address = f"127.0.0.1:{broker.port}"
    settings = ConnectionSettings(broker_version_fallback="0.10.0")
    try:
        with pytest.raises(KafkaConnectionError, match="not a broker before 0.10") as failed:
            open_conn(address, settings)
        assert failed.value.retriable
        versions, _ = open_conn(address, settings)
    finally:
        broker.close()
    assert versions[API_VERSIONS.key] == (0, 3) and versions[METADATA.key] == (0, 9)


@pytest.mark.parametrize("mechanism", MECHANISMS + ["OAUTHBEARER"])
def test_every_mechanism_over_sasl_authenticate(open_conn, sasl_broker, certs, mechanism):  # noqa: F811
    keys = {}
    if mechanism == "OAUTHBEARER":
        keys = {"oauth_cb": lambda _: _unsecured_jwt("carol")}
    settings = _sasl_settings(
        certs, "PLAIN" if mechanism == "OAUTHBEARER" else mechanism, keys=keys
    )
    if mechanism == "OAUTHBEARER":
        settings = settings.replace(
            security=SecuritySettings.from_keys(
                {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", **keys}
            )
        )
    versions, brokers = open_conn(
        sasl_broker.bootstrap_of("SASL_PLAINTEXT"), settings, lambda ask: ask().brokers
    )
    assert SASL_AUTHENTICATE.key in versions and brokers


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_bare_token_exchange_of_sasl_handshake_v0(open_conn, sasl_broker, certs, mechanism):  # noqa: F811
    # no ApiVersions: the fallback (0.10.0) has no SaslAuthenticate, so v0 and bare tokens
    settings = _sasl_settings(certs, mechanism, api_version_request=False)
    address = sasl_broker.bootstrap_of("SASL_PLAINTEXT")
    versions, brokers = open_conn(address, settings, lambda ask: ask().brokers)
    assert SASL_AUTHENTICATE.key not in versions and brokers
    bad = _sasl_settings(certs, mechanism, api_version_request=False, keys={"password": "wrong"})
    with pytest.raises(SaslAuthenticationError, match=f"{mechanism}.*v0 exchange"):
        open_conn(address, bad)


def test_a_wrong_password_names_mechanism_and_broker(open_conn, sasl_broker, certs):  # noqa: F811
    bad = _sasl_settings(certs, "SCRAM-SHA-256", keys={"password": "wrong"})
    with pytest.raises(SaslAuthenticationError, match="SCRAM-SHA-256"):
        open_conn(sasl_broker.bootstrap_of("SASL_PLAINTEXT"), bad)


def test_reauthentication_keeps_the_connection_past_its_session(open_conn, tmp_path, certs):  # noqa: F811
    from kclient.broker import MiniBroker
    from tests.security.conftest import SASL_LISTENERS, tls_broker_config

    config = tls_broker_config(
        certs, listeners=SASL_LISTENERS, **{"connections.max.reauth.ms": "1500"}
    )
    with MiniBroker(log_dir=tmp_path / "b", config=config, sasl_users={"alice": "pw"}) as b:
        settings = _sasl_settings(certs, "SCRAM-SHA-512", keys={"password": "pw"})

        def across_two_lifetimes(ask):
            answers = []
            for _ in range(4):  # 3.2 s; the broker cuts a session off at 1.5 s
                answers.append(bool(ask().brokers))
                time.sleep(0.8)
            return answers

        _, answers = open_conn(b.bootstrap_of("SASL_PLAINTEXT"), settings, across_two_lifetimes)
    assert answers == [True] * 4


def test_reauth_is_due_at_nine_tenths_of_the_lifetime():
    assert reauth_due(None, 100.0) is None
    assert reauth_due(10.0, 100.0) == pytest.approx(109.0)


def test_a_raw_exchange_needs_a_transport_bound_to_one_connection():
    class ClusterLike:
        def send(self, request): ...

    with pytest.raises(TypeError, match="ClusterLike is not bound to one connection"):
        exchange_of(ClusterLike())
    assert RawExchange(b"t").token == b"t"


def test_a_silent_broker_times_the_handshake_out_naming_api_versions(open_conn):
    # a broker that accepts and never answers: the connect gives up after the request timeout
    server = socket.create_server(("127.0.0.1", 0))
    settings = ConnectionSettings(request_timeout_ms=1000)
    try:
        with pytest.raises(KafkaTimeoutError, match="ApiVersions exchange failed"):
            open_conn(f"127.0.0.1:{server.getsockname()[1]}", settings)
    finally:
        server.close()


def _unsecured_jwt(sub, lifetime_s=3600):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part({'sub': sub, 'exp': time.time() + lifetime_s})}."
