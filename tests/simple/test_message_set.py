"""ByteBufferMessageSet and its decoder (``kclient.protocol.records``), without a broker.

Every decoded field is checked against what the test wrote (the columns given to the
builders) and, where kafka-python reads the format, against kafka-python fed the same bytes.
"""

import os
import pickle
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kclient.errors import CorruptRecordError, UnsupportedCodecError
from kclient.protocol.records import build_batch, build_message_set, v2_walk
from kclient.simple import ByteBufferMessageSet, Message, MessageAndOffset
from tests.needs import need_module

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.fixture(autouse=True)
def _xxhash_for_kafka_python(monkeypatch):
    """kafka-python needs the xxhash package for magic-0 LZ4; give it kclient's xxh32."""
    kp_codec = need_module("kafka.codec")
    from tests.protocol.test_compression import _XXHashShim

    monkeypatch.setattr(kp_codec, "xxhash", _XXHashShim)


def kafka_python(buf, fetch_offset=0):
    """The records of ``buf`` as kafka-python reads them (the independent reference)."""
    from kafka.record.memory_records import MemoryRecords

    out = []
    for batch in MemoryRecords(bytes(buf)):
        for r in batch:
            if r.offset >= fetch_offset:
                headers = tuple(r.headers) if batch.magic == 2 else ()
                out.append(
                    (
                        r.offset,
                        r.key,
                        r.value,
                        -1 if r.timestamp is None else r.timestamp,
                        -1 if r.timestamp_type is None else r.timestamp_type,
                        headers,
                    )
                )
    return out


def decoded(buf, fetch_offset=0):
    return [
        (m.offset, m.key, m.value, m.timestamp, m.timestamp_type, tuple(m.headers))
        for m in ByteBufferMessageSet(buf, fetch_offset)
    ]


