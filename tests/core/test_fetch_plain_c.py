"""The C twin of the caught-up reader's lane (``_walk.plain_batches`` inside
``kclient.core.fetch_plain.plain_part``) gives exactly the columns of the Python walk it
stands in for, and declines (leaving that walk to decide) whatever it does not handle:
record headers, compressed or control batches, v0/v1 entries, a bad CRC, an offset inside a
batch, an oversized first entry, and any damage.  Random batches and random damage."""

from __future__ import annotations

import random
import struct

import pytest
from crc32c import crc32c

from kclient.core import fetch_plain
from kclient.core.fetch import FetchSettings
from kclient.protocol.records import build_batch
from kclient.protocol.records.common import LOG_APPEND_TIME
from kclient.protocol.records.legacy import build_message_set
from kclient.protocol.speedups import load_speedup
from tests.needs import c_twin

walk = load_speedup("kclient.protocol.records._walk")  # None under KCLIENT_PURE_PYTHON=1
pytestmark = c_twin(walk, "the C record walker")

COLUMNS = ("offsets", "timestamps", "timestamp_types", "keys", "values", "headers")


class Part:
    """One partition's answer as plain_part reads it."""

    error_code = 0
    high_watermark = 10_000
    log_start_offset = 0

    def __init__(self, records: bytes) -> None:
        self.records = records


def both(records: bytes, offset: int, settings: FetchSettings, monkeypatch) -> tuple:
    """(with the C twin, the Python walk alone) of plain_part, and whether the C twin itself
    took the answer (plain_part falls back to the Python walk where it declines)."""
    part = Part(records)
    fast = fetch_plain.plain_part(part, "t", 0, offset, settings)
    with monkeypatch.context() as m:
        m.setattr(fetch_plain, "_plain_batches", None)
        slow = fetch_plain.plain_part(part, "t", 0, offset, settings)
    crc = crc32c if settings.validate_crc else None
    took = walk.plain_batches(records, offset, settings.max_buffer_size, crc) is not None
    return fast, slow, took


def same(fast, slow) -> None:
    assert (fast is None) == (slow is None)
    if fast is None:
        return
    (a, na), (b, nb) = fast, slow
    assert na == nb
    for name in COLUMNS + ("next_offset", "high_watermark", "log_start_offset", "fetch_offset"):
        assert getattr(a, name) == getattr(b, name), name


def batches(rng: random.Random, base: int = 0) -> bytes:
    """A few v2 batches from ``base`` on: keys or none, null values, log-append time."""
    out = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        n = rng.choice([1, 2, 5, 64, 300])
        values = [
            None if rng.random() < 0.05 else rng.randbytes(rng.choice([0, 1, 100]))
            for _ in range(n)
        ]
        keys = (
            [None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 9)) for _ in range(n)]
            if rng.random() < 0.5
            else None
        )
        stamps = [1_700_000_000_000 + rng.randrange(0, 5000) for _ in range(n)]
        kind = LOG_APPEND_TIME if rng.random() < 0.2 else 0
        out.append(build_batch(values, keys, stamps, base_offset=base, timestamp_type=kind))
        base += n
    return b"".join(out)


@pytest.mark.parametrize("seed", range(40))
def test_the_same_columns_as_the_python_walk(seed, monkeypatch):
    rng = random.Random(seed)
    records = batches(rng, base=rng.choice([0, 7, 1 << 40]))
    first = struct.unpack_from(">q", records)[0]
    cut = rng.choice([len(records), len(records) - rng.randrange(1, 40)])  # a partial tail
    fast, slow, took = both(records[:cut], first, FetchSettings(), monkeypatch)
    same(fast, slow)
    if cut == len(records):  # whole batches: the C twin itself reads them
        assert took and fast is not None
        assert fast[0].offsets[0] == first


@pytest.mark.parametrize("seed", range(200))
def test_damage_is_declined_or_read_alike(seed, monkeypatch):
    rng = random.Random(1000 + seed)
    records = bytearray(batches(rng))
    for _ in range(rng.choice([1, 2, 4])):
        records[rng.randrange(len(records))] = rng.randrange(256)
    settings = FetchSettings(validate_crc=rng.random() < 0.5)
    fast, slow, took = both(bytes(records), 0, settings, monkeypatch)
    same(fast, slow)  # the C twin takes only what the Python walk takes, with its columns
    if took:
        assert slow is not None


def _declined(records: bytes, monkeypatch, offset: int = 0, **settings) -> None:
    fast, slow, took = both(records, offset, FetchSettings(**settings), monkeypatch)
    assert not took
    same(fast, slow)


def test_what_the_c_twin_leaves_to_the_python_walk(monkeypatch):
    header = [("h", b"1")]
    with_headers = build_batch([b"a", b"b"], headers=[header, None])
    _declined(with_headers, monkeypatch)  # headers: the Python walk takes these itself
    assert both(with_headers, 0, FetchSettings(), monkeypatch)[0] is not None
    _declined(build_batch([b"a"] * 5, codec=1), monkeypatch)  # compressed
    _declined(build_batch([b"a"], is_control=True), monkeypatch)
    _declined(build_batch([b"a"], offset_deltas=[3]), monkeypatch)
    _declined(build_batch([b"a", b"b"], base_offset=4), monkeypatch, offset=5)  # inside a batch
    _declined(build_batch([b"x" * 100]), monkeypatch, max_buffer_size=40)
    _declined(build_message_set([b"v0"], magic=0), monkeypatch)
    bad = bytearray(build_batch([b"a", b"b"]))
    bad[-2] ^= 1  # the last value: b"b" -> b"c"
    _declined(bytes(bad), monkeypatch)  # a bad CRC
    # unchecked, the same bytes are read (validate_crc off), by the C twin itself
    fast, slow, took = both(bytes(bad), 0, FetchSettings(validate_crc=False), monkeypatch)
    same(fast, slow)
    assert took and fast[0].values == [b"a", b"c"]
