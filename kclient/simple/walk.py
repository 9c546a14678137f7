"""The v2 record walkers of the fetch hot path: records -> value / timestamp / key columns.

Each walker decodes the records of one (decompressed) batch into parallel lists and returns the
position where it stopped; the caller checks that it is the batch's end.  Anything a walker does
not handle raises :class:`Unusual` (the caller then tries a more general walker, and finally
the general decoder of ``kclient.protocol.records.v2``, which reports real corruption).

* :func:`walk_cached` - null keys, no headers, offset deltas 0..n-1: a record's prefix (length,
  attributes, timestamp delta, key length, value length; the offset delta is skipped) is looked
  up, as bytes, in a bounded cache of decoded prefixes; it gives up after a stretch of mostly
  misses;
* :func:`walk_sequential` - offset deltas 0..n-1 (as producers write batches): the delta is
  skipped by its width, the rest decoded field by field; keys optional;
* :func:`walk_direct` - any offsets, keys optional, every field decoded.
"""
from __future__ import annotations

from typing import Optional, Tuple

from kclient.protocol.varint import ZIGZAG_DECODE, decode_varint

__all__ = ["Unusual", "walk_cached", "walk_sequential", "walk_direct", "CACHE_MAX"]

_ZD = ZIGZAG_DECODE
#: Bound on the prefix cache (entries); it is cleared when full.
CACHE_MAX = 1 << 15
_CACHE: dict = {}


class Unusual(Exception):
    """A record the fast loops do not handle (headers, long varints, bad lengths)."""


def prefix(buf, pos: int) -> Tuple[int, int, int, int, int, int]:
    """Decode a null-key record's prefix.

    Returns ``(size, value_start, ts_delta, offset_delta, head, od_width)``: ``size`` is the
    whole record (length varint included), ``value_start`` relative to ``pos``; ``head`` is the
    width of length + attributes + timestamp delta, after which come the offset delta
    (``od_width`` bytes) and the tail (null key, value length) up to ``value_start``.  Raises
    Unusual unless the key is null and the record ends right after its value with a 1-byte
    header count.
    """
    zd = _ZD
    b = buf[pos]
    if b < 128:
        p = pos + 1
        rend = p + zd[b]
    else:
        b2 = buf[pos + 1]
        if b2 < 128:
            p = pos + 2
            rend = p + zd[b + (b2 << 7) - 128]
        else:
            ln, p = decode_varint(buf, pos)
            rend = p + ln
    b = buf[p + 1]
    if b < 128:
        tsd = zd[b]
        p += 2
    else:
        tsd, p = decode_varint(buf, p + 1)
    head = p - pos
    b = buf[p]
    if b < 128:
        od = zd[b]
        p += 1
    else:
        b2 = buf[p + 1]
        if b2 < 128:
            od = zd[b + (b2 << 7) - 128]
            p += 2
        else:
            od, p = decode_varint(buf, p)
    odw = p - pos - head
    if buf[p] != 1:
        raise Unusual
    b = buf[p + 1]
    if b < 128:
        vl = zd[b]
        p += 2
    else:
        b2 = buf[p + 2]
        if b2 < 128:
            vl = zd[b + (b2 << 7) - 128]
            p += 3
        else:
            vl, p = decode_varint(buf, p + 1)
    if vl < 0 or p + vl != rend - 1:
        raise Unusual
    return rend - pos, p - pos, tsd, od, head, odw


def _od_width(i: int) -> int:
    """Bytes of the zig-zag varint of offset delta ``i`` (``i < 2 ** (7 * width - 1)``)."""
    width = 1
    while i >= 1 << (7 * width - 1):
        width += 1
    return width


