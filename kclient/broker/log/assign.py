"""Prepare a Produce request's records for the log: offsets, LogAppendTime and size limits.

Offsets are assigned by :func:`kclient.protocol.records.assign_offsets`, in place wherever the
format allows (v2: baseOffset only; v0/v1 messages and v1 wrappers: the outer offset; v0
wrappers, whose inner offsets are absolute, are re-encoded).  This module adds the log's own
checks: the buffer must be non-empty and whole, in the log's format, and no entry may exceed
``max.message.bytes``.  Entries the caller already validated (the produce handler does) are
passed through, so each buffer is validated once and copied once (into the bytearray that gets
its offsets and is then written).
"""

from __future__ import annotations

from typing import NamedTuple

from kclient.protocol.errors import CorruptRecordError, MessageSizeTooLargeError
from kclient.protocol.records.common import NO_TIMESTAMP
from kclient.protocol.records.ops import EntryInfo, assign_offsets


class Prepared(NamedTuple):
    """The bytes to append and what they hold."""

    data: bytes | bytearray
    first_offset: int
    last_offset: int
    max_timestamp: int
    record_count: int
    entries: list[tuple[int, int, int, int]]  # (position, size, last offset, max timestamp)


def prepare(
    records: bytes,
    magic: int,
    next_offset: int,
    *,
    log_append_time: int | None,
    max_message_bytes: int,
    entries: list[EntryInfo] | None = None,
    partition_leader_epoch: int | None = None,
) -> Prepared:
    """Assign offsets from ``next_offset`` (and LogAppendTime) to a records buffer of ``magic``.

    ``entries``: what ``validate_records(records)`` returned, if the caller already ran it
    (the buffer is then not validated again); None validates here. ``partition_leader_epoch``
    is stamped into v2 batches, as Kafka's leader does.
    """
    assigned = assign_offsets(
        records,
        next_offset,
        log_append_time=log_append_time if magic > 0 else None,
        partition_leader_epoch=partition_leader_epoch,
        entries=entries,
    )
    if not assigned.entries:
        raise CorruptRecordError("empty records buffer")
    index_entries = []
    max_ts = NO_TIMESTAMP
    for info in assigned.entries:
        if info.magic != magic:
            raise ValueError(
                f"entry at position {info.position} has magic {info.magic}, "
                f"but this log stores format {magic}"
            )
        if info.size > max_message_bytes:
            raise MessageSizeTooLargeError(
                f"entry of {info.size} bytes exceeds max.message.bytes={max_message_bytes}"
            )
        index_entries.append((info.position, info.size, info.last_offset, info.max_timestamp))
        max_ts = max(max_ts, info.max_timestamp)
    last = assigned.next_offset - 1
    return Prepared(assigned.data, next_offset, last, max_ts, last - next_offset + 1, index_entries)


__all__ = ["Prepared", "prepare"]
