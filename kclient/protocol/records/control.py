"""Transaction markers: the control batches that end a transaction in each of its partitions.

A marker is a v2 batch with the control and transactional bits set holding one record whose key
is ``version int16, type int16`` (0 = abort, 1 = commit) and whose value is the
EndTransactionMarker ``version int16, coordinator_epoch int32``.  Pure functions: the broker
builds markers with them, consumers read them.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

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


def build_marker_batch(producer_id: int, producer_epoch: int, committed: bool,
                       coordinator_epoch: int, *, base_offset: int = 0,
                       timestamp: int | None = None,
                       partition_leader_epoch: int = -1) -> bytes:
    """One control batch ending ``producer_id``'s transaction in a partition (commit or abort)."""
    return build_batch([encode_end_txn_marker(coordinator_epoch)],
                       [encode_control_key(COMMIT if committed else ABORT)],
                       base_offset=base_offset, timestamp=timestamp, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=-1, is_transactional=True,
                       is_control=True, partition_leader_epoch=partition_leader_epoch)


__all__ = ["ABORT", "COMMIT", "ControlKey", "EndTxnMarker", "build_marker_batch",
           "encode_control_key", "encode_end_txn_marker", "parse_control_key",
           "parse_end_txn_marker"]
