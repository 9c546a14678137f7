"""The C record walker (kclient/protocol/records/_walk.pyx) decodes exactly what the pure-Python
walkers decode, declines what it does not handle, and never hides damage (the Python walkers
then report it)."""

from __future__ import annotations

import random
import struct

import pytest

from kclient.protocol.records import build_batch, v2_walk
from tests.needs import c_twin

try:
    from kclient.protocol.records import _walk as walk
except ImportError:
    walk = None
pytestmark = c_twin(walk, "the C record walker")

HEADER = 61  # v2 batch header; the records section follows


def _section(values, keys=None, headers=None, timestamps=None) -> tuple[bytes, int]:
    batch = build_batch(values, keys, timestamps, headers, timestamp=1_700_000_000_000)
    return batch, struct.unpack_from(">i", batch, 57)[0]


def _python(buf: bytes, count: int) -> tuple:
    ods: list = []
    tss: list = []
    keys: list = []
    vals: list = []
    found: list = []
    v2_walk.walk_general(buf, HEADER, count, ods, tss, keys, vals, found)
    return ods, tss, keys, vals, found


@pytest.mark.parametrize("seed", range(30))
def test_same_columns_as_the_python_walker(seed):
    rng = random.Random(seed)
    n = rng.choice([1, 2, 63, 64, 65, 300, 9000])
    values = [
        None if rng.random() < 0.05 else rng.randbytes(rng.choice([0, 1, 100, 200]))
        for _ in range(n)
    ]
    keys = (
        [None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 20)) for _ in range(n)]
        if rng.random() < 0.5
        else None
    )
    timestamps = (
        [1_700_000_000_000 + rng.randrange(-5000, 10**7) for _ in range(n)]
        if rng.random() < 0.5
        else None
    )
    buf, count = _section(values, keys, timestamps=timestamps)
    got = walk.walk_plain(buf, HEADER, len(buf), count)
    ods, tss, pkeys, vals, found = _python(buf, count)
    assert got is not None and not found and ods == list(range(n))
    assert got[0] == tss and got[2] == vals
    assert got[1] == (pkeys if any(k is not None for k in pkeys) else None) or (
        got[1] is None and all(k is None for k in pkeys)
    )
    # decode_columns (the C path; its Python twin under KCLIENT_PURE_PYTHON=1, which spells
    # "no keys" as a list of None) gives the same as the Python walkers
    stamps, ckeys, cvals = v2_walk.decode_columns(buf, HEADER, len(buf), count, 0, True)[1:4]
    assert (stamps, cvals) == (tss, vals)
    assert ckeys == got[1] or (got[1] is None and ckeys == [None] * n)


def test_declines_headers_and_rejects_damage():
    buf, count = _section([b"a", b"b"], headers=[[("h", b"1")], None])
    assert walk.walk_plain(buf, HEADER, len(buf), count) is None
    buf, count = _section([b"x" * 50] * 10)
    with pytest.raises((ValueError, IndexError)):
        walk.walk_plain(buf[:-7], HEADER, len(buf) - 7, count)  # truncated
    assert walk.walk_plain(buf, HEADER, len(buf), count - 1) is None  # bytes left over
    with pytest.raises((ValueError, IndexError)):
        walk.walk_plain(buf, HEADER, len(buf) + 5, count)  # past the buffer
    mv = memoryview(buf)  # buffers other than bytes
    assert walk.walk_plain(mv, HEADER, len(buf), count)[2] == [b"x" * 50] * 10
