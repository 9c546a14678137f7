"""What request frames may cost the broker: memory spent only as bytes arrive, a shared pool
(``queued.max.request.bytes``) that mutes readers when it runs out, oversize frames refused.

The first two measure a broker process's RSS through /proc while raw sockets announce large
frames; before these bounds a size prefix alone made the broker allocate (and zero) the whole
announced size, per connection."""

import logging
import threading
import time

import pytest

from kclient.broker import MiniBroker
from kclient.protocol.apis import PRODUCE
from kclient.protocol.framing import ClientProtocol
from kclient.protocol.records import build_batch
from tests.needs import not_applicable

from .limits_support import (
    BrokerChild,
    announce,
    api_versions,
    closed_by_peer,
    connect,
    push,
    wait_until,
)

MB = 1 << 20

if not hasattr(__import__("os"), "sched_getaffinity"):
    not_applicable("needs Linux /proc")


@pytest.fixture
def child(tmp_path):
    started = []

    def start(config=None, nofile=None):
        broker = BrokerChild(tmp_path / f"b{len(started)}", config, nofile)
        broker.workdir.mkdir()
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.kill()


def _settle(broker, socks_before_probe=3):
    """Round trips on fresh connections (one per network thread), so every earlier read has
    been processed, then a short pause for the allocator."""
    for _ in range(socks_before_probe):
        with connect(broker.bootstrap) as probe:
            assert api_versions(probe) == 0
    time.sleep(0.3)


def test_a_size_prefix_alone_allocates_nothing(child):
    broker = child()
    _settle(broker)
    base = broker.rss()
    socks = []
    try:
        for _ in range(16):
            s = connect(broker.bootstrap)
            announce(s, 64 * MB)
            s.sendall(b"x" * 1000)
            socks.append(s)
        _settle(broker)
        grown = broker.rss() - base
    finally:
        for s in socks:
            s.close()
    # before: 16 x 64 MB allocated and zeroed up front (about 1 GB)
    assert grown < 24 * MB, f"RSS grew by {grown / MB:.1f} MB for 16 announced 64 MB frames"


def test_the_pool_mutes_readers_until_memory_is_released(child):
    broker = child({"queued.max.request.bytes": 16 * MB, "socket.request.max.bytes": 16 * MB})
    _settle(broker)
    base = broker.rss()
    socks = []
    try:
        for _ in range(24):
            s = connect(broker.bootstrap)
            announce(s, 16 * MB)
            socks.append(s)
        push(socks, 6 * MB, time.monotonic() + 4.0)
        with connect(broker.bootstrap) as probe:  # small requests are not held back
            assert api_versions(probe) == 0
        time.sleep(0.5)
        grown = broker.rss() - base
    finally:
        for s in socks:
            s.close()
    # one frame holds the pool (Kafka's pool is non-strict: one frame may overshoot it), the
    # other 23 connections are muted; without the pool 24 x 6 MB would be read, before any
    # bound 24 x 16 MB allocated
    assert grown < 24 * MB, f"RSS grew by {grown / MB:.1f} MB with a 16 MB pool"
    # memory comes back: complete 12 MB requests on three connections are all answered in turn
    answers = []

    def produce_big():
        proto = ClientProtocol("big")
        body = {
            "acks": 1,
            "timeout_ms": 5000,
            "transactional_id": None,
            "topic_data": [
                {
                    "name": "nosuch",
                    "partition_data": [{"index": 0, "records": build_batch([b"v" * (12 * MB)])}],
                }
            ],
        }
        _, frame = proto.send_request(PRODUCE, 3, body)
        with connect(broker.bootstrap, timeout=20) as s:
            s.sendall(frame)
            while True:
                data = s.recv(65536)
                if not data:
                    answers.append("closed")
                    return
                got = proto.receive_bytes(data)
                if got:
                    answers.append(got[0][1].responses[0].partition_responses[0].error_code)
                    return

    threads = [threading.Thread(target=produce_big) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert len(answers) == 3 and "closed" not in answers, answers


def test_oversize_frame_closes_only_that_connection_and_logs_once(caplog):
    with MiniBroker(config={"socket.request.max.bytes": 4096}) as broker:
        caplog.set_level(logging.WARNING, logger="kclient.broker.network")
        bad = connect(broker.bootstrap)
        good = connect(broker.bootstrap)
        announce(bad, 4097)
        bad.sendall(b"y" * 4097)
        assert closed_by_peer(bad, 5.0)
        assert api_versions(good) == 0
        bad.close()
        good.close()
        assert wait_until(lambda: any("4097" in r.getMessage() for r in caplog.records), 5)
        lines = [r for r in caplog.records if "4097" in r.getMessage()]
        assert len(lines) == 1, [r.getMessage() for r in lines]
        assert "socket.request.max.bytes" in lines[0].getMessage()


def test_pool_is_kafkas_non_strict_simple_memory_pool():
    from kclient.broker.memory_pool import MemoryPool, pool_for

    pool = MemoryPool(100)
    woken = []
    pool.add_listener(lambda: woken.append(pool.available))
    assert pool.try_allocate(60) and pool.try_allocate(60)  # any room left: granted
    assert pool.available == -20 and pool.is_out_of_memory
    assert not pool.try_allocate(1)
    pool.release(60)
    assert woken == [40] and pool.try_allocate(10)
    assert pool_for(-1, 100) is None
    with pytest.raises(ValueError, match="socket.request.max.bytes"):
        pool_for(50, 100)
    with pytest.raises(ValueError, match="queued.max.request.bytes"):
        MiniBroker(config={"queued.max.request.bytes": 1000})


def test_reader_waits_for_the_pool_and_grows_its_buffer_as_bytes_arrive():
    import struct

    from kclient.broker.frames import FIRST_ALLOCATION, HEAD_READ, FrameReader
    from kclient.broker.memory_pool import MemoryPool
    from kclient.protocol.apis import APIS
    from kclient.protocol.framing import ServerProtocol

    from .test_produce_path import TrickleSocket, frames, produce_body, read_all

    (big,), _ = frames((PRODUCE, 3, produce_body("t", build_batch([b"z" * 3 * MB]))))
    pool = MemoryPool(4 * MB)
    assert pool.try_allocate(4 * MB)  # someone else holds the pool
    reader = FrameReader(ServerProtocol(APIS, 8 * MB).decode_frame, 8 * MB, pool)
    sock = TrickleSocket(big, sizes=(100_000,))
    assert reader.fill(sock)
    assert reader.take() == [] and reader.starved and reader.frame is None
    assert len(reader.chunk) == HEAD_READ  # nothing more read while starved
    pool.release(4 * MB)
    assert reader.take() == [] and not reader.starved
    assert len(reader.frame) == HEAD_READ - 4  # not the announced 3 MB
    assert pool.available == 4 * MB - (len(big) - 4)
    reader.fill(sock)
    assert len(reader.frame) == FIRST_ALLOCATION  # grows as bytes arrive
    while reader.got < FIRST_ALLOCATION:
        reader.fill(sock)
        assert len(reader.frame) == FIRST_ALLOCATION
    reader.fill(sock)
    assert len(reader.frame) == 2 * FIRST_ALLOCATION  # doubles only once full
    got = read_all(reader, sock)
    assert len(got) == 1 and reader.held == len(big) - 4
    reader.release_held()
    assert pool.available == 4 * MB
    assert struct.unpack(">i", big[:4])[0] == len(big) - 4
