"""``BrokerConnection.receive``'s short way (``_whole``): an answer read into the read-ahead
buffer until its frame is whole, then its reader, on the mini-broker.  Answers that come in
pieces, two answers in one recv (the second kept for its own receive), an answer larger than
the buffer, another request's answer first: each comes back whole and to its own caller, with
the connection's counters as the general path keeps them."""

from __future__ import annotations

import select
import time

import pytest

from kclient.connection import BrokerConnection
from kclient.core.fetch import FetchSettings, PartitionFetch, fetch_body
from kclient.protocol.apis import FETCH, METADATA
from kclient.protocol.fetch_one import read_one_partition
from kclient.protocol.records import build_batch
from kclient.protocol.records.reader import read_records
from tests.broker.txn_support import produce


class Pieces:
    """The connection's socket, handing out at most ``most`` bytes per recv (and, with
    ``both``, waiting first until that many bytes wait in the kernel: answers together)."""

    def __init__(self, real, most=1 << 20, both=0):
        self.real, self.most, self.both, self.recvs = real, most, both, 0

    def recv_into(self, view, n=0):
        if self.both:
            deadline = time.monotonic() + 10
            while len(self.real.recv(self.both, 2)) < self.both:  # MSG_PEEK
                assert time.monotonic() < deadline, "the answers did not come"
                select.select([self.real], [], [], 0.01)
            self.both = 0
        self.recvs += 1
        return self.real.recv_into(view, min(n or len(view), self.most))

    def __getattr__(self, name):
        return getattr(self.real, name)


def connect(b, **overrides):
    host, port = b.bootstrap.rsplit(":", 1)
    conn = BrokerConnection(host, int(port), **overrides).connect()
    return conn


def swap(conn, sock):
    conn._users.pop(conn._sock, None)  # (no call is inside it now)
    conn._sock = sock
    return sock


def fetched(conn, offset, size=1 << 20):
    body = fetch_body([PartitionFetch("w", 0, offset, size)], FetchSettings(max_wait_ms=0))
    corr = conn.send(FETCH, body, 12, reader=read_one_partition)
    return conn.receive(corr).responses[0].partitions[0]


def values(part):
    return [r.value for r in read_records(bytes(part.records))[0]]


def test_an_answer_in_pieces_is_read_whole(mini_broker):
    mini_broker.create_topic("w", 1)
    assert produce(mini_broker, "w", 0, [], batch=build_batch([b"a" * 300, b"b"])).error_code == 0
    with connect(mini_broker) as conn:
        sock = swap(conn, Pieces(conn._sock, most=7))
        before = conn.stats.responses, conn.stats.bytes_in
        part = fetched(conn, 0)
        assert values(part) == [b"a" * 300, b"b"] and part.high_watermark == 2
        assert sock.recvs > 40  # ~400 bytes, 7 at a time
        assert conn.stats.responses == before[0] + 1 and conn.stats.bytes_in > before[1] + 300
        assert conn.request(METADATA, {"topics": []}).brokers  # and the stream is in step
        assert conn.in_flight == 0


def test_two_answers_in_one_recv_each_go_to_their_caller(mini_broker):
    mini_broker.create_topic("w", 1)
    assert produce(mini_broker, "w", 0, [], batch=build_batch([b"x", b"y"])).error_code == 0
    with connect(mini_broker) as conn:
        body = fetch_body([PartitionFetch("w", 0, 1)], FetchSettings(max_wait_ms=0))
        alone = len(conn._rbuf)
        first = conn.send(FETCH, body, 12, reader=read_one_partition)
        second = conn.send(METADATA, {"topics": []})
        sock = swap(conn, Pieces(conn._sock, both=150))  # both answers in the kernel first
        part = conn.receive(first).responses[0].partitions[0]
        assert values(part) == [b"x", b"y"]  # (the batch holding offset 1, whole)
        assert sock.recvs == 1 and conn._rend > conn._rstart  # the second read ahead
        assert conn.receive(second).brokers and sock.recvs == 1  # from what was read
        assert conn.in_flight == 0 and len(conn._rbuf) == alone


def test_an_answer_larger_than_the_read_ahead_buffer_takes_the_general_path(mini_broker):
    mini_broker.create_topic("w", 1)
    big = [bytes([i]) * 30_000 for i in range(4)]  # ~120 KB, beyond the 64 KiB buffer
    assert produce(mini_broker, "w", 0, [], batch=build_batch(big)).error_code == 0
    with connect(mini_broker) as conn:
        part = fetched(conn, 0)
        assert values(part) == big
        part = fetched(conn, 0, size=1 << 20)  # again: the connection is in step
        assert values(part) == big and conn.in_flight == 0


def test_another_answer_first_is_kept_for_its_caller(mini_broker):
    mini_broker.create_topic("w", 1)
    assert produce(mini_broker, "w", 0, [], batch=build_batch([b"z"])).error_code == 0
    with connect(mini_broker) as conn:
        meta = conn.send(METADATA, {"topics": []})
        body = fetch_body([PartitionFetch("w", 0, 0)], FetchSettings(max_wait_ms=0))
        fetch = conn.send(FETCH, body, 12, reader=read_one_partition)
        part = conn.receive(fetch).responses[0].partitions[0]  # Metadata's answer comes first
        assert values(part) == [b"z"]
        assert conn.receive(meta).brokers and conn.in_flight == 0


class Interrupted(Pieces):
    """Pieces whose ``at``-th recv raises KeyboardInterrupt: a Ctrl-C in the middle of a frame."""

    def __init__(self, real, at):
        super().__init__(real, most=16)
        self.at = at

    def recv_into(self, view, n=0):
        if self.recvs + 1 == self.at:
            raise KeyboardInterrupt
        return super().recv_into(view, n)


@pytest.mark.parametrize("size", [300, 100_000], ids=["short-way", "general-path"])
def test_an_interrupt_mid_frame_drops_the_connection(mini_broker, size):
    mini_broker.create_topic("w", 1)
    assert produce(mini_broker, "w", 0, [], batch=build_batch([b"a" * size])).error_code == 0
    with connect(mini_broker) as conn:
        swap(conn, Interrupted(conn._sock, at=3))
        with pytest.raises(KeyboardInterrupt):
            fetched(conn, 0)
        assert not conn.connected  # the rest of the frame would be read as the next answer
        assert conn._closed_reason == "interrupted while reading: KeyboardInterrupt"
        conn.connect()
        assert values(fetched(conn, 0)) == [b"a" * size]