def batches(rng, n, per, size, keys=False, headers=False, ts_spread=0, gaps=False, codec=0):
    """``n`` v2 batches of ``per`` random records, and the records they hold (as written)."""
    out, written = [], []
    for i in range(n):
        vals = [rng.randbytes(size) for _ in range(per)]
        ks = [rng.randbytes(rng.randint(0, 12)) for _ in range(per)] if keys else None
        hs = [[("h", b"1")] if j % 3 == 0 else [] for j in range(per)] if headers else None
        ts = [1_700_000_000_000 + rng.randint(0, ts_spread) for _ in range(per)]
        ods = sorted(rng.sample(range(per * 2), per)) if gaps else list(range(per))
        base = i * per * 2
        out.append(build_batch(vals, ks, ts, hs, base_offset=base, offset_deltas=ods, codec=codec))
        written += [
            (base + ods[j], ks[j] if ks else None, vals[j], ts[j], 0, tuple(hs[j]) if hs else ())
            for j in range(per)
        ]
    return b"".join(out), written


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("shape", ["null-keys", "keys", "headers", "gaps", "big", "many"])
def test_v2_batches_decode_as_written_and_as_kafka_python_reads_them(codec, shape):
    rng = random.Random(shape + codec)
    kw = {
        "null-keys": dict(n=4, per=300, size=100, ts_spread=40),
        "keys": dict(n=3, per=200, size=50, keys=True),
        "headers": dict(n=2, per=50, size=20, headers=True),
        "gaps": dict(n=2, per=100, size=30, gaps=True),
        "big": dict(n=2, per=3, size=20000),
        "many": dict(n=1, per=9000, size=5, ts_spread=5000),
    }[shape]
    raw, written = batches(rng, codec=CODECS[codec], **kw)
    assert decoded(raw) == written == kafka_python(raw)
    middle = written[len(written) // 2][0]
    assert decoded(raw, middle) == [r for r in written if r[0] >= middle]
    assert decoded(raw, middle) == kafka_python(raw, middle)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_message_sets_decode_as_written_and_as_kafka_python_reads_them(magic, codec):
    values = [b"v%d" % i * (i % 5) or None for i in range(40)]
    keys = [None if i % 4 else b"k%d" % i for i in range(40)]
    stamps = [1_700_000_000_000 + 7 * i for i in range(40)]
    buf = build_message_set(
        values[:20], keys[:20], stamps[:20], magic=magic, codec=CODECS[codec]
    ) + build_message_set(
        values[20:], keys[20:], stamps[20:], magic=magic, codec=CODECS[codec], base_offset=20
    )
    written = [
        (i, keys[i], values[i], stamps[i] if magic else -1, 0 if magic else -1, ())
        for i in range(40)
    ]
    assert decoded(buf) == written == kafka_python(buf)
    # a v0/v1 compressed wrapper starting before the fetch offset: inner offsets below it skipped
    assert [m[0] for m in decoded(buf, 25)] == list(range(25, 40))
    assert {m.message.magic for m in ByteBufferMessageSet(buf)} == {magic}


def test_mixed_formats_in_one_buffer():
    buf = (
        build_message_set([b"a", b"b"], magic=0)
        + build_message_set([b"c"], magic=1, base_offset=2)
        + build_batch([b"d", b"e"], base_offset=3)
    )
    ms = ByteBufferMessageSet(buf)
    got = list(ms)
    assert [(m.offset, m.value, m.message.magic) for m in got] == [
        (0, b"a", 0),
        (1, b"b", 0),
        (2, b"c", 1),
        (3, b"d", 2),
        (4, b"e", 2),
    ]
    assert ms.next_offset == 5 and ms.valid_bytes == len(buf)


def test_partial_trailing_entry_is_dropped_and_valid_bytes_counts_complete_ones():
    a, b = build_batch([b"x" * 50] * 3), build_batch([b"y" * 50] * 3, base_offset=3)
    for cut in (1, 11, 12, 40, len(b) - 1):
        ms = ByteBufferMessageSet(a + b[:cut])
        assert [m.offset for m in ms] == [0, 1, 2]
        assert ms.valid_bytes == len(a) and ms.size_in_bytes == len(a) + cut
        assert ms.incomplete_size == (len(b) if cut >= 12 else None)
        assert ms.next_offset == 3 and ms.error is None


def test_corrupt_entry_delivers_the_good_ones_then_raises_with_its_offset():
    a = build_batch([b"good"] * 5)
    bad = bytearray(build_batch([b"evil"] * 5, base_offset=5))
    bad[70] ^= 0x01
    c = build_batch([b"never"], base_offset=10)
    ms = ByteBufferMessageSet(a + bytes(bad) + c, topic="t", partition=3)
    assert ms.valid_bytes == len(a) and isinstance(ms.error, CorruptRecordError)
    it = iter(ms)
    assert [next(it).offset for _ in range(5)] == [0, 1, 2, 3, 4]
    with pytest.raises(CorruptRecordError) as info:
        next(it)
    assert info.value.offset == 5 and "t-3" in str(info.value) and "at offset 5" in str(info.value)
    with pytest.raises(CorruptRecordError):  # nothing good in front: raises at once
        iter(ByteBufferMessageSet(bytes(bad)))


def test_legacy_crc_mismatch_names_the_message_offset():
    buf = bytearray(build_message_set([b"m%d" % i for i in range(6)], magic=1))
    entry = len(buf) // 6
    buf[3 * entry + 30] ^= 0xFF  # a value byte of the message at offset 3
    ms = ByteBufferMessageSet(bytes(buf))
    assert ms.error.offset == 3
    got = []
    with pytest.raises(CorruptRecordError):
        for m in ms:
            got.append(m.offset)
    assert got == [0, 1, 2]


def test_control_batches_are_not_delivered():
    control = build_batch(
        [b"\x00\x00\x00\x00\x00\x00"],
        [b"\x00\x00\x00\x00"],
        base_offset=2,
        is_control=True,
        is_transactional=True,
        producer_id=7,
    )
    buf = build_batch([b"a", b"b"], producer_id=7, is_transactional=True) + control
    ms = ByteBufferMessageSet(buf)
    got = list(ms)
    assert [m.offset for m in got] == [0, 1] and ms.next_offset == 3
    assert got[0].message.info.is_transactional and got[0].message.info.producer_id == 7


def test_log_append_time_gives_every_record_the_batch_time():
    buf = build_batch([b"a", b"b"], timestamps=[1, 2], timestamp_type=1)
    got = list(ByteBufferMessageSet(buf))
    assert [(m.timestamp, m.timestamp_type) for m in got] == [(2, 1), (2, 1)]
    assert decoded(buf) == kafka_python(buf)


def test_null_values_empty_keys_and_headers():
    buf = build_batch([None, b"", b"v"], [b"", None, b"k"], headers=[[("a", None)], [], []])
    got = list(ByteBufferMessageSet(buf))
    assert [(m.key, m.value) for m in got] == [(b"", None), (None, b""), (b"k", b"v")]
    assert got[0].message.headers == [("a", None)] and got[1].headers == []


def test_message_and_offset_api():
    m = Message.create(b"k", b"v", timestamp=5, timestamp_type=0, headers=[("h", b"x")])
    mo = MessageAndOffset.create(m, 41)
    assert (mo.offset, mo.next_offset, mo.message.key, mo.message.value) == (41, 42, b"k", b"v")
    assert mo.message is mo and mo.payload == b"v" and mo.has_key and mo.size == 2
    assert isinstance(mo, Message) and mo.headers == [("h", b"x")]
    assert pickle.loads(pickle.dumps(mo)) == mo
    assert type(pickle.loads(pickle.dumps(mo))) is MessageAndOffset
    assert "offset=41" in repr(mo) and "b'k'" in repr(mo)


def test_shape_cache_stays_bounded(monkeypatch):
    monkeypatch.setattr(v2_walk, "CACHE_MAX", 50)
    monkeypatch.setattr(v2_walk, "MAX_LAYOUTS", 2)
    monkeypatch.setattr(v2_walk, "_CACHES", {})
    monkeypatch.setattr(v2_walk, "_walk_plain", None)  # the Python walkers own the cache
    rng = random.Random(1)
    buf, written = batches(rng, 3, 500, 30, ts_spread=300)  # 1- and 2-byte ts deltas
    assert decoded(buf) == written
    assert 0 < len(v2_walk._CACHES) <= 2
    assert all(len(cache) <= 50 for cache in v2_walk._CACHES.values())


# ----------------------------------------------------------------------------- fuzz
_SAMPLES = [
    build_batch([b"abc" * i for i in range(1, 30)], base_offset=7),
    build_batch([b"x"] * 70, [b"k"] * 70, codec=1),
    build_message_set([b"one", b"two", b"three"], magic=0),
    build_message_set([b"a" * 20] * 4, [b"k"] * 4, magic=1, codec=2),
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(range(len(_SAMPLES))),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 10**6),
    st.booleans(),
)
def test_mutated_buffers_decode_or_raise_corrupt_record(sample, flips, cut, validate):
    buf = bytearray(_SAMPLES[sample])
    for pos, value in flips:
        buf[pos % len(buf)] = value
    buf = bytes(buf[: max(1, cut % (len(buf) + 1))])
    try:
        ms = ByteBufferMessageSet(buf, validate_crc=validate)
        for m in ms:
            assert isinstance(m.offset, int)
    except CorruptRecordError as exc:
        assert exc.offset is not None or "message set" in str(exc)
    except UnsupportedCodecError:
        assert not validate  # codec bits 5-7 can only be garbage if the CRC was not checked


