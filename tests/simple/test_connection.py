"""BrokerConnection: version fallback for brokers without ApiVersions, timeouts, closed peers."""

import socket
import threading

import pytest

from kclient.connection import BrokerConnection
from kclient.errors import KafkaConnectionError, KafkaTimeoutError
from kclient.protocol.apis import FETCH, METADATA
from tests.old_broker import serve_like_0_9


class Stub:
    """A listening socket whose connections each run ``behaviours[i]`` (a callable on conn)."""

    def __init__(self, *behaviours):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.behaviours = list(behaviours)
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        for behaviour in self.behaviours:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed by close(): the client needed no more connections
                return
            self.conns.append(conn)
            behaviour(conn)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def read_then_close(conn):
    conn.recv(1024)
    conn.close()


def stay_silent(conn):
    conn.recv(1024)


def test_falls_back_when_the_broker_closes_on_api_versions():
    """A broker before 0.10 closes on ApiVersions every time and answers Metadata v0: asked
    twice, probed on a third connection, then the fallback versions on a fourth."""
    stub = Stub(serve_like_0_9, serve_like_0_9, serve_like_0_9, stay_silent)
    try:
        conn = BrokerConnection("127.0.0.1", stub.port, broker_version_fallback="0.8.2")
        conn.connect()
        assert conn.version(FETCH) == 0 and conn.version(METADATA) == 0
        conn.close()
    finally:
        stub.close()


def test_no_response_within_the_timeout():
    stub = Stub(stay_silent)
    try:
        conn = BrokerConnection(
            "127.0.0.1", stub.port, request_timeout_ms=200, api_version_request=False
        )
        conn.connect()
        with pytest.raises(KafkaTimeoutError):
            conn.request(METADATA, {"topics": []})
        assert not conn.connected
    finally:
        stub.close()


def test_broker_closing_mid_request_is_a_connection_error():
    stub = Stub(read_then_close)
    try:
        conn = BrokerConnection("127.0.0.1", stub.port, api_version_request=False)
        conn.connect()
        with pytest.raises(KafkaConnectionError, match="closed by the broker"):
            conn.request(METADATA, {"topics": []})
        with pytest.raises(KafkaConnectionError):
            conn.send(METADATA, {"topics": []})
    finally:
        stub.close()


def test_cannot_connect():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = r"connection to 127\.0\.0\.1:\d+ failed: .*Connection refused"
    with pytest.raises(KafkaConnectionError, match=refused):
        BrokerConnection("127.0.0.1", port).connect()


def test_pipelined_responses_are_matched_by_correlation_id(target):
    with BrokerConnection(target.host, target.port) as conn:
        a = conn.send(METADATA, {"topics": None})
        b = conn.send(METADATA, {"topics": []})
        rb, ra = conn.receive(b), conn.receive(a)
        assert ra.brokers and rb.brokers and conn.in_flight == 0
