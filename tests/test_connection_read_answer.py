"""An answer waited for and read whole in C with the GIL let go (``kclient/io/_sock.pyx``'s
``read_answer``, called by ``BrokerConnection._whole``): Kafka writes a Fetch answer in pieces,
and the reader's Python should wake once per answer, not twice per piece.  On socket pairs and
through a relay to the mini-broker that splits every answer: the bytes arrive whole and in
order and no further, a deadline, a closed peer, a stall and a signal stop it short, and the
connection then names the cause (or, for a signal, lets Python's handler run at once)."""

from __future__ import annotations

import select
import signal
import socket
import struct
import threading
import time

import pytest

import kclient.connection as connection
from kclient.connection import BrokerConnection
from kclient.core.fetch import FetchSettings, PartitionFetch, fetch_body
from kclient.errors import KafkaTimeoutError
from kclient.protocol.apis import FETCH
from kclient.protocol.fetch_one import read_one_partition
from kclient.protocol.records import build_batch
from tests.broker.txn_support import produce
from tests.needs import c_twin, not_applicable
from tests.test_connection_whole import connect, fetched, values

pytestmark = c_twin(connection._sock, "the C socket calls")
read_answer = getattr(connection._sock, "read_answer", None)


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.settimeout(5.0)  # non-blocking underneath, as the connection's socket
    return a, b


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _drained(sock: socket.socket) -> bool:
    """Whether nothing waits in ``sock`` to be read (asked from another thread)."""
    return not select.select([sock], [], [], 0)[0]


def test_read_answer_reads_a_frame_in_pieces_and_no_further():
    a, b = _pair()
    with a, b:
        buf = bytearray(64)
        frame = _frame(b"abcdefghij")
        # each piece sent once the one before was read: the head alone, then the rest of the
        # frame with the next frame's first bytes behind it in the same write
        pieces = (frame[:2], frame[2:7], frame[7:] + b"NEXT")

        def send() -> None:
            for piece in pieces:
                deadline = time.monotonic() + 5
                while not _drained(a) and time.monotonic() < deadline:
                    time.sleep(0.001)
                time.sleep(0.01)  # (and the reader back in its wait)
                b.sendall(piece)

        t = threading.Thread(target=send)
        t.start()
        got = read_answer(a.fileno(), buf, time.monotonic() + 5)
        t.join()
        assert got == (14, 0, 0) and bytes(buf[:14]) == frame
        assert a.recv(16) == b"NEXT"  # the next frame's bytes stay in the socket


def test_read_answer_takes_what_one_read_finds_of_frames_beyond_the_buffer():
    a, b = _pair()
    with a, b:
        b.sendall(_frame(b"x" * 100))
        time.sleep(0.05)
        got, why, _ = read_answer(a.fileno(), bytearray(32), time.monotonic() + 5)
        assert (got, why) == (32, 0)  # the rest is the general path's to read


def test_read_answer_stops_short_at_its_deadline_and_at_a_closed_peer():
    a, b = _pair()
    with a:
        t0 = time.monotonic()
        assert read_answer(a.fileno(), bytearray(32), t0 + 0.2) == (0, 1, 0)
        waited = time.monotonic() - t0
        assert 0.15 <= waited < 3.0, waited  # it waited for the deadline, and not for ever
        b.sendall(_frame(b"12345")[:6])
        assert read_answer(a.fileno(), bytearray(32), time.monotonic() + 0.2) == (6, 1, 0)
        b.sendall(b"3")
        b.close()
        assert read_answer(a.fileno(), bytearray(32), time.monotonic() + 5) == (1, 2, 0)
        assert read_answer(a.fileno(), bytearray(32), time.monotonic() + 5) == (0, 2, 0)


def test_read_answer_refuses_a_buffer_too_small_for_a_frames_head():
    a, b = _pair()
    with a, b, pytest.raises(ValueError, match="a buffer of 7 bytes"):
        read_answer(a.fileno(), bytearray(7), time.monotonic() + 1)


