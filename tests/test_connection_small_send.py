"""A small request written with the GIL held (``kclient/io/_sock.pyx``'s ``send_small``): what
the socket takes at once, the rest by the usual ``sendall``.  On socket pairs and a plain TCP
peer that stops reading: every byte arrives once and in order, a full buffer waits, a closed
peer fails as the connection's own send error."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

import kclient.connection as connection
from kclient.connection import SMALL_SEND_BYTES, BrokerConnection
from kclient.errors import KafkaConnectionError
from kclient.protocol.apis import METADATA
from tests.needs import c_twin

pytestmark = c_twin(connection._sock, "the C socket calls")


def test_send_small_writes_what_the_socket_takes_and_no_more():
    a, b = socket.socketpair()
    with a, b:
        send_small = connection._sock.send_small
        assert send_small(a.fileno(), b"hello") == 5 and b.recv(10) == b"hello"
        assert send_small(a.fileno(), bytearray(b"")) == 0
        taken, chunk = 0, bytes(range(256)) * 16
        while (k := send_small(a.fileno(), chunk)) == len(chunk):
            taken += k
        taken += k  # a part of the last chunk, or none: the buffer is full
        assert send_small(a.fileno(), chunk) == 0  # it does not wait
        got = bytearray()
        b.settimeout(5)
        while len(got) < taken:
            got += b.recv(1 << 16)
        assert len(got) == taken and got == (chunk * (taken // len(chunk) + 1))[:taken]


def test_send_small_to_a_closed_peer_raises_instead_of_a_signal():
    a, b = socket.socketpair()
    with a:
        b.close()
        with pytest.raises(BrokenPipeError):
            connection._sock.send_small(a.fileno(), b"x")


class SlowPeer:
    """A plain TCP peer that takes one request only once told to, and answers nothing."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.go = threading.Event()
        self.frame = b""
        self.thread = threading.Thread(target=self._take, daemon=True)
        self.thread.start()

    def _take(self) -> None:
        peer, _ = self.server.accept()
        with peer:
            self.go.wait(10)
            size = _recv_exactly(peer, 4)
            self.frame = size + _recv_exactly(peer, struct.unpack(">i", size)[0])

    def close(self) -> None:
        self.go.set()
        self.thread.join(10)
        self.server.close()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        k = sock.recv(n - len(out))
        assert k, "the client closed mid-request"
        out += k
    return bytes(out)


def test_a_request_the_buffer_cannot_take_at_once_arrives_whole():
    peer = SlowPeer()
    try:
        host, port = peer.server.getsockname()
        conn = BrokerConnection(
            host, port, api_version_request=False, send_buffer_bytes=4096
        ).connect()
        returned: list[tuple[int, int]] = []
        real = conn._send_small

        def spy(fd: int, frame: bytes) -> int:
            returned.append((real(fd, frame), len(frame)))
            return returned[-1][0]

        conn._send_small = spy
        topics = [f"topic-{i:05d}" for i in range(SMALL_SEND_BYTES // 16)]
        threading.Timer(0.3, peer.go.set).start()  # the sendall of the rest waits for it
        with conn:
            conn.send(METADATA, {"topics": [{"name": t} for t in topics]}, 4, False)
            peer.thread.join(10)
        ((sent, size),) = returned
        assert size <= SMALL_SEND_BYTES and 0 <= sent < size  # the rest went by sendall
        assert len(peer.frame) == size
        names = [t.encode() for t in topics]
        assert peer.frame.count(b"topic-") == len(names)
        assert all(peer.frame.index(x) < peer.frame.index(y) for x, y in zip(names, names[1:]))
    finally:
        peer.close()


def test_a_peer_gone_fails_as_the_connections_send_error():
    server = socket.create_server(("127.0.0.1", 0))
    with server:
        host, port = server.getsockname()
        conn = BrokerConnection(host, port, api_version_request=False).connect()
        peer, _ = server.accept()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()  # a reset
        with pytest.raises(KafkaConnectionError, match="send failed|closed by the broker"):
            for _ in range(50):  # the reset may take a send to surface
                conn.send(METADATA, {"topics": []}, 4)
        assert not conn.connected
