"""The one-pass decode of the common fetch answer (``v2.plain_columns``, used by
``message_columns``) against the generic decoder, on real mini-broker answers: the same
records, positions, high watermarks and errors, and the fast path declining what it must."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

import kclient.core.columns as columns_module
from kclient.broker import MiniBroker
from kclient.core.consumer_records import build_records
from kclient.core.fetch import PartitionFetch
from kclient.core.message_set import ByteBufferMessageSet
from kclient.core.prefetch import PartitionState, take, take_answer
from kclient.io.fetcher import Fetcher
from kclient.protocol import compression
from kclient.protocol.records import LOG_APPEND_TIME, build_batch
from kclient.protocol.records.v2 import plain_columns
from kclient.structs import TopicPartition
from tests.broker.txn_support import TXN_CONFIG, committed_aborted_open, produce
from tests.protocol.test_fetch_one import connect

KEYED = dict(
    keys=[b"k0", None, b"k2"],
    headers=[[("h", b"1")], None, [("a", None), ("b", b"")]],
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """t-0: transactional (markers, an aborted batch, an open one); z-0: gzip and zstd
    batches; p-0: three plain batches (keys and headers in the first, none in the second);
    p-1: a LogAppendTime batch and a plain one."""
    b = MiniBroker(log_dir=tmp_path_factory.mktemp("plain-columns"), config=TXN_CONFIG).start()
    b.create_topic("t", 1)
    b.create_topic("z", 1)
    b.create_topic("p", 2)
    committed_aborted_open(b, "t", "tx")
    for topic, partition, batch in [
        ("z", 0, build_batch([b"g%d" % i * 30 for i in range(4)], codec=compression.GZIP)),
        ("z", 0, build_batch([b"s%d" % i * 30 for i in range(3)], codec=compression.ZSTD)),
        ("p", 0, build_batch([b"v0", b"v1", None], **KEYED)),
        ("p", 0, build_batch([b"w0", b"w1"])),
        ("p", 0, build_batch([b"x0"], keys=[b"kx"])),
        ("p", 1, build_batch([b"l0", b"l1"], timestamp_type=LOG_APPEND_TIME)),
        ("p", 1, build_batch([b"m0"])),
    ]:
        assert produce(b, topic, partition, [], batch=batch).error_code == 0
    yield b
    b.close()


def fetched(b, topic, partition, offset, isolation=0):
    with connect(b) as conn:
        f = Fetcher(conn, max_wait_ms=0, prefetch=False, isolation_level=isolation)
        return f.fetch([PartitionFetch(topic, partition, offset)])[0]


def outcome(ms, limit=2):
    """What a consumer makes of ``ms``: records (in polls of ``limit``), the position after
    each, where fetching goes on, the high watermark, the error met."""
    tp = TopicPartition(ms.topic, ms.partition)
    st = PartitionState(tp)
    st.reset_to(ms.fetch_offset)
    take_answer(st, ms.fetch_offset, st.epoch, ms)
    polls = []
    while st.chunks:
        got = [r for c, i, j in take(st, limit) for r in build_records(tp, c, i, j, None, None)]
        polls.append((got, st.position))
    err = st.error
    return polls, st.fetch_offset, st.high_watermark, err and (type(err), str(err), err.offset)


def both(ms, monkeypatch):
    fast = outcome(ms)
    with monkeypatch.context() as m:
        m.setattr(columns_module, "plain_columns", lambda *args: None)
        generic = outcome(ms)
    assert fast == generic
    return fast


@pytest.mark.parametrize(
    ("topic", "partition", "offset", "isolation", "applies"),
    [
        ("p", 0, 0, 0, True),  # three batches: keys and headers, none, keys
        ("p", 0, 3, 0, True),  # from the second batch on
        ("p", 0, 1, 0, False),  # from inside a batch: declined
        ("p", 1, 0, 0, True),  # LogAppendTime, then CreateTime
        ("z", 0, 0, 0, False),  # gzip and zstd: declined
        ("t", 0, 0, 0, False),  # transaction markers, read_uncommitted: declined
        ("t", 0, 0, 1, False),  # read_committed: the aborted batch left out
        ("p", 0, 6, 0, True),  # at the end: nothing
    ],
)
def test_fast_and_generic_paths_give_the_same_records(
    broker, monkeypatch, topic, partition, offset, isolation, applies
):
    ms = fetched(broker, topic, partition, offset, isolation)
    assert (plain_columns(ms.buffer, ms.visible, offset) is not None) is applies
    polls, _, hw, err = both(ms, monkeypatch)
    assert hw == ms.high_watermark > 0 and err is None
    if topic == "p" and partition == 0 and offset == 0:
        recs = [r for got, _ in polls for r in got]
        assert [(r.offset, r.key, r.value, r.headers) for r in recs[:3]] == [
            (0, b"k0", b"v0", [("h", b"1")]),
            (1, None, b"v1", ()),
            (2, b"k2", None, [("a", None), ("b", b"")]),
        ]
        assert [(r.offset, r.key) for r in recs[3:]] == [(3, None), (4, None), (5, b"kx")]
        assert [pos for _, pos in polls] == [2, 4, 6]


def damaged(ms, crc_fixed, at=0):
    """``ms`` again, fetched from ``at``, with its last batch's first record length made
    impossible (and its CRC fixed to match when ``crc_fixed``: then only decoding finds it)."""
    buf = bytearray(ms.buffer)
    last = ms.entries[-1]
    buf[last.position + 61] = 0x7E  # the first record's length varint: 63 bytes
    if crc_fixed:
        end = last.position + last.size
        struct.pack_into(">I", buf, last.position + 17, crc32c(buf[last.position + 21 : end]))
    return ByteBufferMessageSet(
        bytes(buf),
        at,
        topic=ms.topic,
        partition=ms.partition,
        high_watermark=ms.high_watermark,
    )


@pytest.mark.parametrize("crc_fixed", [False, True], ids=["bad-crc", "bad-record"])
def test_a_corrupt_batch_is_raised_after_the_records_in_front_of_it(broker, monkeypatch, crc_fixed):
    ms = fetched(broker, "p", 0, 0)
    polls, fetch_offset, _, err = both(damaged(ms, crc_fixed), monkeypatch)
    assert [r.offset for got, _ in polls for r in got] == [0, 1, 2, 3, 4]
    assert fetch_offset == 5 and err is None  # the next fetch meets it
    polls, fetch_offset, _, err = both(damaged(ms, crc_fixed, at=5), monkeypatch)
    assert polls == [] and err is not None and err[2] == 5


@pytest.mark.parametrize("empty_lists", [False, True])
def test_a_one_record_slice_is_the_record_the_whole_slice_builds(broker, empty_lists):
    cols = fetched(broker, "p", 0, 0).columns()
    tp = TopicPartition("p", 0)
    for key, value, tail in [(None, None, ()), (repr, lambda v: v and len(v), (7,))]:
        whole = build_records(tp, cols, 0, len(cols), key, value, empty_lists, tuple, tail)
        ones = [
            build_records(tp, cols, i, i + 1, key, value, empty_lists, tuple, tail)[0]
            for i in range(len(cols))
        ]
        assert ones == whole and len(whole) == 6
        assert [type(r[7]) for r in ones] == [type(r[7]) for r in whole]
        assert all(a[7] is b[7] for a, b in zip(ones, whole) if not a[7])  # shared empties