def test_a_signal_while_waiting_reaches_python_at_once(mini_broker):
    if threading.current_thread() is not threading.main_thread():
        not_applicable("signals reach the main thread only")
    mini_broker.create_topic("w", 1)
    with connect(mini_broker) as conn:

        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        old = signal.signal(signal.SIGALRM, interrupt)
        try:
            body = fetch_body([PartitionFetch("w", 0, 0)], FetchSettings(max_wait_ms=5000))
            corr = conn.send(FETCH, body, 12, reader=read_one_partition)
            t0 = time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            with pytest.raises(KeyboardInterrupt):
                conn.receive(corr)  # an empty partition: the broker waits 5 s to answer
            assert time.monotonic() - t0 < 3.0  # not held up until the answer came
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        assert not conn.connected  # the answer is lost with the wait: the stream is torn


class SplittingRelay:
    """A TCP relay to ``target`` that writes each answer to the client in three pieces, a few
    milliseconds apart (as Kafka writes a Fetch answer: head, records, tail), or with
    ``stall_after`` stops after that many bytes of the first answer."""

    def __init__(self, target: tuple[str, int], stall_after: int | None = None) -> None:
        self.target, self.stall_after = target, stall_after
        self.server = socket.create_server(("127.0.0.1", 0))
        self.pieces = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.getsockname()[:2]
        return host, port

    def _run(self) -> None:
        client, _ = self.server.accept()
        upstream = socket.create_connection(self.target)
        with client, upstream:
            threading.Thread(target=self._up, args=(client, upstream), daemon=True).start()
            while not self._stop.is_set():
                data = upstream.recv(1 << 16)
                if not data:
                    return
                if self.stall_after is not None:
                    client.sendall(data[: self.stall_after])
                    self._stop.wait(30)
                    return
                cuts = [0, min(20, len(data)), max(len(data) - 3, 20), len(data)]
                for i, j in zip(cuts, cuts[1:]):
                    if i < j:
                        client.sendall(data[i:j])
                        self.pieces += 1
                        time.sleep(0.005)

    @staticmethod
    def _up(client: socket.socket, upstream: socket.socket) -> None:
        try:
            while data := client.recv(1 << 16):
                upstream.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self.server.close()


def _through(relay: SplittingRelay, **overrides: object) -> BrokerConnection:
    host, port = relay.address
    return BrokerConnection(host, port, **overrides).connect()


def test_an_answer_in_pieces_is_read_in_c_and_whole(mini_broker):
    mini_broker.create_topic("w", 1)
    assert produce(mini_broker, "w", 0, [], batch=build_batch([b"a" * 300, b"b"])).error_code == 0
    host, port = mini_broker.bootstrap.rsplit(":", 1)
    relay = SplittingRelay((host, int(port)))
    try:
        with _through(relay) as conn:
            calls: list[tuple[int, int, int]] = []
            real = conn._read_answer
            assert real is not None

            def spy(fd: int, buf: bytearray, deadline: float) -> tuple[int, int, int]:
                calls.append(real(fd, buf, deadline))
                return calls[-1]

            def no_python_recv(*args: object) -> int:
                raise AssertionError("the rest of the frame was read by Python recv calls")

            conn._read_answer = spy
            conn._recv_some = no_python_recv  # type: ignore[method-assign]
            before = relay.pieces
            for offset in (0, 1, 0):
                part = fetched(conn, offset)
                assert values(part) == [b"a" * 300, b"b"] and part.high_watermark == 2
            assert relay.pieces - before >= 9  # each answer came in three pieces
            assert len(calls) == 3  # one C read per answer, each whole, none short
            assert all(got > 300 and why == 0 for got, why, _ in calls), calls
            assert conn.in_flight == 0
    finally:
        relay.close()


def test_a_stall_mid_frame_times_out_naming_how_far_it_got(mini_broker):
    mini_broker.create_topic("w", 1)
    assert produce(mini_broker, "w", 0, [], batch=build_batch([b"c" * 200])).error_code == 0
    host, port = mini_broker.bootstrap.rsplit(":", 1)
    stalled = SplittingRelay((host, int(port)), stall_after=30)
    try:
        conn = _through(stalled, api_version_request=False, request_timeout_ms=400)
        t0 = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match=r"within 0\.4s \(correlation id \d+, 26 of"):
            fetched(conn, 0)
        assert time.monotonic() - t0 < 5.0  # the C read kept the request's deadline
        assert not conn.connected
    finally:
        stalled.close()
