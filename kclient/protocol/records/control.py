"""Transaction markers: the control batches that end a transaction in each of its partitions.

A marker is a v2 batch with the control and transactional bits set holding one record whose key
is ``version int16, type int16`` (0 = abort, 1 = commit) and whose value is the
EndTransactionMarker ``version int16, coordinator_epoch int32``.  Pure functions: the broker
builds markers with them, consumers read them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ..varint import Buffer
from .common import CONTROL_MASK, TRANSACTIONAL_MASK, make_records
from .reader import EntrySpan, decode_entries, entry_next_offset
from .v2_build import build_batch

ABORT = 0
COMMIT = 1
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlKey(NamedTuple):
    """A control record's key: its schema version and type (ABORT, COMMIT, or another kind)."""

    version: int
    type: int


class EndTxnMarker(NamedTuple):
    """A transaction marker read back: commit or abort, and the coordinator epoch that wrote it."""

    committed: bool
    coordinator_epoch: int


def encode_control_key(control_type: int) -> bytes:
    """The key of a control record of ``control_type`` (ABORT or COMMIT for markers)."""
    return _KEY.pack(CONTROL_KEY_VERSION, control_type)


def parse_control_key(key: bytes | None) -> ControlKey:
    """Decode a control record's key; ValueError when it is shorter than 4 bytes."""
    if key is None or len(key) < _KEY.size:
        raise ValueError(f"control record key too short: {key!r}")
    return ControlKey(*_KEY.unpack_from(key))


def encode_end_txn_marker(coordinator_epoch: int) -> bytes:
    """The value of a commit or abort marker record."""
    return _MARKER.pack(END_TXN_MARKER_VERSION, coordinator_epoch)


def parse_end_txn_marker(key: bytes | None, value: bytes | None) -> EndTxnMarker:
    """Decode a marker record (key and value); ValueError if it is not a commit or abort marker."""
    kind = parse_control_key(key).type
    if kind not in (ABORT, COMMIT):
        raise ValueError(f"control record type {kind} is not a transaction marker")
    if value is None or len(value) < _MARKER.size:
        raise ValueError(f"transaction marker value too short: {value!r}")
    _version, epoch = _MARKER.unpack_from(value)
    return EndTxnMarker(kind == COMMIT, epoch)


def build_marker_batch(
    producer_id: int,
    producer_epoch: int,
    committed: bool,
    coordinator_epoch: int,
    *,
    base_offset: int = 0,
    timestamp: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """One control batch ending ``producer_id``'s transaction in a partition (commit or abort)."""
    return build_batch(
        [encode_end_txn_marker(coordinator_epoch)],
        [encode_control_key(COMMIT if committed else ABORT)],
        base_offset=base_offset,
        timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


_ATTRIBUTES = struct.Struct(">h")  # at batch position 21
_PRODUCER_ID = struct.Struct(">q")  # at batch position 43


def _is_abort_marker(buf: Buffer, span: EntrySpan) -> bool:
    """Whether a control batch is an ABORT marker (its first record's key type is 0)."""
    try:
        for rec in decode_entries(
            buf, [span], make_records, skip_control=False, validate_crc=False
        ):
            return parse_control_key(rec.key).type == ABORT
    except ValueError:
        return False
    return False


def committed_entries(
    buf: Buffer, spans: Sequence[EntrySpan], aborted: Iterable[tuple[int, int]]
) -> list[EntrySpan]:
    """The entries a read_committed consumer decodes: those of ``spans`` that are not data of
    an aborted transaction.

    ``aborted`` is a fetch response's aborted-transactions list, ``(producer_id, first_offset)``
    pairs.  As Java's consumer does: a producer's transactional batches are aborted from its
    listed first offset up to its next ABORT marker.  Control batches stay in the result
    (decoding skips them; they still move the next fetch offset).
    """
    pending = sorted(((off, pid) for pid, off in aborted), reverse=True)
    open_aborts: set[int] = set()
    out = []
    for span in spans:
        if span.magic != 2:
            out.append(span)
            continue
        last = entry_next_offset(buf, span) - 1
        while pending and pending[-1][0] <= last:
            open_aborts.add(pending.pop()[1])
        attrs = _ATTRIBUTES.unpack_from(buf, span.position + 21)[0]
        pid = _PRODUCER_ID.unpack_from(buf, span.position + 43)[0]
        if attrs & CONTROL_MASK:
            if pid in open_aborts and _is_abort_marker(buf, span):
                open_aborts.discard(pid)
            out.append(span)
        elif not (attrs & TRANSACTIONAL_MASK and pid in open_aborts):
            out.append(span)
    return out


__all__ = [
    "committed_entries",
    "ABORT",
    "COMMIT",
    "ControlKey",
    "EndTxnMarker",
    "build_marker_batch",
    "encode_control_key",
    "encode_end_txn_marker",
    "parse_control_key",
    "parse_end_txn_marker",
]
