"""Records buffer -> :class:`MessageAndOffset` objects, fast.

Entry framing, CRC checks and the formats' rules come from :mod:`kclient.protocol.records`; this
module adds the consumer's hot path on top:

* CRCs of every complete entry are checked up front (C speed: ``crc32c`` / ``zlib.crc32``), so
  a fetch knows at once whether, and at which offset, its buffer is corrupt;
* v2 batches are decoded column-wise: one Python loop (:mod:`kclient.simple.walk`) walks the
  records and slices the values, then ``map(MessageAndOffset, zip(...))`` builds the objects
  in C, lazily, while the caller iterates (nothing of a batch is kept alive but its value
  bytes); records the walkers do not handle (headers, null values, long varints) go through the
  general decoder of ``kclient.protocol.records.v2``.

Records below the fetch offset (a v2 batch or a v0/v1 compressed wrapper that starts before it)
are skipped; control batches (transaction markers) are not delivered.
"""
from __future__ import annotations

import struct
import zlib
from bisect import bisect_left
from itertools import chain, repeat
from operator import add
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from crc32c import crc32c

from kclient.protocol import compression
from kclient.protocol.errors import CorruptRecordError, ProtocolDecodeError
from kclient.protocol.records import legacy, v2
from kclient.protocol.records.reader import EntrySpan

from .messages import (CREATE_TIME, LEGACY_INFO, LOG_APPEND_TIME, NO_TIMESTAMP,
                       NO_TIMESTAMP_TYPE, BatchInfo, MessageAndOffset)
from .walk import Unusual, walk_cached, walk_direct, walk_sequential

__all__ = ["check_crcs", "decode_entries", "entry_next_offset"]

_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_LAST_DELTA = struct.Struct(">i")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_CRC = struct.Struct(">I")
_EMPTY = ()


def corrupt(offset: int, message: str) -> CorruptRecordError:
    return CorruptRecordError(message, offset=offset)


# ----------------------------------------------------------------------------- checks
def check_crcs(buf: bytes, spans: Sequence[EntrySpan]) -> Tuple[int, Optional[CorruptRecordError]]:
    """Check every entry's CRC; ``(number of good entries before the first bad one, error)``."""
    for i, (pos, total, magic, offset) in enumerate(spans):
        stored = _CRC.unpack_from(buf, pos + 17 if magic == 2 else pos + 12)[0]
        if magic == 2:
            computed = crc32c(memoryview(buf)[pos + 21:pos + total])
            kind = "CRC-32C"
        else:
            computed = zlib.crc32(memoryview(buf)[pos + 16:pos + total])
            kind = "CRC-32"
        if computed != stored:
            return i, corrupt(offset, f"{kind} mismatch: stored {stored}, computed {computed}")
    return len(spans), None


def entry_next_offset(buf: bytes, span: EntrySpan) -> int:
    """The offset after an entry's last record (v2: base + lastOffsetDelta + 1)."""
    if span.magic == 2:
        return span.offset + _LAST_DELTA.unpack_from(buf, span.position + 23)[0] + 1
    return span.offset + 1


# ----------------------------------------------------------------------------- v2
def _v2_general(buf, start: int, end: int, count: int, base_offset: int, base_ts: int,
                ts_type: int, max_ts: int, info: BatchInfo) -> List[MessageAndOffset]:
    """Any v2 records (headers, null values, long varints) through the records package."""
    out = []
    app = out.append
    lat = ts_type == LOG_APPEND_TIME
    for r in v2.iter_records_v2(buf, start, end, count, base_offset, base_ts, ts_type):
        h = r._headers
        app(MessageAndOffset((r.offset, r.key, r.value, max_ts if lat else r.timestamp,
                              ts_type, tuple(h) if h else _EMPTY, info)))
    return out


def _decode_v2(buf: bytes, pos: int, fetch_offset: int, max_decompressed: int
               ) -> Iterable[MessageAndOffset]:
    (base, size, epoch, _, _, attrs, last_delta, base_ts, max_ts, pid, pepoch, bseq,
     count) = _V2_HEADER.unpack_from(buf, pos)
    if attrs & 0x20 or base + last_delta < fetch_offset:
        return _EMPTY  # a control batch (transaction marker), or wholly below the fetch offset
    codec = attrs & 0x07
    info = BatchInfo(2, codec, bool(attrs & 0x10), pid, pepoch, bseq, epoch)
    start, end = pos + 61, pos + 12 + size
    if codec:
        try:
            buf = compression.decompress(codec, memoryview(buf)[start:end], 2, max_decompressed)
        except ProtocolDecodeError as exc:
            raise corrupt(base, f"cannot decompress batch: {exc}") from None
        start, end = 0, len(buf)
    if count < 0 or count > (end - start) // v2.MIN_RECORD_SIZE:
        raise corrupt(base, f"record count {count} does not fit in {end - start} bytes")
    ts_type = LOG_APPEND_TIME if attrs & 0x08 else CREATE_TIME
    # as producers write batches, offset deltas run 0..count-1 (compaction leaves gaps)
    sequential = count == last_delta + 1
    keys: Optional[list] = None
    ods: Optional[list] = None  # offset deltas, when not sequential
    vals: list = []
    tss: list = []
    try:
        try:
            if not sequential:
                raise Unusual
            stop, done = walk_cached(buf, start, count, vals, tss)
            if done < count:
                stop = walk_sequential(buf, stop, done, count, vals, tss)
        except Unusual:  # keys (or gaps): decode field by field
            keys, vals, tss = [], [], []
            if sequential:
                stop = walk_sequential(buf, start, 0, count, vals, tss, keys)
            else:
                ods = []
                stop = walk_direct(buf, start, count, keys, vals, tss, ods)
    except (Unusual, IndexError, ProtocolDecodeError):
        stop = -1  # headers, null values, long varints or real damage: the general decoder
    if stop != end:
        try:
            return _skip_below(_v2_general(buf, start, end, count, base, base_ts, ts_type,
                                           max_ts, info), fetch_offset)
        except (IndexError, ProtocolDecodeError) as exc:
            raise corrupt(base, f"malformed record in batch: {exc}") from None
    first = base
    if base < fetch_offset:
        k = fetch_offset - base if ods is None else bisect_left(ods, fetch_offset - base)
        if k:
            del vals[:k], tss[:k]
            if ods is not None:
                del ods[:k]
            if keys is not None:
                del keys[:k]
            first += k
    offsets = range(first, first + len(vals)) if ods is None else map(add, repeat(base), ods)
    stamps = repeat(max_ts) if ts_type == LOG_APPEND_TIME else map(add, repeat(base_ts), tss)
    return map(MessageAndOffset, zip(offsets, repeat(None) if keys is None else keys, vals,
                                     stamps, repeat(ts_type), repeat(_EMPTY), repeat(info)))


