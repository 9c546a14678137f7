"""Message format v2, encoding: record batches built from columns of values, keys, timestamps
and headers (see :mod:`kclient.protocol.records.v2` for the layout).

Written for speed: varints come from a precomputed table (offset deltas 0..n-1 as one slice of
it), each record adds a tuple of ready-made parts to one list that is joined once, and a column
given as ``None`` costs nothing per record.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, cast

from crc32c import crc32c

from kclient.protocol import compression
from kclient.protocol.records.common import (
    BATCH_HEADER_SIZE,
    CONTROL_MASK,
    CREATE_TIME,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kclient.protocol.varint import TABLE_SIZE, UVARINT_TABLE, encode_varint

PREFIX = struct.Struct(">qiibI")  # baseOffset .. crc (not covered by the CRC)
TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordsCount (start of the CRC'd part)

_UV = UVARINT_TABLE
_HALF = TABLE_SIZE >> 1


#: One record's headers as callers give them: (key, value) pairs, the value may be null.
RecordHeaders = Sequence[tuple[str | bytes, bytes | None]]


def _varint(n: int) -> bytes:
    """Signed varint from the table when small (the inlined fast path of the loops)."""
    return _UV[n << 1] if 0 <= n < _HALF else encode_varint(n)


def encode_headers(headers: RecordHeaders | Mapping[str, Any] | None) -> bytes:
    """Encode a record's headers: count, then (utf-8 key, nullable value) pairs.  Headers may
    be a list of pairs or a mapping; str values are encoded as UTF-8."""
    if not headers:
        return b"\x00"
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    parts = [_varint(len(headers))]
    for key, value in pairs:
        kb = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        parts.append(_varint(len(kb)))
        parts.append(kb)
        if value is None:
            parts.append(b"\x01")
        else:
            if type(value) is not bytes:
                value = _header_value(key, value)
            parts.append(_varint(len(value)))
            parts.append(value)
    return b"".join(parts)


def _header_value(key: Any, value: Any) -> bytes:
    """A header value as bytes: str as UTF-8, bytes-like copied; anything else a TypeError."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(
        f"header {key!r} has a {type(value).__name__} value; header values are "
        "bytes, str (sent as UTF-8) or None"
    )


def _encode_values_only(values: Iterable[bytes | None], head: bytes) -> list[bytes]:
    """Fast path: null keys, one timestamp, no headers, offset deltas 0..n-1."""
    uv, half = _UV, _HALF
    parts: list[bytes] = []
    i = 0
    for v in values:
        if v is None:
            vh, vl, v = b"\x01", 0, b""
        else:
            vl = len(v)
            vh = uv[vl << 1] if vl < half else encode_varint(vl)
        od = uv[i << 1] if i < half else encode_varint(i)
        n = 4 + len(od) + len(vh) + vl  # attributes, ts delta 0, key length -1, header count 0
        parts += (uv[n << 1] if n < half else encode_varint(n), head, od, b"\x01", vh, v, b"\x00")
        i += 1
    return parts


def _sequential_deltas(n: int) -> list[bytes]:
    """Encoded offset deltas 0..n-1 (table slices)."""
    if n <= _HALF:
        return _UV[0 : 2 * n : 2]
    return _UV[0::2] + [encode_varint(i) for i in range(_HALF, n)]


def _encode_fields(
    values: Iterable[bytes | None],
    keys: Iterable[bytes | None],
    deltas: Iterable[int],
    offset_deltas: Iterable[bytes],
    headers: Iterable[bytes],
) -> list[bytes]:
    """Any mix of keys, timestamp deltas, offset deltas and headers: one record per value.

    ``offset_deltas`` and ``headers`` come encoded (an iterable of bytes each); the loop only
    encodes the key and value lengths and the timestamp delta, from the table when small.
    """
    uv, half = _UV, _HALF
    parts: list[bytes] = []
    for v, k, td, odb, hb in zip(values, keys, deltas, offset_deltas, headers):
        if v is None:
            vh, vl, v = b"\x01", 0, b""
        else:
            vl = len(v)
            vh = uv[vl << 1] if vl < half else encode_varint(vl)
        if k is None:
            kh, kl, k = b"\x01", 0, b""
        else:
            kl = len(k)
            kh = uv[kl << 1] if kl < half else encode_varint(kl)
        tdb = uv[td << 1] if 0 <= td < half else encode_varint(td)
        n = 1 + len(tdb) + len(odb) + len(kh) + kl + len(vh) + vl + len(hb)
        parts += (uv[n << 1] if n < half else encode_varint(n), b"\x00", tdb, odb, kh, k, vh, v, hb)
    return parts


