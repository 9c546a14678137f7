"""Invalid v2 record batches whose CRC is right: what a broker's LogValidator must refuse.

Each builder starts from a valid batch, changes it, and seals it again (CRC-32C recomputed), so
only a check deeper than the header and CRC can tell it is wrong. Shared by the mini-broker's
produce-validation tests and the differential test against real Kafka.
"""

from __future__ import annotations

import random
import struct

from crc32c import crc32c

from kclient.protocol.records import build_batch
from kclient.protocol.records.v2_build import PREFIX, TAIL

__all__ = ["valid", "sealed", "BAD_BATCHES"]

_LENGTH = struct.Struct(">i")  # batchLength at byte 8
_LAST_DELTA = struct.Struct(">i")  # lastOffsetDelta at byte 23
_COUNT = struct.Struct(">i")  # recordsCount at byte 57
_ATTRS = struct.Struct(">h")  # attributes at byte 21
T0 = 1_700_000_000_000


def valid(n: int = 3, codec: int = 0) -> bytearray:
    """A valid batch of ``n`` keyed records."""
    return bytearray(
        build_batch(
            [b"value-%d" % i for i in range(n)],
            [b"key-%d" % i for i in range(n)],
            [T0 + i for i in range(n)],
            codec=codec,
        )
    )


def sealed(buf: bytearray) -> bytes:
    """``buf`` with batchLength left as set and the CRC recomputed over attributes..end."""
    crc = crc32c(bytes(buf[PREFIX.size :]))
    struct.pack_into(">I", buf, 17, crc)
    return bytes(buf)


def count_too_large() -> bytes:
    """recordsCount 5 over 3 records (lastOffsetDelta still 2)."""
    buf = valid()
    _COUNT.pack_into(buf, 57, 5)
    return sealed(buf)


def count_and_delta_too_large() -> bytes:
    """recordsCount 5 and lastOffsetDelta 4 over 3 records."""
    buf = valid()
    _COUNT.pack_into(buf, 57, 5)
    _LAST_DELTA.pack_into(buf, 23, 4)
    return sealed(buf)


def garbage_payload(codec: int) -> bytes:
    """A compressed batch (``codec`` 1-4) whose records section is 64 bytes of noise, the same
    every run, its first byte 0x20: Kafka (4.4, snappy-java) reads a snappy section without
    the framing magic as raw snappy and allocates the length its leading varint gives before
    it fails, so noise that begins with a large one takes the JVM's
    whole heap and the broker exits (the mini-broker bounds it by max_decompressed)."""
    buf = valid(codec=codec)
    body = bytes([0x20]) + random.Random(codec).randbytes(63)
    out = bytearray(buf[: PREFIX.size + TAIL.size]) + body
    _LENGTH.pack_into(out, 8, len(out) - 12)
    return sealed(out)


def short_length() -> bytes:
    """batchLength (and the bytes sent) 5 shorter than the records: the last record is cut."""
    buf = valid()[:-5]
    _LENGTH.pack_into(buf, 8, len(buf) - 12)
    return sealed(buf)


def negative_last_delta() -> bytes:
    """lastOffsetDelta -45."""
    buf = valid()
    _LAST_DELTA.pack_into(buf, 23, -45)
    return sealed(buf)


def huge_last_delta() -> bytes:
    """lastOffsetDelta 2^31-1 over 3 records."""
    buf = valid()
    _LAST_DELTA.pack_into(buf, 23, 2**31 - 1)
    return sealed(buf)


def control_batch() -> bytes:
    """The control bit set by a client (only a transaction coordinator writes those)."""
    buf = valid()
    _ATTRS.pack_into(buf, 21, 0x20)
    return sealed(buf)


def offset_deltas_out_of_order() -> bytes:
    """Three records whose offset deltas are 0, 2, 1."""
    return build_batch([b"a", b"b", b"c"], [b"k0", b"k1", b"k2"], [T0] * 3, offset_deltas=[0, 2, 1])


def trailing_garbage_in_records() -> bytes:
    """Valid records followed by 7 extra bytes inside the batch."""
    buf = valid() + b"\x00" * 7
    _LENGTH.pack_into(buf, 8, len(buf) - 12)
    return sealed(buf)


#: label -> builder; every one is refused by Kafka's LogValidator.
BAD_BATCHES = {
    "record count larger than the records": count_too_large,
    "count and lastOffsetDelta larger than the records": count_and_delta_too_large,
    "gzip garbage": lambda: garbage_payload(1),
    "snappy garbage": lambda: garbage_payload(2),
    "lz4 garbage": lambda: garbage_payload(3),
    "zstd garbage": lambda: garbage_payload(4),
    "batch length shorter than its records": short_length,
    "negative lastOffsetDelta": negative_last_delta,
    "lastOffsetDelta 2^31-1": huge_last_delta,
    "control batch from a client": control_batch,
    "offset deltas out of order": offset_deltas_out_of_order,
    "bytes left after the last record": trailing_garbage_in_records,
}
