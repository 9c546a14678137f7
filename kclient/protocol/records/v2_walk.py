"""Message format v2, decoding: the records section of a batch -> columns.

Each record (see :mod:`kclient.protocol.records.v2` for the batch around it)::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint, key, valueLength varint, value, headersCount varint,
    [headerKeyLength varint, headerKey utf-8, headerValueLength varint, headerValue]

:func:`decode_columns` decodes the records of one (decompressed) batch into parallel lists -
offset deltas, timestamp deltas, keys, values, headers - from which a record factory builds the
caller's objects (:func:`kclient.protocol.records.common.make_records`); values and keys are
sliced straight out of the buffer.  It tries three walkers, the most specialised first:

* :func:`walk_cached` - offset deltas 0..n-1 (as producers write batches), null keys, no
  headers: a record's head (length, attributes, timestamp delta) and tail (key length, value
  length) are looked up, as bytes, in a bounded cache of decoded record shapes; the offset delta
  between them is skipped by its width.  It gives up when most records miss;
* :func:`walk_sequential` - offset deltas 0..n-1, keys optional, no headers, 1- and 2-byte
  varints: the offset delta is skipped by its width, the other fields are decoded inline;
* :func:`walk_general` - anything the format allows; it is also the one that reports damage.

The first two raise :class:`Unusual` for a record they do not handle (or stop somewhere else
than the batch's end); the batch is then decoded again by the next one.  A batch whose record
count equals its lastOffsetDelta + 1 is taken to hold offset deltas 0..n-1 (Kafka's rule for
the batches it accepts), so those deltas are not read.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.errors import ProtocolDecodeError
from kclient.protocol.records.common import corrupt
from kclient.protocol.speedups import load_speedup
from kclient.protocol.varint import ZIGZAG_DECODE, Buffer, decode_varint

#: Smallest possible encoded record (length, attributes, ts delta, offset delta, key length,
#: value length, header count: one byte each).
MIN_RECORD_SIZE = 7
#: Bound on the shapes cached for one record layout (that cache is emptied when full).
CACHE_MAX = 1 << 12
#: Bound on the layouts cached at once (all caches are dropped when one more is needed).
MAX_LAYOUTS = 8

_ZD = ZIGZAG_DECODE
#: (head width, offset delta width, tail end) -> {head + tail bytes: (size - 1, ts delta)}
_CACHES: dict[tuple[int, int, int], dict[bytes, tuple[int, int]]] = {}
#: A decoded column (offsets, timestamps, keys, values, or ``(index, headers)`` pairs).
Column = list[Any]


#: the C twin of the common case (kclient/protocol/records/_walk.pyx), when built and wanted
_walk = load_speedup("kclient.protocol.records._walk")
_walk_plain = None if _walk is None else _walk.walk_plain


class Unusual(Exception):
    """A record the fast walkers do not handle (keys, headers, null values, long varints)."""


# ----------------------------------------------------------------------------- helpers
def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` whose first byte is >= 128 (the walkers inline 1-byte ones)."""
    b2 = buf[pos + 1]
    if b2 < 128:
        return _ZD[buf[pos] + (b2 << 7) - 128], pos + 2
    return decode_varint(buf, pos)


def _width(buf: bytes, pos: int) -> int:
    """Bytes taken by the varint at ``pos``."""
    end = pos
    while buf[end] > 127:
        end += 1
    return end + 1 - pos


def _stretch(i: int, count: int) -> tuple[int, int]:
    """``(width, stop)``: offset deltas ``i..stop-1`` (< count) are varints of ``width`` bytes."""
    if i < 64:
        return 1, min(count, 64)
    if i < 8192:
        return 2, min(count, 8192)
    if i < 1 << 20:
        return 3, min(count, 1 << 20)
    raise Unusual


