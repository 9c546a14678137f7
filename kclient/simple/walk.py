"""The v2 record walkers of the fetch hot path: records -> value / timestamp / key columns.

Each walker decodes the records of one (decompressed) batch into parallel lists and returns the
position where it stopped; the caller checks that it is the batch's end.  Anything a walker does
not handle raises :class:`Unusual` (the caller then tries a more general walker, and finally
the general decoder of ``kclient.protocol.records.v2``, which reports real corruption).

* :func:`walk_cached` - null keys, no headers: a record's prefix (length, attributes, timestamp
  delta, offset delta, key length, value length) is looked up, as bytes, in a bounded cache of
  decoded prefixes; it gives up after a stretch of mostly misses;
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


def prefix(buf, pos: int) -> Tuple[tuple, int]:
    """Decode a null-key record's prefix: ``((size, value_start, ts_delta, offset_delta), width)``.

    ``size`` is the whole record (length varint included), positions are relative to ``pos``;
    ``width`` is how many bytes the prefix spans.  Raises Unusual unless the key is null and the
    record ends right after its value with a 1-byte header count.
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
    return (rend - pos, p - pos, tsd, od), p - pos


def walk_cached(buf, pos: int, count: int, vals: list, tss: list, ods: list) -> Tuple[int, int]:
    """Null keys, no headers: walk records with the prefix cache; ``(end position, records)``.

    The cache maps the exact prefix bytes of a record to its decoded prefix, so a hit is as
    strict as decoding; a prefix is only stored when the lookup window covered exactly it.
    Gives up (returns fewer than ``count`` records) once a stretch of 256 records mostly missed:
    timestamps or sizes that do not repeat, better decoded directly.
    """
    cache = _CACHE
    get = cache.get
    vapp, tapp, oapp = vals.append, tss.append, ods.append
    done = 0
    while done < count:
        # the offset delta's varint grows at 64 and 8192: one window width per stretch
        stop = min(count, 64 if done < 64 else done + 256)
        width = prefix(buf, pos)[1]
        misses = 0
        for _ in range(stop - done):
            key = buf[pos:pos + width]
            h = get(key)
            if h is None:
                h, w = prefix(buf, pos)
                if w == width:
                    if len(cache) >= CACHE_MAX:
                        cache.clear()
                    cache[key] = h
                misses += 1
            size, vs, tsd, od = h
            e = pos + size - 1
            vapp(buf[pos + vs:e])
            tapp(tsd)
            oapp(od)
            if buf[e]:
                raise Unusual
            pos = e + 1
        done = stop
        if misses * 4 > 256 and done > 64:
            break
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
