"""A Produce request for one topic partition, and its answer, without the generic schema walk.

The sync producer sends one partition's records at a time and waits for the answer; the generic
path (:meth:`kclient.protocol.schema.Api.encode_request` and ``decode_response``) walks the
declarative schema for every request and builds a ``Struct`` per level of the answer.  Here
everything but the correlation id and the records is encoded once, and the common answer (one
topic, one partition, written: no error, record errors, error message or tagged fields) is read with one
slice comparison and one ``struct`` unpack.  Any other answer makes :meth:`OneProduce.read`
return None, and the caller decodes it the generic way: the bytes are identical to the generic
encoder's, which ``tests/protocol/test_produce_one.py`` checks version by version.
"""

from __future__ import annotations

import struct
from typing import Any

from crc32c import crc32c

from .records.v2_uniform import encode_v2_uniform
from .varint import Buffer, encode_uvarint

__all__ = ["OneProduce", "PRODUCE_KEY", "FLEXIBLE_FROM"]

#: Produce's API key, and its first flexible version (compact fields, tagged sections)
PRODUCE_KEY = 0
FLEXIBLE_FROM = 9
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
#: size prefix, api key, api version, correlation id
_HEAD = struct.Struct(">ihhi")
_U32 = struct.Struct(">I")
_TWO_TIMES = struct.Struct(">qq")
#: where in a v2 batch the CRC, the part it covers and the first / max timestamps start
_CRC_AT, _CRC_FROM, _TIMES_AT = 17, 21, 27
#: prepared one-record frames kept per encoder (value lengths)
_MAX_PREPARED = 8


def _string(s: str | None, compact: bool, nullable: bool) -> bytes:
    if s is None:
        if not nullable:
            raise ValueError("not nullable")
        return b"\x00" if compact else b"\xff\xff"
    b = s.encode("utf-8")
    if compact:
        return encode_uvarint(len(b) + 1) + b
    if len(b) > 32767:
        raise ValueError("string longer than 32767 bytes")
    return _I16.pack(len(b)) + b


class OneProduce:
    """Produce ``version`` frames for ``topic`` / ``partition`` (the rest fixed at creation);
    :meth:`frame` and :meth:`read` cost a few calls each."""

    __slots__ = (
        "version",
        "topic",
        "partition",
        "flexible",
        "_middle",
        "_tail",
        "_fixed",
        "_answer_head",
        "_answer_tail",
        "_size",
        "_prepared",
    )

    def __init__(
        self,
        version: int,
        client_id: str | None,
        transactional_id: str | None,
        acks: int,
        timeout_ms: int,
        topic: str,
        partition: int,
    ) -> None:
        if not 0 <= version <= 12:
            raise ValueError(f"Produce v{version}: OneProduce covers v0-v12")
        self.version, self.topic, self.partition = version, topic, partition
        flex = self.flexible = version >= FLEXIBLE_FROM
        count = b"\x02" if flex else _I32.pack(1)  # arrays of one element
        # request header v1 (v2 when flexible: an empty tagged section after the client id)
        middle = _string(client_id, False, True) + (b"\x00" if flex else b"")
        if version >= 3:
            middle += _string(transactional_id, flex, True)
        middle += _I16.pack(acks) + _I32.pack(timeout_ms)
        middle += count + _string(topic, flex, False) + count + _I32.pack(partition)
        self._middle = middle
        #: after the records: the partition's, the topic's and the body's empty tagged sections
        self._tail = b"\x00\x00\x00" if flex else b""
        # the answer: [responses] name [partition_responses] index error base_offset
        # (log_append_time v2+) (log_start_offset v5+) ([record_errors] error_message v8+)
        # tags (throttle_time_ms v1+) tags
        self._answer_head = count + _string(topic, flex, False) + count + _I32.pack(partition)
        self._fixed = struct.Struct(
            ">hq" + ("q" if version >= 2 else "") + ("q" if version >= 5 else "")
        )
        tail = b""
        if version >= 8:
            tail += b"\x01\x00" if flex else b"\x00\x00\x00\x00\xff\xff"
        if flex:
            tail += b"\x00\x00"  # the partition's and the topic's tagged sections
        self._answer_tail = tail
        self._size = (
            len(self._answer_head) + self._fixed.size + len(tail) + (4 if version >= 1 else 0)
        ) + (1 if flex else 0)
        self._prepared: dict[int, tuple[bytearray, memoryview, int, int, int]] = {}

    def frame(self, corr: int, records: Any) -> bytes:
        """The whole request frame, size prefix first, carrying ``records`` (bytes-like)."""
        n = len(records)
        size = encode_uvarint(n + 1) if self.flexible else _I32.pack(n)
        middle, tail = self._middle, self._tail
        total = 8 + len(middle) + len(size) + n + len(tail)
        return b"".join(
            (_HEAD.pack(total, PRODUCE_KEY, self.version, corr), middle, size, records, tail)
        )

    def stamped(self, value: bytes, timestamp: int) -> tuple[bytearray, int]:
        """The frame of one uncompressed v2 record ``value`` created at ``timestamp`` (ms),
        its correlation id left for the sender to write at bytes 8-11, and its batch's size:
        a frame prepared once per value length, the value, the timestamps and the CRC written
        into it in place (the same bytes as :meth:`frame`; the next call reuses the frame)."""
        prepared = self._prepared.get(len(value))
        if prepared is None:
            prepared = self._prepare(len(value))
        frame, view, batch_at, value_at, size = prepared
        _TWO_TIMES.pack_into(frame, batch_at + _TIMES_AT, timestamp, timestamp)
        end = value_at + len(value)
        frame[value_at:end] = value
        _U32.pack_into(frame, batch_at + _CRC_AT, crc32c(view[batch_at + _CRC_FROM : end + 1]))
        return frame, size

    def _prepare(self, length: int) -> tuple[bytearray, memoryview, int, int, int]:
        """A one-record frame for values of ``length`` bytes: (frame, a view of it, where the
        batch starts, where the value starts, the batch's size)."""
        if self.version < 3:
            raise ValueError(f"Produce v{self.version} carries message format v0/v1, not v2")
        if len(self._prepared) >= _MAX_PREPARED:
            self._prepared.clear()
        batch = encode_v2_uniform([bytes(length)], length, 0, 0)
        frame = bytearray(self.frame(0, batch))
        batch_at = len(frame) - len(self._tail) - len(batch)
        value_at = batch_at + len(batch) - 1 - length  # the header count (0) ends the batch
        prepared = (frame, memoryview(frame), batch_at, value_at, len(batch))
        self._prepared[length] = prepared
        return prepared

    def read(self, buf: Buffer, pos: int) -> tuple[int, int] | None:
        """``(base_offset, log_append_time)`` of a success in the common shape starting at
        ``pos`` (after the response header), else None (an error, record errors, tagged
        fields, another partition: decode it the generic way)."""
        head = self._answer_head
        if len(buf) - pos != self._size or buf[pos : pos + len(head)] != head:
            return None
        fixed = self._fixed
        at = pos + len(head)
        values = fixed.unpack_from(buf, at)
        if values[0]:  # an error code
            return None
        tail = self._answer_tail
        if tail:
            at += fixed.size
            if buf[at : at + len(tail)] != tail:
                return None
            if self.flexible and buf[len(buf) - 1]:  # the body's tagged section
                return None
        return values[1], values[2] if len(values) > 2 else -1
