"""Kafka's ``__consumer_offsets`` record schemas for offset commits (key v1, value v1 / v3).

Key: ``version int16 (1), group string, topic string, partition int32``.  Value v3:
``version int16, offset int64, leader_epoch int32, metadata string, commit_timestamp int64``;
v1 (used, as by Kafka, when the commit carries an explicit expiry): ``version, offset,
metadata, commit_timestamp, expire_timestamp``.  A null value is a tombstone.  Metadata is
written as a nullable string (length -1 for None) so a null commit metadata reads back as null.
"""

from __future__ import annotations

import struct

KEY_VERSION = 1
_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")

TopicPartition = tuple[str, int]


def _string(text: str | None) -> bytes:
    """int16 length (-1: null) and UTF-8 bytes."""
    if text is None:
        return _I16.pack(-1)
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def _read_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    """A string written by :func:`_string`, and the position after it."""
    size = _I16.unpack_from(buf, pos)[0]
    pos += 2
    if size < 0:
        return None, pos
    return buf[pos : pos + size].decode("utf-8"), pos + size


def encode_key(group: str, tp: TopicPartition) -> bytes:
    """The record key of one group's commit for one partition."""
    return _I16.pack(KEY_VERSION) + _string(group) + _string(tp[0]) + _I32.pack(tp[1])


def decode_key(key: bytes) -> tuple[str, TopicPartition] | None:
    """(group, (topic, partition)) of an offset-commit key; None for other key types."""
    if _I16.unpack_from(key, 0)[0] not in (0, 1):
        return None
    group, pos = _read_string(key, 2)
    topic, pos = _read_string(key, pos)
    return group or "", (topic or "", _I32.unpack_from(key, pos)[0])


def encode_value(
    offset: int, metadata: str | None, leader_epoch: int, commit_ms: int, expire_ms: int
) -> bytes:
    """The record value of a commit: v1 with an explicit expiry, else v3."""
    if expire_ms >= 0:
        return (
            _I16.pack(1)
            + _I64.pack(offset)
            + _string(metadata)
            + _I64.pack(commit_ms)
            + _I64.pack(expire_ms)
        )
    return (
        _I16.pack(3)
        + _I64.pack(offset)
        + _I32.pack(leader_epoch)
        + _string(metadata)
        + _I64.pack(commit_ms)
    )


def decode_value(value: bytes) -> tuple[int, str | None, int, int, int]:
    """(offset, metadata, leader epoch, commit ms, expire ms) of any value version 0-3."""
    version = _I16.unpack_from(value, 0)[0]
    offset = _I64.unpack_from(value, 2)[0]
    epoch, pos = -1, 10
    if version >= 3:
        epoch, pos = _I32.unpack_from(value, 10)[0], 14
    metadata, pos = _read_string(value, pos)
    commit_ms = _I64.unpack_from(value, pos)[0]
    expire_ms = _I64.unpack_from(value, pos + 8)[0] if version == 1 else -1
    return offset, metadata, epoch, commit_ms, expire_ms


__all__ = ["KEY_VERSION", "decode_key", "decode_value", "encode_key", "encode_value"]