def encode_records(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None = None,
    timestamp_deltas: Sequence[int] | None = None,
    offset_deltas: Sequence[int] | None = None,
    headers: Sequence[RecordHeaders | None] | None = None,
) -> bytes:
    """Encode the records section of a batch (uncompressed) from parallel columns."""
    if offset_deltas is None and headers is None and keys is None and timestamp_deltas is None:
        return b"".join(_encode_values_only(values, b"\x00\x00"))
    parts = _encode_fields(
        values,
        repeat(None) if keys is None else keys,
        repeat(0) if timestamp_deltas is None else timestamp_deltas,
        _sequential_deltas(len(values))
        if offset_deltas is None
        else [_varint(od) for od in offset_deltas],
        repeat(b"\x00") if headers is None else map(encode_headers, headers),
    )
    return b"".join(parts)


def _check_columns(n: int, **columns: Sequence[Any] | None) -> None:
    for name, col in columns.items():
        if col is not None and len(col) != n:
            raise ValueError(f"{name} has {len(col)} entries for {n} values")


def build_batch(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None = None,
    timestamps: Sequence[int | None] | None = None,
    headers: Sequence[RecordHeaders | None] | None = None,
    *,
    base_offset: int = 0,
    codec: int = compression.NONE,
    timestamp: int | None = None,
    offset_deltas: Sequence[int] | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    timestamp_type: int = CREATE_TIME,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression_level: int | None = None,
) -> bytes:
    """Encode one v2 record batch from parallel columns (values, keys, timestamps, headers).

    ``timestamps`` defaults to ``timestamp`` (or now, in ms) for every record; ``offset_deltas``
    defaults to ``0..n-1``.  Columns given as ``None`` cost nothing per record.
    """
    n = len(values)
    if n == 0:
        raise ValueError("a record batch needs at least one record")
    codec = compression.codec_id(codec)
    _check_columns(
        n, keys=keys, timestamps=timestamps, headers=headers, offset_deltas=offset_deltas
    )
    if timestamp is None:
        timestamp = int(time.time() * 1000)
    deltas = None
    if timestamps is None:
        base_ts = max_ts = timestamp
    else:
        known: Sequence[int] = (
            [timestamp if t is None else t for t in timestamps]
            if None in timestamps
            else cast("Sequence[int]", timestamps)
        )
        base_ts, max_ts = known[0], max(known)
        if base_ts != max_ts or min(known) != base_ts:
            deltas = [t - base_ts for t in known]
    if keys is not None and not any(k is not None for k in keys):
        keys = None
    if headers is not None and not any(headers):
        headers = None
    body = encode_records(values, keys, deltas, offset_deltas, headers)
    last_delta = n - 1 if offset_deltas is None else offset_deltas[-1]
    attributes = (
        codec
        | (TIMESTAMP_TYPE_MASK if timestamp_type == LOG_APPEND_TIME else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
    )
    if codec:
        body = compression.compress(codec, body, 2, compression_level)
    tail = TAIL.pack(
        attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch, base_sequence, n
    )
    crc = crc32c(body, crc32c(tail))
    prefix = PREFIX.pack(
        base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body), partition_leader_epoch, 2, crc
    )
    return b"".join((prefix, tail, body))


class RecordBatchBuilder:
    """Accumulate records with ``append`` and encode them as one v2 batch with ``build``."""

    def __init__(self, codec: int = compression.NONE, **batch_fields: Any) -> None:
        """``batch_fields`` are :func:`build_batch` keywords (producer id, base offset, ...)."""
        self.codec = codec
        self.batch_fields = batch_fields
        self.values: list[bytes | None] = []
        self.keys: list[bytes | None] = []
        self.timestamps: list[int | None] = []
        self.headers: list[RecordHeaders | None] = []

    def append(
        self,
        value: bytes | None,
        key: bytes | None = None,
        timestamp: int | None = None,
        headers: RecordHeaders | None = None,
    ) -> int:
        """Add one record; return its offset delta within the batch."""
        self.values.append(value)
        self.keys.append(key)
        self.timestamps.append(timestamp)
        self.headers.append(headers)
        return len(self.values) - 1

    def __len__(self) -> int:
        return len(self.values)

    def build(self) -> bytes:
        """Encode everything appended so far as one batch."""
        ts = self.timestamps if any(t is not None for t in self.timestamps) else None
        return build_batch(
            self.values, self.keys, ts, self.headers, codec=self.codec, **self.batch_fields
        )


__all__ = [
    "PREFIX",
    "TAIL",
    "encode_headers",
    "encode_records",
    "build_batch",
    "RecordBatchBuilder",
]
