"""KafkaStream and MessageAndMetadata without a broker: queues, chunks, timeout, clear, errors."""

import queue
import threading
import time

import pytest

from kclient.consumer.stream import (
    SHUTDOWN,
    ErrorChunk,
    FetchedDataChunk,
    KafkaStream,
    MessageAndMetadata,
    PartitionTopicInfo,
)
from kclient.core.messages import Message, MessageAndOffset
from kclient.encoders import StringDecoder
from kclient.errors import ConsumerRebalanceFailedError, ConsumerTimeoutError
from tests.waiting import wait_until


def chunk(info, offsets, fetch_offset=None):
    raw = [
        MessageAndOffset.create(
            Message.create(
                key=f"k{o}".encode(),
                value=f"v{o}".encode(),
                timestamp=1000 + o,
                timestamp_type=0,
                headers=[("h", b"1")],
            ),
            o,
        )
        for o in offsets
    ]
    return FetchedDataChunk(raw, info, offsets[0] if fetch_offset is None else fetch_offset)


def setup(timeout_ms=100, **kw):
    q = queue.Queue(2)
    info = PartitionTopicInfo("t", 3, q, 0, 0, 1024, thread_id="g_c-0")
    return q, info, KafkaStream(q, timeout_ms, **kw)


def test_messages_and_consumed_offset():
    q, info, s = setup()
    q.put(chunk(info, [0, 1, 2]))
    m = next(s)
    assert isinstance(m, MessageAndMetadata)
    assert (m.topic, m.partition, m.offset, m.key, m.message) == ("t", 3, 0, b"k0", b"v0")
    assert (m.timestamp, m.timestamp_type, m.headers, m.value, m.next_offset) == (
        1000,
        0,
        [("h", b"1")],
        b"v0",
        1,
    )
    assert m._asdict()["message"] == b"v0" and "offset=0" in repr(m)
    assert info.consumed_offset == 1
    assert [x.offset for x in (next(s), next(s))] == [1, 2]
    assert info.consumed_offset == 3


def test_decoders():
    q, info, s = setup(key_decoder=StringDecoder(), value_decoder=StringDecoder())
    q.put(chunk(info, [5]))
    m = next(s)
    assert (m.key, m.message) == ("k5", "v5")


def test_records_below_the_consumed_offset_are_skipped():
    q, info, s = setup()
    info.consumed_offset = 2  # e.g. v0 compressed wrappers start earlier
    q.put(chunk(info, [0, 1, 2, 3], fetch_offset=2))
    assert [next(s).offset, next(s).offset] == [2, 3]


def test_timeout_then_resume():
    q, info, s = setup(timeout_ms=50)
    t0 = time.monotonic()
    with pytest.raises(ConsumerTimeoutError):
        next(s)
    assert time.monotonic() - t0 >= 0.045
    q.put(chunk(info, [0]))
    assert next(s).offset == 0
    with pytest.raises(ConsumerTimeoutError):
        for _ in s:
            pass


def test_clear_drops_the_current_chunk():
    q, info, s = setup()
    q.put(chunk(info, [0, 1, 2]))
    next(s)
    s.clear()
    with pytest.raises(ConsumerTimeoutError):
        next(s)
    assert info.consumed_offset == 1  # the rest is fetched again by the next owner


def test_error_chunk_raises_then_continues():
    q, info, s = setup()
    q.put(ErrorChunk(ConsumerRebalanceFailedError("boom")))
    q.put(chunk(info, [7]))
    with pytest.raises(ConsumerRebalanceFailedError, match="boom"):
        next(s)
    assert next(s).offset == 7


def test_shutdown_ends_blocked_iteration():
    q, info, s = setup(timeout_ms=-1)
    out = []

    def read():
        for m in s:
            out.append(m.offset)

    th = threading.Thread(target=read)
    th.start()
    q.put(chunk(info, [0, 1]))
    wait_until(lambda: out == [0, 1] and q.empty(), 10, "both messages handed out")
    assert th.is_alive() and not s.done  # blocked on the empty queue (timeout -1)
    s.shutdown()
    th.join(10)
    assert not th.is_alive() and out == [0, 1]
    assert s.done and q.empty()  # the SHUTDOWN marker it put was consumed
    with pytest.raises(StopIteration):
        next(s)


def test_shutdown_puts_the_end_marker_after_queued_chunks():
    q, info, s = setup()
    q.put(chunk(info, [4]))
    s.shutdown()
    assert list(q.queue)[-1] is SHUTDOWN
    assert [m.offset for m in s] == [4] and s.done
