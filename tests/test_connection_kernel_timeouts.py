"""Kernel timeouts: a blocking socket whose deadlines SO_RCVTIMEO / SO_SNDTIMEO keep.

kclient.Consumer's fetch connections run so (one system call per receive, not poll() then
recv()); the timeouts, closes and fetches must behave as on a Python-timeout socket.
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time

import pytest

from kclient import Consumer, Producer, ProducerData
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.errors import KafkaConnectionError, KafkaTimeoutError
from kclient.protocol.apis import METADATA
from kclient.security import SecuritySettings
from kclient.structs import TopicPartition

WAIT = 30.0  # a bound for the test's own waits


@pytest.fixture
def silent_port():
    """A listener on 127.0.0.1 that accepts one connection and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    t = threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True)
    t.start()
    yield server.getsockname()[1]
    t.join(WAIT)
    for s in held:
        s.close()
    server.close()


def _connect(port: int, timeout_ms: int) -> BrokerConnection:
    settings = ConnectionSettings(api_version_request=False, request_timeout_ms=timeout_ms)
    return BrokerConnection("127.0.0.1", port, settings, kernel_timeouts=True).connect()


def _rcvtimeo(sock: socket.socket) -> float:
    sec, usec = struct.unpack("@ll", sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16))
    return sec + usec / 1e6


def test_silent_broker_times_out_naming_the_request(silent_port):
    conn = _connect(silent_port, 300)
    sock = conn._sock
    assert sock is not None and sock.gettimeout() is None  # blocking: the kernel keeps time
    assert _rcvtimeo(sock) == pytest.approx(0.3, abs=0.01)
    start = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="correlation id 0"):
        conn.request(METADATA, {"topics": []})
    assert 0.25 <= time.monotonic() - start < WAIT
    assert not conn.connected


def test_close_from_another_thread_wakes_a_blocked_reader(silent_port):
    conn = _connect(silent_port, 60000)
    corr = conn.send(METADATA, {"topics": None}, 1)
    outcome: list[BaseException] = []
    waiting = threading.Event()

    def read() -> None:
        waiting.set()
        try:
            conn.receive(corr)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome.append(exc)

    reader = threading.Thread(target=read)
    start = time.monotonic()
    reader.start()
    assert waiting.wait(WAIT)
    time.sleep(0.05)  # let it block in recv (if it has not yet, the close still wins)
    conn.close("the consumer was closed")
    reader.join(WAIT)
    assert not reader.is_alive() and time.monotonic() - start < 30
    assert isinstance(outcome[0], KafkaConnectionError)
    assert "the consumer was closed" in str(outcome[0])


def test_tls_connections_keep_python_timeouts():
    tls = ConnectionSettings(security=SecuritySettings("SSL", ssl.create_default_context()))
    assert not BrokerConnection("127.0.0.1", 9, tls, kernel_timeouts=True).kernel_timeouts
    assert BrokerConnection("127.0.0.1", 9, kernel_timeouts=True).kernel_timeouts
    assert not BrokerConnection("127.0.0.1", 9).kernel_timeouts


def test_consumer_fetches_over_kernel_timeouts_and_seek_pause_still_discard(mini_broker):
    boot = mini_broker.bootstrap
    tp = TopicPartition("kernel-timeouts", 0)
    p = Producer({"metadata.broker.list": boot, "producer.type": "sync"})
    c = Consumer({"bootstrap.servers": boot, "fetch.wait.max.ms": 50})
    try:
        p.send(ProducerData(tp.topic, b"a", partition=0))
        c.assign([tp])
        c.seek(tp, 0)
        got = c.poll(10000)
        assert [r.value for r in got[tp]] == [b"a"]
        (fetcher,) = c._fetchers.values()
        assert fetcher.conn.kernel_timeouts and fetcher.conn._sock.gettimeout() is None
        assert c.poll(100) == {}  # a long poll the broker ends empty (the kernel's wait)
        p.send(ProducerData(tp.topic, b"b", partition=0))
        c.pause(tp)
        assert c.poll(200) == {}  # paused: nothing handed out
        c.resume(tp)
        c.seek(tp, 0)  # back to the start: both, in order, nothing twice
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT
        while len(values) < 2 and time.monotonic() < deadline:
            values += [r.value for r in c.poll(1000).get(tp, [])]
        assert values == [b"a", b"b"]
    finally:
        c.close()
        p.close()
