"""Partition batches: the messages bound for one topic partition and their encoded records.

A :class:`PartitionBatch` keeps the serialized columns (values, keys, timestamps, headers) so it
can be encoded in whichever message format the leader's broker negotiates (v2 record batches for
Produce v3+, message sets magic 1 for Produce v2, magic 0 for v0/v1), and encoded again if a
retry goes to a broker of another version.

:func:`encode_v2_uniform` is the producer's fast path for the common case of values of one length
without keys, headers or per-message timestamps: every record then differs only in its offset
delta, so the bytes between two values are precomputed once per value length and the records
section is one ``b"".join`` of alternating separators and values (no per-record Python code).
"""
from __future__ import annotations

import struct
import time
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import add

from crc32c import crc32c

from kclient.protocol import compression
from kclient.protocol.records import build_batch, build_message_set
from kclient.protocol.varint import encode_varint

__all__ = ["PartitionBatch", "encode_records", "encode_v2_uniform", "MAX_BATCH_BYTES",
           "split_by_size"]

#: Largest encoded size we aim for in one partition batch: below the 1 MiB default of
#: ``message.max.bytes`` on modern brokers and the 0.8 broker's 1000012.
MAX_BATCH_BYTES = 1_000_000
#: Estimated bytes a record adds besides its key and value (varints, attributes, headers count).
RECORD_OVERHEAD = 12

_PREFIX = struct.Struct(">qiibI")        # baseOffset, batchLength, leaderEpoch, magic, crc
_TAIL = struct.Struct(">hiqqqhii")       # attributes .. recordsCount (CRC-32C'd)
_BATCH_LENGTH_BASE = 49                  # 61-byte header minus offset and length fields
_HEADER_PLACEHOLDER = bytes(_PREFIX.size + _TAIL.size)
_SEP_CACHE: dict = {}                    # value length -> separators for offset deltas 0..n-1
_SEP_CACHE_LENGTHS = 8
_SEP_CACHE_MAX_N = 1 << 16


def _separators(length: int, n: int) -> list:
    """The bytes before each value of a uniform batch: record i's header (and record i-1's end)."""
    seps = _SEP_CACHE.get(length)
    if seps is not None and len(seps) >= n:
        return seps
    if len(_SEP_CACHE) >= _SEP_CACHE_LENGTHS and length not in _SEP_CACHE:
        _SEP_CACHE.clear()
    vh = encode_varint(length)
    count = max(n, 1024, len(seps) if seps else 0)
    out = []
    for i in range(count):
        od = encode_varint(i)
        body = b"\x00\x00" + od + b"\x01" + vh        # attributes, ts delta, offset delta, key
        size = len(body) + length + 1                 # ... value, header count
        head = encode_varint(size) + body
        out.append(head if i == 0 else b"\x00" + head)  # the previous record's header count
    _SEP_CACHE[length] = out
    return out


def encode_v2_uniform(values: list, length: int, codec: int, timestamp: int):
    """A v2 batch of values that all have ``length`` bytes; no keys, headers or own timestamps.

    Uncompressed, the whole batch is one ``bytearray().join`` (header placeholder, separators,
    values) with the header packed in place afterwards: the 1 MB of records is copied once.
    """
    n = len(values)
    seps = _separators(length, n)
    parts: list = [None] * (2 * n + 2)
    parts[1:-1:2] = seps[:n] if len(seps) != n else seps
    parts[2:-1:2] = values
    parts[-1] = b"\x00"
    if codec:
        parts[0] = b""
        body = compression.compress(codec, b"".join(parts), 2)
        tail = _TAIL.pack(codec, n - 1, timestamp, timestamp, -1, -1, -1, n)
        crc = crc32c(body, crc32c(tail))
        return b"".join((_PREFIX.pack(0, _BATCH_LENGTH_BASE + len(body), -1, 2, crc), tail,
                         body))
    parts[0] = _HEADER_PLACEHOLDER
    buf = bytearray().join(parts)
    _TAIL.pack_into(buf, _PREFIX.size, codec, n - 1, timestamp, timestamp, -1, -1, -1, n)
    crc = crc32c(memoryview(buf)[_PREFIX.size:])
    _PREFIX.pack_into(buf, 0, 0, len(buf) - 12, -1, 2, crc)
    return buf