def walk_cached(buf, pos: int, count: int, vals: list, tss: list) -> Tuple[int, int]:
    """Null keys, no headers, offset deltas 0..count-1: walk with the prefix cache.

    Returns ``(end position, records walked)``.  A record's prefix is its head (length,
    attributes, timestamp delta), its offset delta and its tail (null key, value length).  The
    cache maps head + tail bytes to the decoded (size, value start, timestamp delta); the
    offset delta, ``i`` in a producer's batch, is skipped by its width as in
    :func:`walk_sequential`, so the cache holds one entry per record shape, not per record.
    Varints are prefix-free and an entry is only stored when the record's layout is the one the
    slices assume, so a hit decodes exactly what decoding would.  Gives up (fewer than
    ``count`` walked) after a stretch of mostly misses: shapes that do not repeat.
    """
    cache = _CACHE
    get = cache.get
    vapp, tapp = vals.append, tss.append
    done = 0
    while done < count:
        odw = _od_width(done)
        stop = min(count, 1 << (7 * odw - 1), done + 1024)
        h = prefix(buf, pos)
        if h[5] != odw or h[3] != done:
            raise Unusual
        head, t0, t1 = h[4], h[4] + odw, h[1]
        misses = 0
        for i in range(done, stop):
            key = buf[pos:pos + head] + buf[pos + t0:pos + t1]
            h = get(key)
            if h is None:
                size, vs, tsd, od, hw, w = prefix(buf, pos)
                if od != i:
                    raise Unusual  # not the offset delta a producer writes here
                if hw != head or w != odw or vs != t1:
                    break  # another layout (wider timestamp delta, value size): new stretch
                h = size - 1, tsd
                if len(cache) >= CACHE_MAX:
                    cache.clear()
                cache[key] = h
                misses += 1
            last, tsd = h
            e = pos + last
            if buf[e]:
                raise Unusual  # headers
            vapp(buf[pos + t1:e])
            tapp(tsd)
            pos = e + 1
        else:
            i = stop
        if misses * 2 > i - done and i - done >= 64:
            return pos, i
        done = i
    return pos, done


def walk_sequential(buf, pos: int, start: int, count: int, vals: list, tss: list,
                     keys: Optional[list] = None) -> int:
    """No headers, offset deltas ``start..count-1`` (a batch as producers write it).

    The offset delta is skipped by its width (1 byte below 64, 2 below 8192, ...), not decoded;
    lengths are checked against the record length.  Keys must be null unless ``keys`` is a
    list to collect them.  Returns the end position.
    """
    zd = _ZD
    vapp, tapp = vals.append, tss.append
    kapp = keys.append if keys is not None else None
    while start < count:
        if start < 64:
            odw, stop = 1, min(count, 64)
        elif start < 8192:
            odw, stop = 2, min(count, 8192)
        elif start < 1 << 20:
            odw, stop = 3, min(count, 1 << 20)
        else:
            raise Unusual
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
                else:
                    b2 = buf[p + 1]
                    if b2 >= 128:
                        raise Unusual
                    b = zd[b + (b2 << 7) - 128]
                    p += 2
                kapp(buf[p:p + b])
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


def walk_direct(buf, pos: int, count: int, keys: Optional[list], vals: list, tss: list,
                 ods: list) -> int:
    """No headers: decode ``count`` records field by field (keys appended when ``keys``)."""
    zd = _ZD
    vapp, tapp, oapp = vals.append, tss.append, ods.append
    kapp = keys.append if keys is not None else None
    for _ in range(count):
        b = buf[pos]
        if b < 128:
            p = pos + 1
            rend = p + zd[b]
        else:
            b2 = buf[pos + 1]
            if b2 < 128:
                p = pos + 2
                rend = p + zd[b + (b2 << 7) - 128]
            else:
                ln, p = decode_varint(buf, pos)
                rend = p + ln
        b = buf[p + 1]
        if b < 128:
            tapp(zd[b])
            p += 2
        else:
            tsd, p = decode_varint(buf, p + 1)
            tapp(tsd)
        b = buf[p]
        if b < 128:
            oapp(zd[b])
            p += 1
        else:
            b2 = buf[p + 1]
            if b2 < 128:
                oapp(zd[b + (b2 << 7) - 128])
                p += 2
            else:
                od, p = decode_varint(buf, p)
                oapp(od)
        b = buf[p]
        if b == 1:
            p += 1
            if kapp is not None:
                kapp(None)
        else:
            if kapp is None or b & 1:
                raise Unusual  # a key where none was expected, or a negative length
            if b < 128:
                kl = b >> 1
                p += 1
            else:
                kl, p = decode_varint(buf, p)
            kapp(buf[p:p + kl])
            p += kl
        b = buf[p]
        if b < 128:
            vl = zd[b]
            p += 1
        else:
            b2 = buf[p + 1]
            if b2 < 128:
                vl = zd[b + (b2 << 7) - 128]
                p += 2
            else:
                vl, p = decode_varint(buf, p)
        e = rend - 1
        if p + vl != e or vl < 0 or buf[e]:
            raise Unusual
        vapp(buf[p:e])
        pos = rend
    return pos
