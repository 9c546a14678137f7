"""Kafka's ``__transaction_state`` record schemas (TransactionLogKey v0, TransactionLogValue v0).

Key: ``version int16 (0), transactional_id string``.  Value: ``version int16 (0),
producer_id int64, producer_epoch int16, transaction_timeout_ms int32, transaction_status int8,
transaction_partitions nullable [topic string, partition_ids [int32]],
transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64``.  Status
numbers are Kafka's TransactionState ids.  A null value is a tombstone.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum

__all__ = ["TxnState", "TxnMetadata", "encode_key", "decode_key", "encode_value",
           "decode_value"]

_I8, _I16, _I32, _I64 = (struct.Struct(f">{c}") for c in "bhiq")
_VALUE_HEAD = struct.Struct(">hqhib")
_TIMES = struct.Struct(">qq")

TopicPartition = tuple[str, int]


class TxnState(IntEnum):
    """Kafka's transaction states, with their ids in the log."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7


@dataclass
class TxnMetadata:
    """What the coordinator knows of one transactional id."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    last_update_ms: int = -1
    start_ms: int = -1
    #: the epoch before the last bump (an InitProducerId retry gets the same answer)
    last_epoch: int = -1


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def _read_string(buf: bytes, pos: int) -> tuple[str, int]:
    size = _I16.unpack_from(buf, pos)[0]
    pos += 2
    return buf[pos:pos + max(size, 0)].decode("utf-8"), pos + max(size, 0)


def encode_key(transactional_id: str) -> bytes:
    """The record key of a transactional id."""
    return _I16.pack(0) + _string(transactional_id)


def decode_key(key: bytes) -> str | None:
    """The transactional id of a key (None: another key version)."""
    if len(key) < 4 or _I16.unpack_from(key, 0)[0] != 0:
        return None
    return _read_string(key, 2)[0]


def encode_value(m: TxnMetadata) -> bytes:
    """The record value of a transaction's state."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(m.partitions):
        by_topic.setdefault(topic, []).append(partition)
    parts = [_I32.pack(len(by_topic))]
    for topic, ids in by_topic.items():
        parts += [_string(topic), _I32.pack(len(ids)), *(_I32.pack(i) for i in ids)]
    return (_VALUE_HEAD.pack(0, m.producer_id, m.producer_epoch, m.timeout_ms, int(m.state))
            + b"".join(parts) + _TIMES.pack(m.last_update_ms, m.start_ms))


def decode_value(transactional_id: str, value: bytes) -> TxnMetadata:
    """Parse a value (version 0, or the v1 fields it shares) back into metadata."""
    _, pid, epoch, timeout, status = _VALUE_HEAD.unpack_from(value, 0)
    pos = _VALUE_HEAD.size
    count = _I32.unpack_from(value, pos)[0]
    pos += 4
    partitions: set[TopicPartition] = set()
    for _ in range(max(count, 0)):
        topic, pos = _read_string(value, pos)
        n = _I32.unpack_from(value, pos)[0]
        pos += 4
        for _ in range(n):
            partitions.add((topic, _I32.unpack_from(value, pos)[0]))
            pos += 4
    last_update, start = _TIMES.unpack_from(value, pos)
    return TxnMetadata(transactional_id, pid, epoch, timeout, TxnState(status), partitions,
                       last_update, start)