def test_lying_record_count_and_lengths_raise_corrupt():
    good = bytearray(build_batch([b"v"] * 3))
    struct.pack_into(">i", good, 57, 10**6)  # recordsCount
    with pytest.raises(CorruptRecordError):
        list(ByteBufferMessageSet(bytes(good), validate_crc=False))
    good = bytearray(build_batch([b"v"] * 3))
    good[61] = 0x7E  # first record length far past the end
    with pytest.raises(CorruptRecordError):
        list(ByteBufferMessageSet(bytes(good), validate_crc=False))


def test_random_values_decode_as_written():
    rng = random.Random(5)
    for _ in range(50):
        per = rng.choice([1, 63, 64, 65, 300])
        vals = [os.urandom(rng.choice([0, 1, 63, 64, 200, 9000])) for _ in range(per)]
        base = rng.randint(0, 10**9)
        buf = build_batch(vals, base_offset=base, timestamp=5)
        assert decoded(buf) == [(base + i, None, v, 5, 0, ()) for i, v in enumerate(vals)]


def _txn_log():
    """pid 7 commits x0-x1 (marker 2), pid 8 aborts y0 (marker 4), pid 7 opens z0 at 5."""
    from kclient.protocol.records import build_marker_batch

    def txn(pid, values, base):
        return build_batch(
            values,
            base_offset=base,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=base,
            is_transactional=True,
        )

    return b"".join(
        [
            txn(7, [b"x0", b"x1"], 0),
            build_marker_batch(7, 0, True, 0, base_offset=2),
            txn(8, [b"y0"], 3),
            build_marker_batch(8, 0, False, 0, base_offset=4),
            txn(7, [b"z0"], 5),
        ]
    )


def test_read_committed_stops_at_the_last_stable_offset_and_drops_aborted():
    buf = _txn_log()
    ms = ByteBufferMessageSet(
        buf,
        0,
        high_watermark=6,
        last_stable_offset=5,
        read_committed=True,
        aborted_transactions=[(8, 3)],
    )
    assert [m.message.value for m in ms] == [b"x0", b"x1"]
    assert ms.next_offset == 5  # past both markers, not into z0
    assert list(ms.columns().values) == [b"x0", b"x1"]
    plain = ByteBufferMessageSet(buf, 0, high_watermark=6, last_stable_offset=5)
    assert [m.message.value for m in plain] == [b"x0", b"x1", b"y0", b"z0"]
    assert plain.next_offset == 6


def test_read_committed_with_nothing_stable_yet_is_empty_and_stays_put():
    buf = _txn_log()[
        -len(
            build_batch(
                [b"z0"],
                base_offset=5,
                producer_id=7,
                producer_epoch=0,
                base_sequence=5,
                is_transactional=True,
            )
        ) :
    ]
    ms = ByteBufferMessageSet(buf, 5, high_watermark=6, last_stable_offset=5, read_committed=True)
    assert list(ms) == [] and ms.next_offset == 5 and ms.buffer == b"" and not ms.entries