def decode_headers(buf: bytes, pos: int, end: int) -> tuple[Column, int]:
    """Decode a record's header list (count, then key/value pairs) at ``pos``."""
    count, pos = decode_varint(buf, pos)
    if count < 0 or count > (end - pos) // 2:
        raise ProtocolDecodeError(f"invalid header count {count}")
    headers = []
    for _ in range(count):
        kl, pos = decode_varint(buf, pos)
        if kl < 0 or pos + kl > end:
            raise ProtocolDecodeError(f"invalid header key length {kl}")
        key = bytes(buf[pos : pos + kl]).decode("utf-8", "replace")
        pos += kl
        vl, pos = decode_varint(buf, pos)
        if vl < -1 or pos + vl > end:
            raise ProtocolDecodeError(f"invalid header value length {vl}")
        if vl < 0:
            value = None
        else:
            value = buf[pos : pos + vl]
            pos += vl
        headers.append((key, value))
    return headers, pos


# ----------------------------------------------------------------------------- walkers
def walk_general(
    buf: bytes,
    pos: int,
    count: int,
    ods: Column,
    tss: Column,
    keys: Column,
    vals: Column,
    hdrs: Column,
) -> int:
    """Decode ``count`` records field by field, appending each field to its column; return the
    end position.  ``hdrs`` gets ``(index, headers)`` for the records that have headers.

    Handles every record the format allows.  Raises ProtocolDecodeError (or IndexError, past
    the buffer) on an impossible length or a record whose fields do not add up to its length.
    """
    zd = _ZD
    oapp, tapp, kapp, vapp = ods.append, tss.append, keys.append, vals.append
    for i in range(count):
        b = buf[pos]
        if b < 128:
            pos += 1
            rend = pos + zd[b]
        elif buf[pos + 1] < 128:
            rend = pos + 2 + zd[b + (buf[pos + 1] << 7) - 128]
            pos += 2
        else:
            rend, pos = decode_varint(buf, pos)
            rend += pos
        b = buf[pos + 1]  # past the attributes: the timestamp delta
        if b < 128:
            tapp(zd[b])
            pos += 2
        else:
            tsd, pos = _varint(buf, pos + 1)
            tapp(tsd)
        b = buf[pos]
        if b < 128:
            oapp(zd[b])
            pos += 1
        elif buf[pos + 1] < 128:
            oapp(zd[b + (buf[pos + 1] << 7) - 128])
            pos += 2
        else:
            od, pos = decode_varint(buf, pos)
            oapp(od)
        b = buf[pos]
        kl, pos = (zd[b], pos + 1) if b < 128 else _varint(buf, pos)
        if kl >= 0:
            kapp(buf[pos : pos + kl])
            pos += kl
        elif kl == -1:
            kapp(None)
        else:
            raise ProtocolDecodeError(f"invalid key length {kl}")
        b = buf[pos]
        if b < 128:
            vl = zd[b]
            pos += 1
        elif buf[pos + 1] < 128:
            vl = zd[b + (buf[pos + 1] << 7) - 128]
            pos += 2
        else:
            vl, pos = decode_varint(buf, pos)
        if vl < 0:
            if vl != -1:
                raise ProtocolDecodeError(f"invalid value length {vl}")
            vapp(None)  # a tombstone
        else:
            vapp(buf[pos : pos + vl])
            pos += vl
        if buf[pos]:
            hs, pos = decode_headers(buf, pos, rend)
            hdrs.append((i, hs))
        else:
            pos += 1
        if pos != rend:
            raise ProtocolDecodeError("record length does not match its fields")
    return pos


