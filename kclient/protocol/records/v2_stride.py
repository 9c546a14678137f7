"""Message format v2, a broker's check of a produced batch without per-record Python code.

Producers write runs of records of one size: same length, attributes, key length (null),
value length and header count (none); only the offset delta and the timestamp delta change.
Such a run is checked with strided slices of the records section, one per structural byte
position: the fixed bytes must equal the first record's, the offset-delta bytes must spell
``i, i+1, ...`` and the timestamp-delta bytes must keep the first record's varint width.  The
first record of each run is decoded in full (:func:`~.v2_walk.walk_general`), so every record
of the run decodes to the same fields, ending where the next begins: what the walkers would
accept, at the cost of about ten C-level slices per run instead of a Python loop per record.
"""

from __future__ import annotations

from kclient.protocol.errors import ProtocolDecodeError
from kclient.protocol.records.v2_walk import Column, _stretch, _width, walk_general

__all__ = ["check_strided", "STRIDE_LIMIT"]

#: Batches with more records than this take the walkers (the offset-delta tables stop here).
STRIDE_LIMIT = 1 << 15
#: Widest timestamp delta a run may have (4 bytes: 2^27 ms, about 37 hours).
_MAX_TS_WIDTH = 4
#: byte -> byte ^ 0x80: continuation bytes become ASCII, so ``isascii`` checks them.
_FLIP = bytes(b ^ 0x80 for b in range(256))
#: (width, byte index) -> that byte of the zigzag varints of the stretch of ``width``-byte
#: offset deltas, for deltas from the stretch's first up to STRIDE_LIMIT.
_OD_BYTES: dict[tuple[int, int], bytes] = {}
_STRETCH_START = {1: 0, 2: 64, 3: 8192}


def _od_bytes(width: int, k: int) -> bytes:
    """Byte ``k`` of each ``width``-byte offset-delta varint, the stretch's deltas in order."""
    col = _OD_BYTES.get((width, k))
    if col is None:
        first = _STRETCH_START[width]
        last = min(64 << (7 * (width - 1)), STRIDE_LIMIT)
        more = 0x80 if k < width - 1 else 0
        col = _OD_BYTES[(width, k)] = bytes(
            (((2 * i) >> (7 * k)) & 0x7F) | more for i in range(first, last)
        )
    return col


class _Run:
    """The layout of a run's first record (decoded in full): where each field lies."""

    __slots__ = ("size", "fixed", "ts_more", "ts_last", "od")

    def __init__(self, buf: bytes, pos: int, size: int, odw: int) -> None:
        lw = _width(buf, pos)
        tw = _width(buf, pos + lw + 1)
        t0 = lw + 1 + tw + odw
        vw = _width(buf, pos + t0 + 1)
        self.size = size
        # length + attributes, key length + value length, header count
        self.fixed = [*range(lw + 1), *range(t0, t0 + 1 + vw), size - 1]
        self.ts_more = range(lw + 1, lw + tw)  # timestamp-delta bytes that continue
        self.ts_last = lw + tw  # its last byte
        self.od = lw + 1 + tw  # where the offset delta starts
        if (
            tw > _MAX_TS_WIDTH
            or _width(buf, pos + self.od) != odw
            or buf[pos + t0] != 1
            or buf[pos + size - 1] != 0
        ):
            raise ValueError("not a run's shape")

    def holds(self, buf: bytes, pos: int, i: int, n: int, odw: int) -> bool:
        """Records ``i..i+n-1`` at ``pos`` all have this layout and offset deltas i.. in order."""
        size = self.size
        stop = pos + (n - 1) * size + 1
        for k in self.fixed:
            if buf[pos + k : stop + k : size] != bytes((buf[pos + k],)) * n:
                return False
        for k in self.ts_more:
            if not buf[pos + k : stop + k : size].translate(_FLIP).isascii():
                return False
        k = self.ts_last
        if not buf[pos + k : stop + k : size].isascii():
            return False
        first = i - _STRETCH_START[odw]
        for k in range(odw):
            if (
                buf[pos + self.od + k : stop + self.od + k : size]
                != _od_bytes(odw, k)[first : first + n]
            ):
                return False
        return True


def check_strided(buf: bytes, start: int, end: int, count: int) -> bool:
    """True when ``buf[start:end]`` holds exactly ``count`` well-formed records with offset
    deltas 0..count-1, null keys and no headers, checked a run of same-sized records at a time.

    False says nothing: the caller decodes the records to find out (and to name any damage).
    """
    if not 0 < count <= STRIDE_LIMIT:
        return False
    pos, i, runs = start, 0, 0
    while i < count:
        runs += 1
        if runs > 8 + count // 32:
            return False  # sizes that do not repeat: walk them
        odw, stop = _stretch(i, count)
        vals: Column = []
        ods: Column = []
        keys: Column = []
        hdrs: Column = []
        try:
            rend = walk_general(buf, pos, 1, ods, [], keys, vals, hdrs)
            if rend > end or ods[0] != i or keys[0] is not None or hdrs:
                return False
            run = _Run(buf, pos, rend - pos, odw)
        except (IndexError, ProtocolDecodeError, ValueError):
            return False
        n = min(stop - i, (end - pos) // run.size)
        if not run.holds(buf, pos, i, n, odw):
            lo, hi = 1, n - 1  # record i holds: find the longest run
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if run.holds(buf, pos, i, mid, odw):
                    lo = mid
                else:
                    hi = mid - 1
            n = lo
        pos += n * run.size
        i += n
    return pos == end
