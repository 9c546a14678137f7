"""Protocol-buffers style varints as used by Kafka record batches (message format v2).

``uvarint`` is the plain unsigned base-128 encoding; ``varint`` is the signed zig-zag
variant (``0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3 ...``).  Encoders return ``bytes``; decoders take
``(buf, pos)`` and return ``(value, new_pos)`` and raise
:class:`~kclient.protocol.errors.ProtocolDecodeError` on truncated or over-long input.

Small values come from precomputed tables so the record codecs stay fast; the tables are
exported (``UVARINT_TABLE``, ``ZIGZAG_DECODE``) for the hot loops in ``kclient.protocol.records``.
"""

from __future__ import annotations

from kclient.protocol.errors import ProtocolDecodeError

#: Anything the decoders read from: one definition for the whole protocol package.
Buffer = bytes | bytearray | memoryview

#: Number of entries in the encode table: every unsigned value that fits in 1, 2 or 3 bytes
#: below this bound is precomputed (zig-zag values up to 2**15, i.e. offsets deltas < 16384).
TABLE_SIZE = 1 << 15
#: Number of entries in the zig-zag decode table (every 1- and 2-byte varint).
DECODE_TABLE_SIZE = 1 << 14

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_LIMIT = 1 << 64
_UINT32_LIMIT = 1 << 32


def _build_encode_table(size: int) -> list[bytes]:
    """Encoded unsigned varints for ``0 <= n < size`` (size <= 2**21)."""
    one = [bytes((n,)) for n in range(min(size, 128))]
    two = [bytes(((n & 0x7F) | 0x80, n >> 7)) for n in range(128, min(size, 1 << 14))]
    three = [
        bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14)) for n in range(1 << 14, size)
    ]
    return one + two + three


#: ``UVARINT_TABLE[n]`` is the encoding of unsigned ``n`` for ``n < TABLE_SIZE``; index it with
#: a zig-zag value to get a signed varint.
UVARINT_TABLE: list[bytes] = _build_encode_table(TABLE_SIZE)
#: ``ZIGZAG_DECODE[u]`` is the signed value of zig-zag ``u`` for ``u < DECODE_TABLE_SIZE``.
ZIGZAG_DECODE: list[int] = [(u >> 1) ^ -(u & 1) for u in range(DECODE_TABLE_SIZE)]


def zigzag(n: int) -> int:
    """Map a signed int64 to its unsigned zig-zag form (``-1 -> 1``, ``1 -> 2``)."""
    return (n << 1) if n >= 0 else ((-n) << 1) - 1


def unzigzag(u: int) -> int:
    """Inverse of :func:`zigzag`."""
    return (u >> 1) ^ -(u & 1)


def encode_uvarint(n: int) -> bytes:
    """Encode a non-negative int (< 2**64) as an unsigned base-128 varint."""
    if 0 <= n < TABLE_SIZE:
        return UVARINT_TABLE[n]
    if n < 0 or n >= _UINT64_LIMIT:
        raise ValueError(f"uvarint out of range: {n}")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_varint(n: int) -> bytes:
    """Encode a signed int64 as a zig-zag varint (Kafka ``varint``/``varlong``)."""
    if n >= 0:
        if n < (TABLE_SIZE >> 1):
            return UVARINT_TABLE[n << 1]
    elif n >= -(TABLE_SIZE >> 1):
        return UVARINT_TABLE[((-n) << 1) - 1]
    if n < _INT64_MIN or n > _INT64_MAX:
        raise ValueError(f"varint out of int64 range: {n}")
    return encode_uvarint(zigzag(n))


def uvarint_size(n: int) -> int:
    """Number of bytes :func:`encode_uvarint` produces for ``n``."""
    if n < 0:
        raise ValueError(f"uvarint out of range: {n}")
    size = 1
    while n > 0x7F:
        n >>= 7
        size += 1
    return size


def varint_size(n: int) -> int:
    """Number of bytes :func:`encode_varint` produces for ``n``."""
    return uvarint_size(zigzag(n))


def _decode_raw(buf: Buffer, pos: int, max_bytes: int, limit: int, what: str) -> tuple[int, int]:
    """Shared loop: read an unsigned base-128 number of at most ``max_bytes`` bytes."""
    if pos < 0:
        raise ProtocolDecodeError(f"negative position {pos}")
    end = len(buf)
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise ProtocolDecodeError(f"truncated {what} at position {start}")
        if pos - start >= max_bytes:
            raise ProtocolDecodeError(f"{what} longer than {max_bytes} bytes at position {start}")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if value >= limit:
        raise ProtocolDecodeError(f"{what} overflows at position {start}")
    return value, pos


def decode_uvarint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Decode an unsigned varint (at most 10 bytes, < 2**64); return ``(value, new_pos)``."""
    if 0 <= pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    return _decode_raw(buf, pos, 10, _UINT64_LIMIT, "uvarint")


def decode_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Decode a zig-zag varlong (at most 10 bytes); return ``(value, new_pos)``."""
    if 0 <= pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return ZIGZAG_DECODE[b], pos + 1
    u, pos = _decode_raw(buf, pos, 10, _UINT64_LIMIT, "varint")
    return (u >> 1) ^ -(u & 1), pos


def decode_uvarint32(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Decode an unsigned varint that must fit in 32 bits (at most 5 bytes)."""
    return _decode_raw(buf, pos, 5, _UINT32_LIMIT, "uvarint32")


def decode_varint32(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Decode a zig-zag varint that must fit in int32 (at most 5 bytes)."""
    u, pos = _decode_raw(buf, pos, 5, _UINT32_LIMIT, "varint32")
    return (u >> 1) ^ -(u & 1), pos


__all__ = [
    "Buffer",
    "TABLE_SIZE",
    "DECODE_TABLE_SIZE",
    "UVARINT_TABLE",
    "ZIGZAG_DECODE",
    "zigzag",
    "unzigzag",
    "encode_uvarint",
    "encode_varint",
    "uvarint_size",
    "varint_size",
    "decode_uvarint",
    "decode_varint",
    "decode_uvarint32",
    "decode_varint32",
]
