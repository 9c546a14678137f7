"""The broker's strided batch check accepts exactly what the record walkers accept."""

from __future__ import annotations

import random

import pytest

from kclient.protocol.error_codes import CorruptRecordError, InvalidRecordError
from kclient.protocol.records import build_batch, encode_v2_uniform
from kclient.protocol.records.common import BATCH_HEADER_SIZE
from kclient.protocol.records.v2_check import check_client_batch
from kclient.protocol.records.v2_stride import STRIDE_LIMIT, check_strided
from kclient.protocol.records.v2_walk import decode_columns


def _section(batch: bytes | bytearray) -> tuple[bytes, int, int, int]:
    """(buffer, start, end, record count) of an uncompressed batch's records."""
    buf = bytes(batch)
    return buf, BATCH_HEADER_SIZE, len(buf), int.from_bytes(buf[57:61], "big")


def _walkers_accept(buf: bytes, start: int, end: int, count: int) -> bool:
    """What the walkers say: all ``count`` records sound, offset deltas 0..count-1."""
    try:
        ods = decode_columns(buf, start, end, count, 0, True)[0]
    except CorruptRecordError:
        return False
    return ods is None or ods == list(range(count))


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 8191, 8192, 8193, 10000, STRIDE_LIMIT])
@pytest.mark.parametrize("length", [0, 1, 100, 300])
def test_the_producers_uniform_batches_pass_without_walking(n, length):
    n = min(n, 3_000_000 // max(length, 1))
    buf, start, end, count = _section(encode_v2_uniform([b"v" * length] * n, length, 0, 1))
    assert count == n
    assert check_strided(buf, start, end, count)


def test_runs_of_other_sizes_and_timestamp_widths_pass():
    values = [b"a" * 10] * 700 + [b"b" * 200] * 900 + [None] * 50 + [b"c"] * 3000
    timestamps = [1000 + i // 10 for i in range(len(values))]  # deltas widen at 64 and 8192
    buf, start, end, count = _section(build_batch(values, timestamps=timestamps))
    assert check_strided(buf, start, end, count)
    assert _walkers_accept(buf, start, end, count)


@pytest.mark.parametrize("what", ["keys", "headers", "sizes all different", "too many"])
def test_other_shapes_are_left_to_the_walkers(what):
    n = 500
    if what == "keys":
        batch = build_batch([b"v"] * n, keys=[b"k"] * n)
    elif what == "headers":
        batch = build_batch([b"v"] * n, headers=[[("h", b"1")]] * n)
    elif what == "sizes all different":
        batch = build_batch([b"v" * i for i in range(n)])
    else:
        batch = build_batch([b"v"] * (STRIDE_LIMIT + 1))
    buf, start, end, count = _section(batch)
    assert not check_strided(buf, start, end, count)
    assert _walkers_accept(buf, start, end, count)
    check_client_batch(bytes(batch), 0, len(batch) - 12)  # still accepted, by the walkers


def test_a_wrong_offset_delta_in_the_middle_is_left_to_the_walkers():
    values = [b"x" * 100] * 1000
    buf = build_batch(values, offset_deltas=[*range(500), 501, 500, *range(502, 1000)])
    assert not check_strided(*_section(buf))


def test_a_record_length_that_does_not_add_up_is_refused():
    buf = bytearray(encode_v2_uniform([b"x" * 100] * 60, 100, 0, 1))  # 1-byte deltas: one size
    size = len(buf[BATCH_HEADER_SIZE:]) // 60
    buf[BATCH_HEADER_SIZE + 30 * size] += 2  # record 30 claims one byte more
    assert not check_strided(*_section(buf))
    with pytest.raises(InvalidRecordError):
        check_client_batch(bytes(buf), 0, len(buf) - 12)


def test_bytes_after_the_last_record_are_refused():
    batch = bytearray(encode_v2_uniform([b"x" * 100] * 100, 100, 0, 1))
    buf, start, end, count = _section(batch)
    assert not check_strided(buf, start, end - 1, count)
    assert not check_strided(buf, start, end, count - 1)
    assert not check_strided(buf, start, end, count + 1)


def test_mutated_batches_pass_only_when_the_walkers_accept_them():
    """Soundness: random byte changes, insertions and cuts in a batch's records; whatever
    check_strided accepts, the full decode accepts too (with offset deltas 0..n-1)."""
    rng = random.Random(20261127)
    bases = [
        bytes(encode_v2_uniform([b"x" * 20] * 150, 20, 0, 1)),
        bytes(
            build_batch([b"y" * 5] * 80 + [b"z" * 70] * 80, timestamps=[i * 3 for i in range(160)])
        ),
    ]
    accepted = refused = 0
    for trial in range(3000):
        base = bases[trial % 2]
        buf = bytearray(base)
        for _ in range(rng.choice((1, 1, 2, 3))):
            i = rng.randrange(BATCH_HEADER_SIZE, len(buf))
            kind = rng.random()
            if kind < 0.7:
                buf[i] = rng.choice((0, 1, 2, 0x7F, 0x80, 0x81, 0xFF, rng.randrange(256)))
            elif kind < 0.85:
                buf.insert(i, rng.randrange(256))
            else:
                del buf[i]
        data, start, end, count = _section(buf)
        if check_strided(data, start, end, count):
            accepted += 1
            assert _walkers_accept(data, start, end, count), (trial, bytes(buf).hex())
        else:
            refused += 1
    assert accepted > 100 and refused > 1000  # both sides were exercised
