"""A close from another thread (or task) always wakes whoever waits on the connection.

The interleavings are forced with events, not left to chance: a reader that has taken the
socket's descriptor but not yet started waiting on it (the window in which CPython's ``recv``
has read the descriptor number and released the GIL before ``poll``), and a close that lands
while :meth:`connect` is opening the socket.  Before the fix the first one let the descriptor
number go to the next socket opened, so the reader waited on a stranger's socket for the whole
request timeout (a ZooKeeper connector's fetcher held its rebalance that way), and the second
one was lost: the connection came up after it had been closed.
"""

from __future__ import annotations

import asyncio
import os
import queue
import socket
import threading

import pytest

from kclient import connection as conn_module
from kclient.aio.connection import AIOConnection
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.errors import KafkaConnectionError
from kclient.protocol.apis import METADATA

WAIT = 30.0  # a bound for the test's own waits; each one is over as soon as the event fires


@pytest.fixture
def silent_broker():
    """A listener on 127.0.0.1 that accepts and never answers; yields (port, a queue of the
    accepted sockets)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: queue.Queue[socket.socket] = queue.Queue()
    stop = threading.Event()

    def serve():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.put(server.accept()[0])
            except TimeoutError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield server.getsockname()[1], accepted
    stop.set()
    t.join()
    server.close()
    while not accepted.empty():
        accepted.get().close()


SETTINGS = ConnectionSettings(
    client_id="close-test", api_version_request=False, request_timeout_ms=60000
)


class _EnteringReader:
    """The connection's socket, whose ``recv_into`` stops where CPython's does: descriptor
    taken, not yet waiting on it, until the test says go."""

    def __init__(self, real: socket.socket) -> None:
        self.real = real
        self.fd = real.fileno()
        self.entered = threading.Event()
        self.go = threading.Event()

    def recv_into(self, view, n):
        self.entered.set()
        assert self.go.wait(WAIT)
        return self.real.recv_into(view, n)

    def __getattr__(self, name):
        return getattr(self.real, name)


def _inode(fd: int) -> int | None:
    try:
        return os.fstat(fd).st_ino
    except OSError:
        return None


def test_close_keeps_the_descriptor_a_reader_holds_and_wakes_it(silent_broker):
    port, _ = silent_broker
    conn = BrokerConnection("127.0.0.1", port, SETTINGS).connect()
    sock = _EnteringReader(conn._sock)
    conn._sock = sock
    inode = _inode(sock.fd)
    corr = conn.send(METADATA, {"topics": None}, 1)
    outcome: list[BaseException | None] = []

    def read():
        try:
            conn.receive(corr)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    assert sock.entered.wait(WAIT)
    conn.close("the fetcher was stopped")
    # the reader holds the descriptor number: it must still be this socket, not free for the
    # next socket the process opens
    assert _inode(sock.fd) == inode, "close() released a descriptor a reader was using"
    sock.go.set()
    reader.join(WAIT)
    assert not reader.is_alive()
    assert isinstance(outcome[0], KafkaConnectionError)
    assert "the fetcher was stopped" in str(outcome[0])
    assert _inode(sock.fd) != inode, "the last thread out releases the descriptor"


def test_close_while_connecting_cancels_the_connect(silent_broker, monkeypatch):
    port, accepted = silent_broker
    opened, closed = threading.Event(), threading.Event()
    real_create = socket.create_connection

    def create_connection(*args, **kwargs):
        sock = real_create(*args, **kwargs)
        opened.set()
        assert closed.wait(WAIT)
        return sock

    monkeypatch.setattr(conn_module.socket, "create_connection", create_connection)
    conn = BrokerConnection("127.0.0.1", port, SETTINGS)
    outcome: list[BaseException | None] = []

    def connect():
        try:
            conn.connect()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome.append(exc)

    t = threading.Thread(target=connect)
    t.start()
    assert opened.wait(WAIT)
    conn.close("the fetcher was stopped")
    closed.set()
    t.join(WAIT)
    assert isinstance(outcome[0], KafkaConnectionError), outcome
    assert "closed while connecting: the fetcher was stopped" in str(outcome[0])
    assert not conn.connected
    first = accepted.get(timeout=WAIT)
    first.settimeout(WAIT)
    assert first.recv(1) == b"", "the socket opened for a cancelled connect is closed"
    first.close()
    monkeypatch.undo()
    assert conn.connect().connected, "a later connect opens the connection again"
    conn.close()


def test_asyncio_close_while_connecting_cancels_the_connect(silent_broker, monkeypatch):
    port, accepted = silent_broker

    async def main():
        opened, closed = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()
        real_open = loop.create_connection

        async def create_connection(*args, **kwargs):
            opening = await real_open(*args, **kwargs)
            opened.set()
            await closed.wait()
            return opening

        monkeypatch.setattr(loop, "create_connection", create_connection)
        conn = AIOConnection("127.0.0.1", port, SETTINGS)
        task = asyncio.ensure_future(conn.connect())
        await opened.wait()
        conn.close("the consumer was stopped")
        closed.set()
        with pytest.raises(
            KafkaConnectionError, match="closed while connecting: the consumer was stopped"
        ):
            await task
        assert not conn.connected
        monkeypatch.undo()
        again = await AIOConnection("127.0.0.1", port, SETTINGS).connect()
        assert again.connected
        await again.wait_closed()

    asyncio.run(main())
    first = accepted.get(timeout=WAIT)
    first.settimeout(WAIT)
    assert first.recv(1) == b"", "the stream opened for a cancelled connect is closed"
    first.close()


def test_asyncio_close_wakes_a_drain_the_broker_does_not_read(silent_broker):
    """A writer waiting for a broker that reads nothing (its send buffer full) is woken by close:
    unsent bytes are dropped rather than waited for, by drain() and by wait_closed()."""
    port, _ = silent_broker

    async def main():
        conn = await AIOConnection("127.0.0.1", port, SETTINGS).connect()
        transport = conn._transport
        while not transport.get_write_buffer_size():  # past the kernel's buffers
            transport.write(b"\0" * (1 << 20))
            await asyncio.sleep(0)
        draining = asyncio.ensure_future(conn.drain())
        await asyncio.sleep(0)
        assert not draining.done(), "the broker reads nothing: drain() must be waiting"
        conn.close("the producer was closed")
        await asyncio.wait_for(draining, WAIT)
        await asyncio.wait_for(conn.wait_closed(), WAIT)

    asyncio.run(main())
