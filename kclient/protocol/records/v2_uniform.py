"""Message format v2, the producer's fast path: a batch of values of one length, without keys,
headers or per-record timestamps.

Every record of such a batch differs only in its offset delta, so the bytes between two values
are computed once per value length (and cached) and the records section is one ``join`` of
alternating separators and values: no per-record Python code.  The output is byte-identical to
:func:`kclient.protocol.records.v2_build.build_batch` on the same values.
"""

from __future__ import annotations

from crc32c import crc32c

from kclient.protocol import compression
from kclient.protocol.records.common import BATCH_HEADER_SIZE, LOG_OVERHEAD
from kclient.protocol.records.v2_build import PREFIX, TAIL
from kclient.protocol.varint import encode_varint

__all__ = ["encode_v2_uniform"]

_BATCH_LENGTH_BASE = BATCH_HEADER_SIZE - LOG_OVERHEAD  # batchLength without the records
_HEADER_PLACEHOLDER = bytes(PREFIX.size + TAIL.size)
_SEP_CACHE: dict[int, list[bytes]] = {}  # value length -> separators for offset deltas 0..n-1
_SEP_CACHE_LENGTHS = 8


def _separators(length: int, n: int) -> list[bytes]:
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
        body = b"\x00\x00" + od + b"\x01" + vh  # attributes, ts delta, offset delta, key
        size = len(body) + length + 1  # ... value, header count
        head = encode_varint(size) + body
        out.append(head if i == 0 else b"\x00" + head)  # the previous record's header count
    _SEP_CACHE[length] = out
    return out


def encode_v2_uniform(
    values: list[bytes], length: int, codec: int, timestamp: int
) -> bytes | bytearray:
    """A v2 batch of values that all have ``length`` bytes; no keys, headers or own timestamps.

    Uncompressed, the whole batch is one ``bytearray().join`` (header placeholder, separators,
    values) with the header packed in place afterwards: the records are copied once.
    """
    n = len(values)
    seps = _separators(length, n)
    parts: list[bytes] = [b""] * (2 * n + 2)
    parts[1:-1:2] = seps[:n] if len(seps) != n else seps
    parts[2:-1:2] = values
    parts[-1] = b"\x00"
    if codec:
        body = compression.compress(codec, b"".join(parts), 2)
        tail = TAIL.pack(codec, n - 1, timestamp, timestamp, -1, -1, -1, n)
        crc = crc32c(body, crc32c(tail))
        return b"".join((PREFIX.pack(0, _BATCH_LENGTH_BASE + len(body), -1, 2, crc), tail, body))
    parts[0] = _HEADER_PLACEHOLDER
    buf = bytearray().join(parts)
    TAIL.pack_into(buf, PREFIX.size, codec, n - 1, timestamp, timestamp, -1, -1, -1, n)
    crc = crc32c(memoryview(buf)[PREFIX.size :])
    PREFIX.pack_into(buf, 0, 0, len(buf) - LOG_OVERHEAD, -1, 2, crc)
    return buf
