"""Transaction markers: the control batches a transaction coordinator writes to end a
transaction on a partition (Kafka's EndTransactionMarker).

A marker is a v2 batch with the transactional and control attributes, the producer's id and
epoch, base sequence -1 and one record: key ``version int16 (0), type int16`` (abort 0,
commit 1), value ``version int16 (0), coordinatorEpoch int32``.
"""
from __future__ import annotations

import struct

from kclient.protocol.records import build_batch

__all__ = ["marker_batch"]

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def marker_batch(producer_id: int, epoch: int, commit: bool, coordinator_epoch: int = 0,
                 timestamp: int | None = None) -> bytes:
    """The control batch ending ``producer_id``'s transaction (commit or abort)."""
    return build_batch([_VALUE.pack(0, coordinator_epoch)], [_KEY.pack(0, int(commit))],
                       timestamp=timestamp, producer_id=producer_id, producer_epoch=epoch,
                       base_sequence=-1, is_transactional=True, is_control=True)