def walk_sequential(
    buf: bytes,
    pos: int,
    start: int,
    count: int,
    vals: Column,
    tss: Column,
    keys: Column | None = None,
) -> int:
    """Records ``start..count-1`` of a batch with offset deltas 0..n-1 and no headers.

    The offset delta is skipped by its width (1 byte below 64, 2 below 8192, ...), not decoded;
    lengths are checked against the record length.  Keys must be null unless ``keys`` is a
    list to collect them.  Returns the end position.
    """
    zd = _ZD
    vapp, tapp = vals.append, tss.append
    kapp = keys.append if keys is not None else None
    while start < count:
        odw, stop = _stretch(start, count)
        for _ in range(stop - start):
            b = buf[pos]
            if b < 128:
                p = pos + 1
                rend = p + zd[b]
            else:
                b2 = buf[pos + 1]
                if b2 >= 128:
                    raise Unusual
                p = pos + 2
                rend = p + zd[b + (b2 << 7) - 128]
            b = buf[p + 1]
            if b < 128:
                tapp(zd[b])
                p += 2 + odw
            else:
                b2 = buf[p + 2]
                if b2 >= 128:
                    raise Unusual
                tapp(zd[b + (b2 << 7) - 128])
                p += 3 + odw
            b = buf[p]
            if b != 1:
                if kapp is None or b & 1:
                    raise Unusual
                if b < 128:
                    b >>= 1
                    p += 1
                else:  # a key of 64 bytes or more
                    b, p = _varint(buf, p)
                kapp(buf[p : p + b])
                p += b
            elif kapp is not None:
                kapp(None)
                p += 1
            else:
                p += 1
            b = buf[p]
            if b < 128:
                vl = zd[b]
                p += 1
            else:
                b2 = buf[p + 1]
                if b2 >= 128:
                    raise Unusual
                vl = zd[b + (b2 << 7) - 128]
                p += 2
            pos = rend - 1
            if p + vl != pos or buf[pos]:
                raise Unusual
            vapp(buf[p:pos])
            pos = rend
        start = stop
    return pos


def _learn(
    buf: bytes, pos: int, i: int, odw: int, vals: Column, tss: Column
) -> tuple[int, int, int]:
    """Decode record ``i`` at ``pos`` (a cache miss) with :func:`walk_general`, appending its
    value and timestamp delta; return ``(end, head, tail_end)``: where it ends, and its layout
    (the head is length + attributes + timestamp delta; the tail, after the ``odw``-byte offset
    delta, is the key length and value length).  Raises Unusual unless the record has the
    cacheable shape: offset delta ``i``, null key, a value, no headers, and one-byte key length
    and header count (so that the layout says where everything is).
    """
    ods: Column = []
    keys: Column = []
    hdrs: Column = []
    end = walk_general(buf, pos, 1, ods, tss, keys, vals, hdrs)
    lw = _width(buf, pos)
    head = lw + 1 + _width(buf, pos + lw + 1)
    t0 = head + odw
    value = vals[-1]
    if (
        ods[0] != i
        or keys[0] is not None
        or hdrs
        or value is None
        or _width(buf, pos + head) != odw
        or buf[pos + t0] != 1
    ):
        raise Unusual
    t1 = t0 + 1 + _width(buf, pos + t0 + 1)
    if pos + t1 + len(value) + 1 != end:
        raise Unusual
    return end, head, t1


