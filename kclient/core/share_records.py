"""A partition's ShareFetch answer, for :mod:`kclient.core.share_fetch`: cut into pieces of
whole record batches (a poll decodes about what it hands out), and decoded into the acquired
records, one run per record batch, and the acquired offsets with no record (gaps)."""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any, NamedTuple

from kclient.protocol.records.reader import entry_next_offset, in_place, scan_entries
from kclient.structs import ShareConsumerRecord, TopicPartition

from .consumer_records import build_records
from .message_set import ByteBufferMessageSet

__all__ = ["pieces", "span", "decode_acquired"]

_OFFSET = operator.attrgetter("offset")
_MAX_OFFSET = 1 << 63


class _Acquired(NamedTuple):
    """An acquired range of a piece of a partition's answer (as the answer's own)."""

    first_offset: int
    last_offset: int
    delivery_count: int


class _Piece(NamedTuple):
    """Whole record batches of a partition's answer and the acquired ranges they cover."""

    records: Any
    acquired_records: list[_Acquired]


def pieces(p: Any, size: int) -> list[Any]:
    """A partition's answer cut into pieces of whole record batches of at least ``size``
    offsets each (the acquired ranges cut with them), so a poll decodes about what it hands
    out: the rest is built by later polls, or while they wait for a commit's answer.  An
    answer of one piece, or one whose batches do not scan cleanly, stays whole."""
    data = p.records
    if not data or len(p.acquired_records) == 0:
        return [p]
    buf = in_place(data)
    scan = scan_entries(buf)
    entries = scan.entries
    if scan.error is not None or scan.truncated or len(entries) < 2:
        return [p]
    cuts: list[tuple[int, int]] = []  # (byte position, first offset) where each piece starts
    start = entries[0].offset
    for e in entries:
        if not cuts or e.offset - start >= size:
            cuts.append((e.position, e.offset))
            start = e.offset
    if len(cuts) < 2:
        return [p]
    ranges = [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]
    out: list[Any] = []
    for i, (pos, lo) in enumerate(cuts):
        last = i + 1 == len(cuts)
        end, hi = (len(buf), _MAX_OFFSET) if last else cuts[i + 1]
        if i == 0:
            lo = -1
        got = [_Acquired(max(f, lo), min(t, hi - 1), c) for f, t, c in ranges if f < hi and t >= lo]
        if got:
            out.append(_Piece(buf[pos:end], got))
    return out


def _by_batch(
    records: list[ShareConsumerRecord], ends: list[int]
) -> list[list[ShareConsumerRecord]]:
    """``records`` (ascending offsets) cut where a record batch ends (``ends``: each batch's
    next offset, ascending)."""
    out: list[list[ShareConsumerRecord]] = []
    start, n = 0, len(records)
    for end in ends[bisect_right(ends, records[0].offset) :]:
        cut = bisect_left(records, end, start, n, key=_OFFSET)
        if cut > start:
            out.append(records[start:cut])
            start = cut
        if start == n:
            return out
    if start < n:
        out.append(records[start:])
    return out


def span(p: Any) -> int:
    """How many offsets a partition's answer acquired."""
    return sum(a.last_offset - a.first_offset + 1 for a in p.acquired_records)


def decode_acquired(
    tp: TopicPartition,
    p: Any,
    key: Callable[[Any], Any] | None,
    value: Callable[[Any], Any] | None,
    check_crcs: bool,
) -> tuple[list[list[ShareConsumerRecord]], list[int], int]:
    """The acquired records of one partition's answer (or piece) as runs of one record batch
    each, the acquired offsets with no record, and how many records."""
    ranges = sorted((a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records)
    data = p.records if p.records is not None else b""
    ms = ByteBufferMessageSet(
        data, ranges[0][0], topic=tp.topic, partition=tp.partition, validate_crc=check_crcs
    )
    cols = ms.columns()
    offsets = cols.offsets
    ends = [entry_next_offset(ms.buffer, e) for e in ms.entries]  # each batch's end
    gaps: list[int] = []
    got: list[ShareConsumerRecord] = []
    for first, last, count in ranges:
        i, j = bisect_left(offsets, first), bisect_right(offsets, last)
        if j - i != last - first + 1:  # offsets acquired with no record
            present = set(offsets[i:j])
            gaps += (g for g in range(first, last + 1) if g not in present)
        if j > i:
            got += build_records(tp, cols, i, j, key, value, True, ShareConsumerRecord, (count,))
    return (_by_batch(got, ends) if got else []), gaps, len(got)
