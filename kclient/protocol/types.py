"""Primitive wire types of the Kafka protocol: fixed ints, strings, bytes, arrays, tagged fields.

Every type offers ``read(buf, pos) -> (value, pos)`` over bytes/memoryview and
``write(value, out)`` appending bytes-like parts to a list, so encoders build one
``b"".join`` at the end and a Records payload can be passed through untouched.
"""

from __future__ import annotations

import struct
from typing import Any

from .errors import ProtocolDecodeError
from .varint import Buffer, decode_uvarint, encode_uvarint

__all__ = [
    "Type",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT16",
    "FLOAT64",
    "BOOLEAN",
    "UUID",
    "STRING",
    "NULLABLE_STRING",
    "BYTES",
    "NULLABLE_BYTES",
    "RECORDS",
    "COMPACT_STRING",
    "COMPACT_NULLABLE_STRING",
    "COMPACT_BYTES",
    "COMPACT_NULLABLE_BYTES",
    "COMPACT_RECORDS",
    "ArrayOf",
    "read_tagged_fields",
    "write_tagged_fields",
    "EMPTY_TAGGED_FIELDS",
    "Parts",
]

#: What encoders append to: bytes-like parts, and Records values passed through as given (any
#: object with a length, such as a file region), joined or sent by the caller.
Parts = list[Any]


def _truncated(what: str, pos: int) -> ProtocolDecodeError:
    return ProtocolDecodeError(f"truncated {what} at byte {pos}")


class Type:
    """A wire type: how one value is read from and written to the protocol byte stream."""

    name = "type"
    default: Any = None
    nullable: bool  # declared by the types that can be null (not by fixed-size ones)

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        raise NotImplementedError

    def write(self, value: Any, out: Parts) -> None:
        raise NotImplementedError

    def compact(self) -> Type:
        """The flexible-version (compact) form of this type; fixed-size types are unchanged."""
        return self

    def __repr__(self) -> str:
        return self.name


class _Fixed(Type):
    def __init__(self, name: str, fmt: str, default: Any = 0):
        self.name = name
        #: its ``struct`` format: runs of fixed-size fields are packed together (schema.py)
        self.fixed_fmt = fmt
        self._st = struct.Struct(">" + fmt)
        self.size = self._st.size
        self.default = default
        self._unpack = self._st.unpack_from
        self._pack = self._st.pack

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        try:
            return self._unpack(buf, pos)[0], pos + self.size
        except struct.error:
            raise _truncated(self.name, pos) from None

    def write(self, value: Any, out: Parts) -> None:
        try:
            out.append(self._pack(value))
        except struct.error as exc:
            raise ValueError(f"{self.name}: cannot encode {value!r}: {exc}") from None


INT8 = _Fixed("int8", "b")
INT16 = _Fixed("int16", "h")
INT32 = _Fixed("int32", "i")
INT64 = _Fixed("int64", "q")
UINT16 = _Fixed("uint16", "H")
FLOAT64 = _Fixed("float64", "d", 0.0)


class _Boolean(_Fixed):
    def __init__(self) -> None:
        super().__init__("boolean", "?", False)

    def write(self, value: Any, out: Parts) -> None:
        out.append(b"\x01" if value else b"\x00")


BOOLEAN = _Boolean()


class _Uuid(Type):
    name = "uuid"
    default = b"\x00" * 16

    def read(self, buf: Buffer, pos: int) -> tuple[bytes, int]:
        if pos + 16 > len(buf):
            raise _truncated("uuid", pos)
        return bytes(buf[pos : pos + 16]), pos + 16

    def write(self, value: Any, out: Parts) -> None:
        if len(value) != 16:
            raise ValueError(f"uuid must be 16 bytes, got {len(value)}")
        out.append(bytes(value))


