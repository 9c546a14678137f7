"""Column chunks: the fetcher's decoded columns through KafkaStream (no broker)."""

import queue
from types import SimpleNamespace

from kclient.consumer.fetcher import ConsumerFetcherThread
from kclient.consumer.stream import ErrorChunk, FetchedDataChunk, KafkaStream, PartitionTopicInfo
from kclient.core.message_set import ByteBufferMessageSet
from kclient.core.messages import Message, MessageAndOffset
from kclient.encoders import StringDecoder
from kclient.errors import CorruptRecordError
from kclient.protocol.records import build_batch, build_message_set


def process(info, buf, fetch_offset):
    """Run the fetcher's _process on one message set; the queued items."""
    out = []
    fake = SimpleNamespace(
        _put=lambda i, c: out.append(c),
        _error=lambda i, e: out.append(ErrorChunk(e)),
        _corrupt=lambda i, ms, e: out.append(ErrorChunk(e)),
    )
    info.fetched_offset = fetch_offset
    ms = ByteBufferMessageSet(buf, fetch_offset, topic=info.topic, partition=info.partition)
    ConsumerFetcherThread._process(fake, info, ms)
    return out


def setup(**kw):
    q = queue.Queue(8)
    info = PartitionTopicInfo("t", 1, q, 0, 0, 1 << 20)
    return q, info, KafkaStream(q, 50, **kw)


def test_batches_become_one_column_chunk_with_metadata():
    q, info, s = setup()
    buf = (
        build_batch([b"a", b"b"], timestamps=[100, 101], base_offset=0)
        + build_batch(
            [b"c", None, b"e"],
            keys=[b"k2", None, b"k4"],
            timestamps=[7, 8, 9],
            headers=[[("h", b"1")], [], [("x", None)]],
            base_offset=2,
        )
        + build_batch([b"f"], timestamps=[50], base_offset=5, offset_deltas=[0])
    )
    items = process(info, buf, 1)  # fetched from offset 1: offset 0 dropped
    assert len(items) == 1 and isinstance(items[0], FetchedDataChunk)
    c = items[0]
    assert c.offsets == [1, 2, 3, 4, 5] and c.values == [b"b", b"c", None, b"e", b"f"]
    assert c.keys == [None, b"k2", None, b"k4", None]
    assert info.fetched_offset == 6
    q.put(c)
    ms = [next(s) for _ in range(5)]
    assert [(m.offset, m.key, m.value) for m in ms] == [
        (1, None, b"b"),
        (2, b"k2", b"c"),
        (3, None, None),
        (4, b"k4", b"e"),
        (5, None, b"f"),
    ]
    assert [m.timestamp for m in ms] == [101, 7, 8, 9, 50]
    assert [m.headers for m in ms] == [[], [("h", b"1")], [], [("x", None)], []]
    assert {m.timestamp_type for m in ms} == {0}
    assert info.consumed_offset == 6


def test_legacy_message_sets():
    q, info, s = setup(value_decoder=StringDecoder())
    buf = build_message_set([b"v0", b"v1", b"v2"], magic=0, base_offset=10)
    (c,) = process(info, buf, 10)
    info.consumed_offset = 10
    q.put(c)
    m = next(s)
    assert (m.offset, m.value, m.timestamp, m.headers) == (10, "v0", -1, [])
    assert info.consumed_offset == 11


def test_corrupt_entry_keeps_the_good_messages_in_front():
    q, info, s = setup()
    good = build_batch([b"a", b"b"], base_offset=0)
    bad = bytearray(build_batch([b"c"], base_offset=2))
    bad[-1] ^= 0xFF
    items = process(info, good + bytes(bad), 0)
    assert isinstance(items[0], FetchedDataChunk) and items[0].offsets == [0, 1]
    assert isinstance(items[1], ErrorChunk) and isinstance(items[1].error, CorruptRecordError)


def test_consumed_offset_follows_each_partition_and_sparse_offsets():
    q = queue.Queue(8)
    a = PartitionTopicInfo("t", 0, q, 0, 0, 1024)
    b = PartitionTopicInfo("t", 1, q, 0, 0, 1024)
    s = KafkaStream(q, 50)

    def mo(o):
        return MessageAndOffset.create(Message.create(value=b"v"), o)

    q.put(FetchedDataChunk([mo(3), mo(7), mo(9)], a, 3))
    q.put(FetchedDataChunk([mo(0)], b, 0))
    assert (a.consumed_offset, b.consumed_offset) == (0, 0)
    assert next(s).offset == 3 and a.consumed_offset == 4
    assert next(s).offset == 7 and a.consumed_offset == 8
    assert next(s).offset == 9 and a.consumed_offset == 10
    assert next(s).partition == 1
    assert (a.consumed_offset, b.consumed_offset) == (10, 1)
    assert a._cursor is None  # the finished chunk is let go
    b.reset_offsets(42)
    assert b.consumed_offset == 42 and b.fetched_offset == 42


def _chunk(info, offsets):
    return FetchedDataChunk(
        [MessageAndOffset.create(Message.create(value=b"v%d" % o), o) for o in offsets],
        info,
        offsets[0],
    )


def test_iterator_survives_timeout_and_error_chunks():
    import pytest

    from kclient.errors import ConsumerRebalanceFailedError, ConsumerTimeoutError

    q, info, s = setup()
    it = iter(s)
    q.put(_chunk(info, [0, 1]))
    assert [next(it).offset, next(it).offset] == [0, 1]
    with pytest.raises(ConsumerTimeoutError):
        next(it)
    q.put(ErrorChunk(ConsumerRebalanceFailedError("boom")))
    with pytest.raises(ConsumerRebalanceFailedError):
        next(it)
    q.put(_chunk(info, [2, 3]))
    assert next(it).offset == 2
    assert next(s).offset == 3  # next(stream) and iter(stream) share state
    assert info.consumed_offset == 4
    s.shutdown()
    assert list(it) == []


def test_clear_ends_the_chunk_a_loop_is_walking():
    import pytest

    from kclient.errors import ConsumerTimeoutError

    q, info, s = setup()
    it = iter(s)
    q.put(_chunk(info, [0, 1, 2, 3]))
    assert next(it).offset == 0
    s.clear()
    assert info.consumed_offset == 1
    with pytest.raises(ConsumerTimeoutError):
        next(it)
    assert info.consumed_offset == 1
    q.put(_chunk(info, [1, 2]))
    assert [m.offset for m in (next(it), next(it))] == [1, 2]
    assert info.consumed_offset == 3
