"""Kafka's ``__transaction_state`` record schemas (TransactionLogKey v0, TransactionLogValue v0
and v1).

Key: ``version int16 (0), transactional_id string``.  Value: ``version int16 (0),
producer_id int64, producer_epoch int16, transaction_timeout_ms int32, transaction_status int8,
transaction_partitions nullable [topic string, partition_ids [int32]],
transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64``.  Status
numbers are Kafka's TransactionState ids.  A null value is a tombstone.  Value v1 (what Kafka
writes once ``transaction.version`` is 1 or more) is flexible: compact strings and arrays, and
tagged fields PreviousProducerId (0), NextProducerId (1) and ClientTransactionVersion (2).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum

from kclient.protocol.types import read_tagged_fields, write_tagged_fields
from kclient.protocol.varint import decode_uvarint, encode_uvarint

__all__ = ["TxnState", "TxnMetadata", "encode_key", "decode_key", "encode_value", "decode_value"]

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
    #: transactions v2: the producer id before the last rotation (a retried EndTxn), the one
    #: the prepared transaction rotates to (its epoch was exhausted), the client's version
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_version: int = 0


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def _read_string(buf: bytes, pos: int) -> tuple[str, int]:
    size = _I16.unpack_from(buf, pos)[0]
    pos += 2
    return buf[pos : pos + max(size, 0)].decode("utf-8"), pos + max(size, 0)


def encode_key(transactional_id: str) -> bytes:
    """The record key of a transactional id."""
    return _I16.pack(0) + _string(transactional_id)


def decode_key(key: bytes) -> str | None:
    """The transactional id of a key (None: another key version)."""
    if len(key) < 4 or _I16.unpack_from(key, 0)[0] != 0:
        return None
    return _read_string(key, 2)[0]


def encode_value(m: TxnMetadata, version: int = 0) -> bytes:
    """The record value of a transaction's state, in value ``version`` 0 or 1."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(m.partitions):
        by_topic.setdefault(topic, []).append(partition)
    head = _VALUE_HEAD.pack(version, m.producer_id, m.producer_epoch, m.timeout_ms, int(m.state))
    times = _TIMES.pack(m.last_update_ms, m.start_ms)
    if version == 0:
        parts = [_I32.pack(len(by_topic))]
        for topic, ids in by_topic.items():
            parts += [_string(topic), _I32.pack(len(ids)), *(_I32.pack(i) for i in ids)]
        return head + b"".join(parts) + times
    parts = [encode_uvarint(len(by_topic) + 1)]
    for topic, ids in by_topic.items():
        raw = topic.encode("utf-8")
        parts += [
            encode_uvarint(len(raw) + 1),
            raw,
            encode_uvarint(len(ids) + 1),
            *(_I32.pack(i) for i in ids),
            b"\x00",
        ]
    tags = {}
    if m.previous_producer_id != -1:
        tags[0] = _I64.pack(m.previous_producer_id)
    if m.next_producer_id != -1:
        tags[1] = _I64.pack(m.next_producer_id)
    if m.client_version:
        tags[2] = _I16.pack(m.client_version)
    return head + b"".join(parts) + times + write_tagged_fields(tags)


def decode_value(transactional_id: str, value: bytes) -> TxnMetadata:
    """Parse a value (version 0 or 1) back into metadata."""
    version, pid, epoch, timeout, status = _VALUE_HEAD.unpack_from(value, 0)
    flexible = version >= 1
    pos = _VALUE_HEAD.size
    if flexible:
        count, pos = decode_uvarint(value, pos)
        count -= 1
    else:
        count = _I32.unpack_from(value, pos)[0]
        pos += 4
    partitions: set[TopicPartition] = set()
    for _ in range(max(count, 0)):
        if flexible:
            size, pos = decode_uvarint(value, pos)
            topic, pos = value[pos : pos + size - 1].decode("utf-8"), pos + size - 1
            n, pos = decode_uvarint(value, pos)
            n -= 1
        else:
            topic, pos = _read_string(value, pos)
            n = _I32.unpack_from(value, pos)[0]
            pos += 4
        for _ in range(n):
            partitions.add((topic, _I32.unpack_from(value, pos)[0]))
            pos += 4
        if flexible:
            pos = read_tagged_fields(value, pos)[1]
    last_update, start = _TIMES.unpack_from(value, pos)
    meta = TxnMetadata(
        transactional_id, pid, epoch, timeout, TxnState(status), partitions, last_update, start
    )
    if flexible:
        tags = read_tagged_fields(value, pos + _TIMES.size)[0]
        meta.previous_producer_id = _I64.unpack(tags[0])[0] if 0 in tags else -1
        meta.next_producer_id = _I64.unpack(tags[1])[0] if 1 in tags else -1
        meta.client_version = _I16.unpack(tags[2])[0] if 2 in tags else 0
    return meta