UUID = _Uuid()

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class _Blob(Type):
    """Length-prefixed bytes or string; int16/int32 or (compact) unsigned-varint length+1."""

    def __init__(
        self, name: str, *, text: bool, nullable: bool, compact: bool = False, raw: bool = False
    ):
        self.name = name
        self.text = text
        self.nullable = nullable
        self.is_compact = compact
        self.raw = raw  # Records: keep a zero-copy slice, accept any sized buffer on write
        self.default = None if nullable else ("" if text else b"")

    def compact(self) -> _Blob:
        return _Blob(
            "compact_" + self.name,
            text=self.text,
            nullable=self.nullable,
            compact=True,
            raw=self.raw,
        )

    def _read_len(self, buf: Buffer, pos: int) -> tuple[int, int]:
        if self.is_compact:
            n, pos = decode_uvarint(buf, pos)
            return n - 1, pos
        if self.text:
            if pos + 2 > len(buf):
                raise _truncated(self.name + " length", pos)
            return _INT16.unpack_from(buf, pos)[0], pos + 2
        if pos + 4 > len(buf):
            raise _truncated(self.name + " length", pos)
        return _INT32.unpack_from(buf, pos)[0], pos + 4

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        n, pos = self._read_len(buf, pos)
        if n < 0:
            if n == -1 and self.nullable:
                return None, pos
            raise ProtocolDecodeError(f"{self.name}: invalid length {n} at byte {pos}")
        end = pos + n
        if end > len(buf):
            raise ProtocolDecodeError(
                f"{self.name}: length {n} at byte {pos} runs past the end ({len(buf)} bytes)"
            )
        data = buf[pos:end]
        if self.text:
            try:
                return bytes(data).decode("utf-8"), end
            except UnicodeDecodeError:
                raise ProtocolDecodeError(f"{self.name}: invalid utf-8 at byte {pos}") from None
        return (data if self.raw else bytes(data)), end

    def write(self, value: Any, out: Parts) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError(f"{self.name} is not nullable")
            out.append(
                b"\x00" if self.is_compact else (b"\xff\xff" if self.text else b"\xff\xff\xff\xff")
            )
            return
        if self.text:
            value = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            if len(value) > 32767 and not self.is_compact:
                raise ValueError(f"{self.name} longer than 32767 bytes")
        n = len(value)
        if self.is_compact:
            out.append(encode_uvarint(n + 1))
        else:
            out.append(_INT16.pack(n) if self.text else _INT32.pack(n))
        if n:
            out.append(value)


STRING = _Blob("string", text=True, nullable=False)
NULLABLE_STRING = _Blob("nullable_string", text=True, nullable=True)
BYTES = _Blob("bytes", text=False, nullable=False)
NULLABLE_BYTES = _Blob("nullable_bytes", text=False, nullable=True)
RECORDS = _Blob("records", text=False, nullable=True, raw=True)
COMPACT_STRING = STRING.compact()
COMPACT_NULLABLE_STRING = NULLABLE_STRING.compact()
COMPACT_BYTES = BYTES.compact()
COMPACT_NULLABLE_BYTES = NULLABLE_BYTES.compact()
COMPACT_RECORDS = RECORDS.compact()


class ArrayOf(Type):
    """An array of an element type: int32 count (-1 = null) or compact uvarint count+1."""

    def __init__(self, element: Type, *, nullable: bool = False, compact: bool = False):
        self.element = element
        self.nullable = nullable
        self.is_compact = compact
        self.name = f"{'compact_' if compact else ''}array<{element!r}>"
        self.default = None if nullable else []

    def compact(self) -> ArrayOf:
        return ArrayOf(self.element.compact(), nullable=self.nullable, compact=True)

    def read(self, buf: Buffer, pos: int) -> tuple[list[Any] | None, int]:
        if self.is_compact:
            n, pos = decode_uvarint(buf, pos)
            n -= 1
        else:
            if pos + 4 > len(buf):
                raise _truncated("array length", pos)
            n = _INT32.unpack_from(buf, pos)[0]
            pos += 4
        if n < 0:
            if n == -1 and self.nullable:
                return None, pos
            raise ProtocolDecodeError(f"{self.name}: invalid count {n} at byte {pos}")
        if n > len(buf) - pos:  # every element takes at least one byte: a lying count fails here
            raise ProtocolDecodeError(f"{self.name}: count {n} at byte {pos} exceeds the input")
        read = self.element.read
        items = []
        for _ in range(n):
            item, pos = read(buf, pos)
            items.append(item)
        return items, pos

    def write(self, value: Any, out: Parts) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError(f"{self.name} is not nullable")
            out.append(b"\x00" if self.is_compact else b"\xff\xff\xff\xff")
            return
        out.append(encode_uvarint(len(value) + 1) if self.is_compact else _INT32.pack(len(value)))
        write = self.element.write
        for item in value:
            write(item, out)


EMPTY_TAGGED_FIELDS = b"\x00"


def read_tagged_fields(buf: Buffer, pos: int) -> tuple[dict[int, bytes], int]:
    """Read a tagged-field section (KIP-482); unknown tags are kept as raw bytes by tag number."""
    count, pos = decode_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise ProtocolDecodeError(f"tagged field count {count} at byte {pos} exceeds the input")
    tags = {}
    for _ in range(count):
        tag, pos = decode_uvarint(buf, pos)
        size, pos = decode_uvarint(buf, pos)
        if pos + size > len(buf):
            raise _truncated("tagged field", pos)
        tags[tag] = bytes(buf[pos : pos + size])
        pos += size
    return tags, pos


def write_tagged_fields(tags: dict[int, bytes] | None) -> bytes:
    """A tagged-field section (KIP-482) holding ``{tag: raw value bytes}``, tags ascending."""
    if not tags:
        return EMPTY_TAGGED_FIELDS
    parts = [encode_uvarint(len(tags))]
    for tag in sorted(tags):
        raw = bytes(tags[tag])
        parts += [encode_uvarint(tag), encode_uvarint(len(raw)), raw]
    return b"".join(parts)
