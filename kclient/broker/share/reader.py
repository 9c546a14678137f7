"""What a share fetch reads from a partition's log: batch boundaries and the bytes to return.

:func:`spans` walks the batch headers from an offset (no record is decoded): each batch is a
span a share partition may acquire, except control batches (transaction markers) and, for
read_committed, the batches of aborted transactions, which are archived unseen (a share fetch
answer carries no aborted-transaction list: the broker leaves them out).  :func:`covering`
reads the bytes holding every acquired offset, so no acquired record is missing from the
answer (a client acknowledges an acquired offset without a record as a gap).
"""
from __future__ import annotations

from typing import Any

from kclient.protocol.records import v2
from kclient.protocol.records.reader import scan_entries

from ..log import Log
from .partition import Span

__all__ = ["covering", "read_bytes", "spans"]

_MAX_READ = 64 << 20


def read_bytes(log: Log, offset: int, limit: int, max_offset: int | None = None) -> bytes:
    """Up to ``limit`` bytes of whole entries from ``offset`` (at least the first entry)."""
    data = b""
    while True:
        region: Any = log.read(offset, limit, max_offset)
        data = region.read() if hasattr(region, "read") else bytes(region or b"")
        scan = scan_entries(data)
        if scan.entries or not data or limit >= _MAX_READ:
            return data[:scan.valid_bytes]
        limit = max(limit * 2, scan.incomplete_size or 0)


def spans(log: Log, start: int, limit: int, committed: bool) -> list[Span]:
    """The batches from ``start`` below the high watermark (read_committed: below the last
    stable offset, aborted transactions' batches not deliverable)."""
    bound = log.last_stable_offset if committed else log.log_end_offset
    if start >= bound or start < log.log_start_offset:
        return []
    data = read_bytes(log, start, limit, bound if committed else None)
    aborted = sorted(log.aborted_transactions(start, bound), key=lambda t: t.first_offset) \
        if committed else []
    open_aborts: set[int] = set()
    out: list[Span] = []
    for entry in scan_entries(data).entries:
        if entry.magic != 2:
            first = last = entry.offset
            out.append((first, last, True))
            continue
        batch = v2.read_batch(data, entry.position, entry.size - 12, validate_crc=False,
                              decode=False)
        if batch.last_offset >= bound:
            break
        while aborted and aborted[0].first_offset <= batch.last_offset:
            open_aborts.add(aborted.pop(0).producer_id)
        deliverable = not batch.is_control
        if batch.is_transactional and batch.producer_id in open_aborts:
            deliverable = False
            if batch.is_control:
                open_aborts.discard(batch.producer_id)
        out.append((batch.base_offset, batch.last_offset, deliverable))
    return out


def covering(log: Log, first: int, last: int, limit: int) -> bytes:
    """Whole entries from the one holding ``first`` through the one holding ``last``."""
    parts: list[bytes] = []
    offset = first
    while offset <= last:
        data = read_bytes(log, offset, limit)
        entries = scan_entries(data).entries
        if not entries:
            break
        end = 0
        for entry in entries:
            end = entry.position + entry.size
            next_offset = _next_offset(data, entry)
            if next_offset > last:
                break
        parts.append(data[:end])
        offset = _next_offset(data, entries[-1]) if end == len(data) else last + 1
    return b"".join(parts)


def _next_offset(data: bytes, entry: Any) -> int:
    """The offset after an entry."""
    if entry.magic != 2:
        return int(entry.offset) + 1
    return int(v2.read_batch(data, entry.position, entry.size - 12, validate_crc=False,
                             decode=False).last_offset) + 1
