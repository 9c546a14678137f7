"""What a share fetch reads from a partition's log: batch boundaries and the bytes to return.

:func:`spans` walks the batch headers from an offset (no record is decoded): each batch is a
span a share partition may acquire, except control batches (transaction markers) and, for
read_committed, the batches of aborted transactions, which are archived unseen (a share fetch
answer carries no aborted-transaction list: the broker leaves them out).  :func:`covering`
reads the bytes holding every acquired offset, so no acquired record is missing from the
answer (a client acknowledges an acquired offset without a record as a gap).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kclient.protocol.records import v2
from kclient.protocol.records.reader import scan_entries

from ..log import Log
from .partition import Span

__all__ = ["covering", "read_bytes", "spans"]

_MAX_READ = 64 << 20
#: bytes read from a log at a time (an acquisition rarely needs more than a few batches)
_CHUNK = 256 << 10


def read_bytes(log: Log, offset: int, limit: int, max_offset: int | None = None) -> bytes:
    """Up to ``limit`` bytes of whole entries from ``offset`` (at least the first entry)."""
    data = b""
    while True:
        region: Any = log.read(offset, limit, max_offset)
        data = region.read() if hasattr(region, "read") else bytes(region or b"")
        scan = scan_entries(data)
        if scan.entries or not data or limit >= _MAX_READ:
            return data[: scan.valid_bytes]
        limit = max(limit * 2, scan.incomplete_size or 0)


def spans(log: Log, start: int, limit: int, committed: bool) -> Iterator[Span]:
    """The batches from ``start`` below the high watermark (read_committed: below the last
    stable offset, aborted transactions' batches not deliverable), up to about ``limit``
    bytes, read a chunk at a time as the caller goes on (an acquisition stops early)."""
    bound = log.last_stable_offset if committed else log.log_end_offset
    if start >= bound or start < log.log_start_offset:
        return
    aborted = (
        sorted(log.aborted_transactions(start, bound), key=lambda t: t.first_offset)
        if committed
        else []
    )
    open_aborts: set[int] = set()
    offset, budget = start, limit
    while offset < bound and budget > 0:
        data = read_bytes(log, offset, min(_CHUNK, budget), bound if committed else None)
        entries = scan_entries(data).entries
        if not entries:
            return
        budget -= len(data)
        for entry in entries:
            if entry.magic != 2:
                offset = entry.offset + 1
                yield entry.offset, entry.offset, True
                continue
            batch = v2.read_batch(
                data, entry.position, entry.size - 12, validate_crc=False, decode=False
            )
            if batch.last_offset >= bound:
                return
            while aborted and aborted[0].first_offset <= batch.last_offset:
                open_aborts.add(aborted.pop(0).producer_id)
            deliverable = not batch.is_control
            if batch.is_transactional and batch.producer_id in open_aborts:
                deliverable = False
                if batch.is_control:
                    open_aborts.discard(batch.producer_id)
            offset = batch.last_offset + 1
            yield batch.base_offset, batch.last_offset, deliverable


def covering(log: Log, first: int, last: int) -> bytes:
    """Whole entries from the one holding ``first`` through the one holding ``last``."""
    parts: list[bytes] = []
    offset = first
    while offset <= last:
        data = read_bytes(log, offset, _CHUNK)
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
        offset = next_offset
    return b"".join(parts)


def _next_offset(data: bytes, entry: Any) -> int:
    """The offset after an entry."""
    if entry.magic != 2:
        return int(entry.offset) + 1
    return (
        int(
            v2.read_batch(
                data, entry.position, entry.size - 12, validate_crc=False, decode=False
            ).last_offset
        )
        + 1
    )
