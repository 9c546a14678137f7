"""The caught-up reader's usual Fetch answer, straight to columns: one partition, no error,
read_uncommitted, only plain v2 batches (uncompressed, no control batch, offsets in order).

A hot-path copy of :func:`~kclient.core.fetch.read_response` ->
:func:`~kclient.core.fetch.message_set` -> :func:`~kclient.core.columns.message_columns` for
that one answer shape: the same checks (entry sizes and magic, CRCs, the batches' own
offsets) and the same columns, without the message set and its lazy views in between, on
the path from the broker's answer to ``poll()`` returning (issue 23's end-to-end latency).
Anything else gives None, and the caller takes the general path, which decides and names
what is wrong.  ``tests/core/test_fetch_plain.py`` holds it equal to that path.
"""

from __future__ import annotations

from typing import Any

from crc32c import crc32c

from kclient.protocol.records.reader import check_crcs, entry_next_offset, scan_entries
from kclient.protocol.records.v2 import plain_columns
from kclient.protocol.speedups import load_speedup

from .columns import MessageColumns, plain_message_columns
from .fetch import FetchSettings, PartitionFetch

__all__ = ["plain_answer", "plain_part"]

#: the C twin of the usual answer (kclient/protocol/records/_walk.pyx), when built and wanted
_walk = load_speedup("kclient.protocol.records._walk")
_plain_batches = getattr(_walk, "plain_batches", None)


def plain_answer(
    resp: Any, request: PartitionFetch, settings: FetchSettings
) -> tuple[MessageColumns, int] | None:
    """``(columns, bytes of records)`` of the one-partition answer ``resp`` (Fetch v4 or
    later) to ``request`` when it is the plain shape above (:func:`plain_part`); None for
    anything else."""
    if getattr(resp, "error_code", 0):
        return None
    topics = resp.responses
    if len(topics) != 1 or topics[0].topic != request.topic:
        return None
    parts = topics[0].partitions
    if len(parts) != 1 or parts[0].partition_index != request.partition:
        return None
    return plain_part(parts[0], request.topic, request.partition, request.offset, settings)


def plain_part(
    part: Any, topic: str, partition: int, offset: int, settings: FetchSettings
) -> tuple[MessageColumns, int] | None:
    """``(columns, bytes of records)`` of one partition's answer (Fetch v4 or later) to a
    fetch from ``offset`` when it has no error, read_uncommitted, only plain v2 batches, a
    record at or after ``offset`` and a first entry within ``max_buffer_size``; else None."""
    records = part.records
    if settings.isolation_level or part.error_code or not records:
        return None
    walked = (  # one C call for the usual answer; None: the Python walk decides
        None
        if _plain_batches is None
        else _plain_batches(
            records, offset, settings.max_buffer_size, crc32c if settings.validate_crc else None
        )
    )
    if walked is None:
        walked = _walk_plain_batches(records, offset, settings)
        if walked is None:
            return None
    cols = plain_message_columns(
        topic,
        partition,
        offset,
        walked[:6],
        max(offset, walked[6]),
        part.high_watermark,
        getattr(part, "log_start_offset", -1),  # (Fetch v5 on)
    )
    return cols, len(records)


def _walk_plain_batches(
    records: Any, offset: int, settings: FetchSettings
) -> tuple[Any, ...] | None:
    """The Python twin of ``_walk.plain_batches`` and the reference: ``(offsets, timestamps,
    timestamp types, keys, values, headers, next offset)`` of the plain answer, else None."""
    scan = scan_entries(records)
    spans = scan.entries
    if scan.error is not None or not spans or spans[0].size > settings.max_buffer_size:
        return None
    if settings.validate_crc and check_crcs(records, spans)[1] is not None:
        return None
    plain = plain_columns(records, spans, offset)
    if plain is None or not plain[0]:
        return None
    return (*plain, entry_next_offset(records, spans[-1]))
