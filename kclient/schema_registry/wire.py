"""The Confluent wire format: a zero byte, the schema id as 4 big-endian bytes, the encoded
value; Protobuf adds the message indexes (zigzag varints: a count, then each index, with the
single byte 0 standing for ``[0]``).  Newer clients may put the schema's GUID in a header
instead (``__key_schema_id`` / ``__value_schema_id``: the byte 1, then 16 GUID bytes)."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .model import SerializationError

MAGIC = 0
MAGIC_GUID = 1
PREFIX = struct.Struct(">bI")
KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"


class MessageField:
    """Which part of a record is (de)serialized."""

    KEY = "key"
    VALUE = "value"


@dataclass
class SerializationContext:
    """The topic, the field (``MessageField.KEY`` or ``VALUE``) and the record's headers (a
    list of (name, bytes) or a dict; the header schema-id form adds to them)."""

    topic: str
    field: str = MessageField.VALUE
    headers: Any = None


def prefix(schema_id: int) -> bytes:
    """The 5 bytes that start a registry-encoded value."""
    return PREFIX.pack(MAGIC, schema_id)


def header_name(field: str) -> str:
    """The header carrying the schema GUID of a key or a value."""
    return KEY_SCHEMA_ID_HEADER if field == MessageField.KEY else VALUE_SCHEMA_ID_HEADER


def guid_header(guid: str) -> bytes:
    """A GUID header's value."""
    return bytes((MAGIC_GUID,)) + uuid.UUID(guid).bytes


def add_header(ctx: SerializationContext, guid: str) -> None:
    """Put the schema GUID in the record's headers."""
    if ctx.headers is None:
        raise SerializationError(
            "schema.id.serializer=header needs the record's headers in "
            "the SerializationContext (a list or a dict)"
        )
    name, value = header_name(ctx.field), guid_header(guid)
    if isinstance(ctx.headers, dict):
        ctx.headers[name] = value
    else:
        ctx.headers.append((name, value))


def _find_header(ctx: SerializationContext | None) -> bytes | None:
    """The schema-id header of the context's field, if the record has one."""
    if ctx is None or not ctx.headers:
        return None
    name = header_name(ctx.field)
    if isinstance(ctx.headers, dict):
        found = ctx.headers.get(name)
        return bytes(found) if found is not None else None
    for key, value in ctx.headers:
        if key == name and value is not None:
            return bytes(value)
    return None


def schema_ref(data: bytes, ctx: SerializationContext | None = None) -> tuple[int | str, int]:
    """(schema id or GUID string, where the payload starts): from the header when the
    record has one, else from the 5-byte prefix."""
    header = _find_header(ctx)
    if header is not None and ctx is not None:
        if len(header) == 17 and header[0] == MAGIC_GUID:
            return str(uuid.UUID(bytes=header[1:])), 0
        if len(header) == 5 and header[0] == MAGIC:
            return PREFIX.unpack(header)[1], 0
        raise SerializationError(
            f"schema id header {header_name(ctx.field)} is malformed ({len(header)} bytes)"
        )
    if len(data) < 5:
        raise SerializationError(
            f"{len(data)} bytes are too short for the Confluent wire "
            "format (magic byte and 4-byte schema id)"
        )
    if data[0] != MAGIC:
        raise SerializationError(
            f"unknown magic byte {data[0]}: not in the Confluent wire format (expected 0)"
        )
    return PREFIX.unpack_from(data)[1], 5


def _zigzag_varint(n: int, out: bytearray) -> None:
    """Append ``n`` as a zigzag varint."""
    z = (n << 1) ^ (n >> 63)
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def encode_indexes(indexes: Sequence[int]) -> bytes:
    """Protobuf message indexes (the path to the message type in its file)."""
    if list(indexes) == [0]:
        return b"\x00"
    out = bytearray()
    _zigzag_varint(len(indexes), out)
    for index in indexes:
        _zigzag_varint(index, out)
    return bytes(out)


def _read_zigzag(data: bytes, pos: int) -> tuple[int, int]:
    """One zigzag varint at ``pos``; (value, next position)."""
    shift = result = 0
    while True:
        if pos >= len(data):
            raise SerializationError("truncated Protobuf message index")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise SerializationError("Protobuf message index varint is too long")


def decode_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """Protobuf message indexes at ``pos``; (indexes, where the message starts)."""
    count, pos = _read_zigzag(data, pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > len(data) - pos:
        raise SerializationError(f"bad Protobuf message index count {count}")
    indexes = []
    for _ in range(count):
        index, pos = _read_zigzag(data, pos)
        indexes.append(index)
    return indexes, pos


__all__ = [
    "KEY_SCHEMA_ID_HEADER",
    "MessageField",
    "SerializationContext",
    "VALUE_SCHEMA_ID_HEADER",
    "add_header",
    "decode_indexes",
    "encode_indexes",
    "guid_header",
    "prefix",
    "schema_ref",
]