def encode_records(values: list, keys: list | None, timestamps: list | None,
                   headers: list | None, magic: int, codec: int,
                   timestamp: int | None = None, lengths: list | None = None) -> bytes:
    """Encode one partition's messages in message format ``magic`` with ``codec``."""
    if timestamp is None:
        timestamp = int(time.time() * 1000)
    if magic == 2:
        if keys is None and timestamps is None and headers is None and n_uniform(values, lengths):
            return encode_v2_uniform(values, len(values[0]), codec, timestamp)
        return build_batch(values, keys, timestamps, headers, codec=codec, timestamp=timestamp)
    if headers is not None:
        from kclient.errors import UnsupportedVersionError
        raise UnsupportedVersionError(
            f"record headers need message format v2 (Produce v3+, Kafka 0.11+); this broker "
            f"takes magic {magic}")
    return build_message_set(values, keys, timestamps, magic=magic, codec=codec,
                             timestamp=timestamp)


def n_uniform(values: list, lengths: list | None = None) -> bool:
    """True when every value is bytes of one length.

    ``lengths`` (precomputed ``len`` of each value) must only be given when no value is None.
    """
    if not values:
        return False
    first = values[0]
    if type(first) is not bytes:
        return False
    if lengths is None:
        try:
            lengths = list(map(len, values))
        except TypeError:  # a None value
            return False
    return lengths.count(lengths[0]) == len(lengths)


def split_by_size(lengths: Sequence[int], limit: int) -> list[int]:
    """Cut points so that each slice's summed lengths (+ overhead) stay under ``limit``."""
    n = len(lengths)
    if not n:
        return []
    first = lengths[0]
    if isinstance(lengths, list) and lengths.count(first) == n:
        step = max(1, limit // (first + RECORD_OVERHEAD))
        return list(range(step, n, step))
    cum = list(accumulate(map(add, lengths, repeat(RECORD_OVERHEAD))))
    cuts: list[int] = []
    i, base = 0, 0
    while True:
        j = bisect_right(cum, base + limit, i)
        if j >= n:
            return cuts
        if j == i:  # one record above the limit goes alone
            j = i + 1
            if j >= n:
                return cuts
        cuts.append(j)
        base = cum[j - 1]
        i = j


class PartitionBatch:
    """Messages for one topic partition, serialized, with their send history.

    ``entries`` are the messages as queued (tuples, see :mod:`kclient.producer.data`), for the
    delivery report; ``None`` when they were plain values of ``topic`` (then ``values`` are
    both what is sent and what is reported).
    """

    __slots__ = ("topic", "partition", "entries", "values", "keys", "timestamps", "headers",
                 "codec", "attempts", "error", "due", "lengths", "_encoded", "created")

    def __init__(self, topic: str, partition: int, entries: list | None, values: list,
                 keys: list | None = None, timestamps: list | None = None,
                 headers: list | None = None, codec: int = compression.NONE,
                 lengths: list | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.entries = entries
        self.values = values
        self.keys = keys
        self.timestamps = timestamps
        self.headers = headers
        self.codec = codec
        self.lengths = lengths
        self.attempts = 0
        self.error: BaseException | None = None
        self.due = 0.0
        self.created = int(time.time() * 1000)
        self._encoded: tuple | None = None

    def __len__(self) -> int:
        return len(self.values)

    def encode(self, magic: int):
        """The records in format ``magic`` (cached, so a retry to the same format is free)."""
        enc = self._encoded
        if enc is not None and enc[0] == magic:
            return enc[1]
        data = encode_records(self.values, self.keys, self.timestamps, self.headers, magic,
                              self.codec, self.created, self.lengths)
        self._encoded = (magic, data)
        return data

    def release(self) -> None:
        """Drop the encoded bytes once acknowledged (they can be large)."""
        self._encoded = None

    def report(self, base_offset: int = -1, error: BaseException | None = None,
               timestamp: int = -1):
        """The DeliveryReport of this batch."""
        from .data import DeliveryReport
        self._encoded = None
        if self.entries is not None:
            return DeliveryReport(self.topic, self.partition, None, base_offset, error,
                                  timestamp, self.attempts, entries=self.entries)
        return DeliveryReport(self.topic, self.partition, None, base_offset, error, timestamp,
                              self.attempts, values=self.values)

    def __repr__(self) -> str:
        return (f"PartitionBatch({self.topic!r}, {self.partition}, {len(self.values)} messages, "
                f"attempts={self.attempts})")
