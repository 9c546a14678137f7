"""The columnar read path (MessageColumns, SimpleConsumer.fetch_columns) against iteration."""

import random

import pytest

from kclient.errors import CorruptRecordError, OffsetOutOfRangeError
from kclient.protocol.records import build_batch, build_message_set
from kclient.simple import ByteBufferMessageSet, FetchRequest, SimpleConsumer, message_columns


def as_rows(cols):
    """The columns as (offset, key, value, timestamp, type, headers) rows."""
    n = len(cols)
    keys = cols.keys if cols.keys is not None else [None] * n
    hdrs = cols.headers if cols.headers is not None else [None] * n
    return [
        (o, k, v, t, tt, tuple(h or ()))
        for o, k, v, t, tt, h in zip(
            cols.offsets, keys, cols.values, cols.timestamps, cols.timestamp_types, hdrs
        )
    ]


def iterated(ms):
    return [(m.offset, m.key, m.value, m.timestamp, m.timestamp_type, tuple(m.headers)) for m in ms]


def mixed_buffer():
    rng = random.Random(7)
    return b"".join(
        [
            build_message_set([b"a", b"b"], magic=0),
            build_message_set([b"c", b"d"], [b"k1", None], magic=1, base_offset=2, codec=1),
            build_batch([rng.randbytes(30) for _ in range(50)], base_offset=4, codec=3),
            build_batch(
                [b"h%d" % i for i in range(5)],
                [b"k"] * 5,
                base_offset=54,
                headers=[[("h", b"1")] if i % 2 else [] for i in range(5)],
            ),
            build_batch([b"g%d" % i for i in range(4)], base_offset=59, offset_deltas=[0, 2, 5, 9]),
            build_batch([b"z"] * 3, base_offset=69, timestamp_type=1, timestamp=1234),
        ]
    )


@pytest.mark.parametrize("fetch_offset", [0, 1, 3, 20, 56, 61, 70])
def test_columns_equal_the_iterated_messages(fetch_offset):
    ms = ByteBufferMessageSet(mixed_buffer(), fetch_offset, topic="t", partition=0)
    cols = message_columns(ms)
    assert as_rows(cols) == iterated(ms)
    assert cols.next_offset == ms.next_offset == 72
    if fetch_offset < 54:  # the keyed batch with headers is in the fetch
        assert cols.keys is not None and cols.headers is not None
    assert len(cols.offsets) == len(cols.timestamps) == len(cols.timestamp_types) == len(cols)


def test_old_formats_have_no_timestamp():
    cols = ByteBufferMessageSet(build_message_set([b"a", b"b"], magic=0)).columns()
    assert cols.timestamps == [-1, -1] and cols.timestamp_types == [-1, -1]
    assert cols.keys in (None, [None, None]) and cols.headers is None
    assert cols.values == [b"a", b"b"]


@pytest.mark.parametrize("end", [0, 3, 55, 60, 61, 64, 69, 70, 100])
def test_end_offset_cuts_the_columns(end):
    ms = ByteBufferMessageSet(mixed_buffer(), 2)
    cols = ms.columns(end_offset=end)
    assert as_rows(cols) == [r for r in iterated(ms) if r[0] < end]
    assert cols.next_offset == min(72, max(end, 2)) or (end < 2 and cols.next_offset == end)


def test_a_corrupt_entry_after_good_ones_is_kept_as_the_error():
    a = build_batch([b"good"] * 5)
    bad = bytearray(build_batch([b"evil"] * 5, base_offset=5))
    bad[70] ^= 0x01
    cols = message_columns(ByteBufferMessageSet(a + bytes(bad), topic="t", partition=3))
    assert cols.offsets == [0, 1, 2, 3, 4] and cols.next_offset == 5
    assert isinstance(cols.error, CorruptRecordError) and cols.error.offset == 5
    with pytest.raises(CorruptRecordError):
        message_columns(ByteBufferMessageSet(bytes(bad)))


def test_control_batches_are_skipped_and_next_offset_passes_them():
    control = build_batch(
        [b"\x00\x00\x00\x00\x00\x00"],
        [b"\x00\x00\x00\x00"],
        base_offset=2,
        is_control=True,
        is_transactional=True,
        producer_id=7,
    )
    buf = build_batch([b"a", b"b"], producer_id=7, is_transactional=True) + control
    cols = ByteBufferMessageSet(buf).columns()
    assert cols.offsets == [0, 1] and cols.next_offset == 3


def test_fetch_columns_from_a_broker(mini):
    topic = mini.topic()
    values = [b"v%d" % i for i in range(500)]
    mini.produce_values(topic, 0, values, keys=[b"k%d" % (i % 7) for i in range(500)])
    with SimpleConsumer(mini.host, mini.port, client_id="cols") as c:
        got, offset = [], 0
        while offset < 500:
            cols = c.fetch_columns(FetchRequest(topic, 0, offset, 4096), end_offset=500)
            assert cols.high_watermark == 500
            got += cols.values
            offset = cols.next_offset
        assert got == values
        cols = c.fetch_columns(FetchRequest(topic, 0, 100), end_offset=130)
        assert cols.offsets == list(range(100, 130)) and cols.next_offset == 130
        assert cols.keys == [b"k%d" % (i % 7) for i in range(100, 130)]
        with pytest.raises(OffsetOutOfRangeError):
            c.fetch_columns(FetchRequest(topic, 0, 900))