def walk_cached(buf: bytes, pos: int, count: int, vals: Column, tss: Column) -> tuple[int, int]:
    """Null keys, no headers, offset deltas 0..count-1: walk with the shape cache.

    Returns ``(end position, records walked)``.  A record that misses is decoded in full and
    its head + tail bytes are cached, per layout, with its size and timestamp delta; a record
    whose head + tail bytes (sliced as the current layout says) are cached is then read by
    slicing its value.  Varints are prefix-free and an entry is only stored for a record whose
    layout is the one its cache assumes, so a hit decodes exactly what decoding would.  The
    offset delta (``i``) is skipped by its width, so the cache holds one entry per record shape,
    not per record.  Stops early (fewer than ``count`` walked) once most records miss: shapes
    that do not repeat.
    """
    caches = _CACHES
    vapp, tapp = vals.append, tss.append
    i = misses = 0
    while i < count:
        if misses * 2 > i >= 64:
            break
        odw, stop = _stretch(i, count)
        end, head, t1 = _learn(buf, pos, i, odw, vals, tss)
        t0 = head + odw
        layout = (head, odw, t1)
        cache = caches.get(layout)
        if cache is None or len(cache) >= CACHE_MAX:
            if cache is None and len(caches) >= MAX_LAYOUTS:
                caches.clear()
            cache = caches[layout] = {}
        cache[buf[pos : pos + head] + buf[pos + t0 : pos + t1]] = end - 1 - pos, tss[-1]
        get = cache.get
        misses += 1
        pos = end
        for i in range(i + 1, stop):  # noqa: B007,B020 (i, the walk position, is read after)
            h = get(buf[pos : pos + head] + buf[pos + t0 : pos + t1])
            if h is None:
                break  # decoded (and its layout learnt) at the top of the outer loop
            last, tsd = h
            e = pos + last
            if buf[e]:
                raise Unusual  # headers
            vapp(buf[pos + t1 : e])
            tapp(tsd)
            pos = e + 1
        else:
            i = stop
    return pos, i


# ----------------------------------------------------------------------------- a batch
def decode_columns(
    buf: Buffer, start: int, end: int, count: int, base_offset: int, sequential: bool
) -> tuple[list[int] | None, list[int], Column | None, Column, Column | None]:
    """Decode the ``count`` records of ``buf[start:end]`` (a batch's records section, already
    decompressed) into ``(offset deltas, timestamp deltas, keys, values, headers)``.

    ``offset deltas`` is None when they run 0..count-1 (``sequential``: the batch's record
    count equals its lastOffsetDelta + 1); ``keys`` / ``headers`` are None when no record has
    one.  Raises CorruptRecordError (offset ``base_offset``) on any inconsistency.
    """
    if count < 0 or count > (end - start) // MIN_RECORD_SIZE:
        raise corrupt(base_offset, f"record count {count} does not fit in {end - start} bytes")
    if sequential and _walk_plain is not None:
        try:
            fast = _walk_plain(buf, start, end, count)
        except (ValueError, IndexError, TypeError, BufferError):
            fast = None  # damage or an odd buffer: the walkers below say which
        if fast is not None:
            return None, fast[0], fast[1], fast[2], None
    if type(buf) is not bytes:  # a view of a received frame: the walkers below slice values
        buf, start, end = bytes(buf[start:end]), 0, end - start  # out of bytes, not views
    if sequential:
        vals: Column = []
        tss: Column = []
        keys: Column | None = None
        try:
            try:
                stop, done = walk_cached(buf, start, count, vals, tss)
                if done < count:
                    stop = walk_sequential(buf, stop, done, count, vals, tss)
            except Unusual:  # keys (or another shape): decode field by field
                keys, vals, tss = [], [], []
                stop = walk_sequential(buf, start, 0, count, vals, tss, keys)
            if stop == end:
                return None, tss, keys, vals, None
        except (Unusual, IndexError, ProtocolDecodeError):
            pass  # headers, null values, long varints or damage: the general walker says which
    ods: Column = []
    tss = []
    keys = []
    vals = []
    found: Column = []
    try:
        stop = walk_general(buf, start, count, ods, tss, keys, vals, found)
    except (IndexError, ProtocolDecodeError) as exc:
        raise corrupt(base_offset, f"malformed record in batch: {exc}") from None
    if stop != end:
        raise corrupt(base_offset, f"{end - stop} bytes left after the batch's {count} records")
    hdrs = None
    if found:
        hdrs = [None] * count
        for i, hs in found:
            hdrs[i] = hs
    return ods, tss, keys, vals, hdrs


__all__ = [
    "MIN_RECORD_SIZE",
    "CACHE_MAX",
    "MAX_LAYOUTS",
    "Unusual",
    "decode_headers",
    "walk_general",
    "walk_sequential",
    "walk_cached",
    "decode_columns",
]