def _skip_below(messages: List[MessageAndOffset], fetch_offset: int) -> List[MessageAndOffset]:
    if messages and messages[0][0] < fetch_offset:
        return [m for m in messages if m[0] >= fetch_offset]
    return messages


# ----------------------------------------------------------------------------- v0 / v1
def _decode_legacy(buf: bytes, spans: Sequence[EntrySpan], fetch_offset: int,
                   max_decompressed: int) -> List[MessageAndOffset]:
    """A run of v0/v1 entries (plain messages and compressed wrappers), CRCs already checked."""
    out: list = []
    app = out.append
    for pos, total, magic, offset in spans:
        attrs = buf[pos + 17]
        codec = attrs & 0x07
        if codec:
            if offset < fetch_offset:
                continue  # the wrapper's offset is its last inner message's
            msg = legacy.parse_message(buf, pos, total - 12, False)
            info = LEGACY_INFO[(magic, codec)]
            for r in legacy.inner_records(msg, legacy.decompress_wrapper(msg, max_decompressed)):
                if r.offset >= fetch_offset:
                    app(MessageAndOffset((r.offset, r.key, r.value, r.timestamp,
                                          r.timestamp_type, _EMPTY, info)))
            continue
        if offset < fetch_offset:
            continue
        end = pos + total
        if magic == 0:
            ts, ts_type, p = NO_TIMESTAMP, NO_TIMESTAMP_TYPE, pos + 18
        else:
            ts = _INT64.unpack_from(buf, pos + 18)[0]
            ts_type, p = (LOG_APPEND_TIME if attrs & 0x08 else CREATE_TIME), pos + 26
        kl = _INT32.unpack_from(buf, p)[0]
        p += 4
        if kl < 0:
            key = None
            if kl != -1:
                raise corrupt(offset, f"invalid key length {kl}")
        else:
            key = buf[p:p + kl]
            p += kl
        if p + 4 > end:
            raise corrupt(offset, f"invalid key length {kl}")
        vl = _INT32.unpack_from(buf, p)[0]
        p += 4
        if vl < 0:
            value = None
            if vl != -1 or p != end:
                raise corrupt(offset, f"invalid value length {vl}")
        else:
            value = buf[p:p + vl]
            if p + vl != end:
                raise corrupt(offset, f"invalid value length {vl}")
        app(MessageAndOffset((offset, key, value, ts, ts_type, _EMPTY, LEGACY_INFO[(magic, 0)])))
    return out


# ----------------------------------------------------------------------------- entries
def _runs(spans: Sequence[EntrySpan]) -> Iterator[Tuple[int, Sequence[EntrySpan]]]:
    """Group consecutive entries: each v2 batch alone, runs of v0/v1 entries together."""
    i, n = 0, len(spans)
    while i < n:
        if spans[i].magic == 2:
            yield 2, spans[i:i + 1]
            i += 1
            continue
        j = i
        while j < n and spans[j].magic != 2:
            j += 1
        yield 1, spans[i:j]
        i = j


def _decode_all(buf: bytes, spans: Sequence[EntrySpan], fetch_offset: int,
                max_decompressed: int, error: Optional[BaseException], context: str
                ) -> Iterator[Iterable[MessageAndOffset]]:
    for kind, run in _runs(spans):
        try:
            if kind == 2:
                yield _decode_v2(buf, run[0].position, fetch_offset, max_decompressed)
            else:
                yield _decode_legacy(buf, run, fetch_offset, max_decompressed)
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"{context}: {exc.context}", offset=exc.offset) from None
        except (IndexError, struct.error, ProtocolDecodeError) as exc:
            raise CorruptRecordError(f"{context}: malformed entry: {exc}",
                                     offset=run[0].offset) from None
    if error is not None:
        raise error


def decode_entries(buf: bytes, spans: Sequence[EntrySpan], fetch_offset: int = 0, *,
                   max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED,
                   error: Optional[BaseException] = None, context: str = "message set"
                   ) -> Iterator[MessageAndOffset]:
    """Lazily decode complete entries (CRCs already checked) into MessageAndOffset objects.

    Records below ``fetch_offset`` and control batches are skipped; ``error``, if given, is
    raised after the last record; a malformed entry raises CorruptRecordError naming
    ``context`` and the entry's offset.
    """
    return chain.from_iterable(_decode_all(buf, spans, fetch_offset, max_decompressed, error,
                                           context))
