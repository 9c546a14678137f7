"""Protobuf serdes in the Confluent wire format: the 5-byte prefix, the message indexes (the
path to the message type in its file, zigzag varints, ``[0]`` as one zero byte), then the
message's bytes.

The schema registered is the message's file as a base64 ``FileDescriptorProto`` (the form
confluent-kafka registers); each imported file (other than protobuf's well-known types) is
registered first under its file name and named as a reference, so both clients resolve the
same subjects and ids.  ``ProtobufDeserializer(message_type)`` parses into that type.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Generator, Mapping
from typing import Any

from .model import Schema, SchemaReference, SerializationError
from .serde import SchemaDeserializer, SchemaSerializer
from .wire import SerializationContext, decode_indexes, encode_indexes, prefix, schema_ref

BUILTIN_PREFIXES = ("google/protobuf/", "google/type/", "confluent/")


def index_path(descriptor: Any) -> list[int]:
    """Where a message type sits in its file: top-level index, then nested indexes."""
    path = []
    while descriptor.containing_type is not None:
        parent = descriptor.containing_type
        path.append(list(parent.nested_types).index(descriptor))
        descriptor = parent
    path.append(list(descriptor.file.message_types_by_name.values()).index(descriptor))
    return path[::-1]


def file_schema_text(file_descriptor: Any) -> str:
    """A file descriptor as the registry stores it (base64 of its serialized proto)."""
    return base64.standard_b64encode(file_descriptor.serialized_pb).decode("ascii")


def _builtin(name: str) -> bool:
    """Well-known types every reader has (not registered as references)."""
    return name.startswith(BUILTIN_PREFIXES)


class ProtobufSerializer(SchemaSerializer):
    """Messages of ``msg_type`` to Confluent-framed Protobuf."""

    schema_type = "PROTOBUF"

    def __init__(
        self,
        msg_type: Any,
        schema_registry_client: Any,
        conf: Mapping[str, Any] | None = None,
        to_dict: Callable[[Any, SerializationContext], Any] | None = None,
    ) -> None:
        descriptor = getattr(msg_type, "DESCRIPTOR", None)
        if descriptor is None:
            raise TypeError(f"{msg_type!r} is not a generated Protobuf message class")
        self.msg_type = msg_type
        self.indexes = index_path(descriptor)
        schema = Schema(file_schema_text(descriptor.file), "PROTOBUF")
        super().__init__(schema_registry_client, schema, conf, {"skip.known.types": True}, to_dict)
        if self.header_ids:
            raise ValueError(
                "schema.id.serializer=header is not supported for Protobuf here "
                "(the message indexes go with the prefix)"
            )
        self._name = descriptor.full_name
        self._file = descriptor.file
        self._with_refs: Schema | None = None

    def record_name(self, obj: Any) -> str | None:
        return self._name

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        return None  # the generated class encodes itself

    def head(self, schema_id: int, parsed: Any) -> bytes:
        return prefix(schema_id) + encode_indexes(self.indexes)

    def _references(self, schema: Schema) -> Generator[Any, Any, dict[str, Schema]]:
        """No reference texts are needed to encode (the class has them compiled in)."""
        return {}
        yield

    def _writer(self, subject: str) -> Generator[Any, Any, tuple[int, str | None, Any, bytes]]:
        """Register the imported files first, then the message's file naming them."""
        if self._with_refs is None and self.schema is not None:
            refs = yield from self._dependencies(self._file)
            self.schema = self._with_refs = Schema(self.schema.schema_str, "PROTOBUF", tuple(refs))
        return (yield from super()._writer(subject))

    def _dependencies(self, file_descriptor: Any) -> Generator[Any, Any, list[SchemaReference]]:
        """References of a file's imports, each registered (or looked up) under its name."""
        calls, out = self.client.calls, []
        for dep in file_descriptor.dependencies:
            if _builtin(dep.name) and self.conf["skip.known.types"]:
                continue
            inner = yield from self._dependencies(dep)
            schema = Schema(file_schema_text(dep), "PROTOBUF", tuple(inner))
            if self.conf["auto.register.schemas"]:
                yield from calls.register_schema(dep.name, schema, self.conf["normalize.schemas"])
            found = yield from calls.lookup_schema(dep.name, schema, self.conf["normalize.schemas"])
            out.append(SchemaReference(dep.name, dep.name, int(found.version)))
        return out

    def encode(self, parsed: Any, obj: Any, head: bytes) -> bytes:
        if not isinstance(obj, self.msg_type):
            raise SerializationError(f"expected a {self._name} message, got {type(obj).__name__}")
        return head + obj.SerializeToString()


class ProtobufDeserializer(SchemaDeserializer):
    """Confluent-framed Protobuf to messages of ``message_type``."""

    schema_type = "PROTOBUF"

    def __init__(
        self,
        message_type: Any,
        conf: Mapping[str, Any] | None = None,
        schema_registry_client: Any = None,
    ) -> None:
        if getattr(message_type, "DESCRIPTOR", None) is None:
            raise TypeError(f"{message_type!r} is not a generated Protobuf message class")
        super().__init__(schema_registry_client, None, conf, {})
        self.message_type = message_type
        self.indexes = index_path(message_type.DESCRIPTOR)

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        return None

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        """The message ``data`` holds (the schema id is read, no registry call is needed)."""
        if data is None:
            return None
        _, start = schema_ref(data, ctx)
        return self.decode(None, None, data, start)

    def decode(self, writer: Any, reader: Any, data: bytes, start: int) -> Any:
        indexes, start = decode_indexes(data, start)
        if indexes != self.indexes:
            raise SerializationError(
                f"message indexes {indexes} do not name "
                f"{self.message_type.DESCRIPTOR.full_name} "
                f"({self.indexes})"
            )
        message = self.message_type()
        try:
            message.ParseFromString(memoryview(data)[start:].tobytes())
        except Exception as exc:  # google.protobuf.message.DecodeError
            raise SerializationError(f"cannot decode Protobuf: {exc}") from exc
        return message


__all__ = ["ProtobufDeserializer", "ProtobufSerializer", "file_schema_text", "index_path"]


def _file_proto(name: str, schema: Schema) -> Any:
    """A registered Protobuf schema as a FileDescriptorProto named ``name``."""
    from google.protobuf import descriptor_pb2

    text = schema.schema_str.strip()
    try:
        proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=True))
    except Exception as exc:  # binascii.Error, DecodeError
        raise SerializationError(
            "only Protobuf schemas registered as a serialized FileDescriptorProto (the form "
            "confluent-kafka and kclient register) can be used without generated classes; "
            f".proto text needs protoc ({exc})"
        ) from exc
    proto.name = name
    return proto


def _add_file(pool: Any, name: str, schema: Schema, references: Mapping[str, Schema]) -> None:
    """Add a file and, first, the files it imports (well-known ones from protobuf itself)."""
    from google.protobuf import descriptor_pool

    try:
        pool.FindFileByName(name)
        return
    except KeyError:
        pass
    proto = _file_proto(name, schema)
    for dep in proto.dependency:
        if dep in references:
            _add_file(pool, dep, references[dep], references)
        else:
            try:
                known = descriptor_pool.Default().FindFileByName(dep)
            except KeyError:
                raise SerializationError(
                    f"Protobuf import {dep} is neither a reference nor a well-known type"
                ) from None
            pool.AddSerializedFile(known.serialized_pb)
    pool.Add(proto)


def message_class(
    schema: Schema,
    references: Mapping[str, Schema],
    indexes: list[int] | None = None,
    name: str | None = None,
) -> tuple[Any, list[int]]:
    """A message class built from a registered schema (no generated code), chosen by message
    indexes or full name (default: the file's first message); with its indexes."""
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    _add_file(pool, "__schema__.proto", schema, references)
    file = pool.FindFileByName("__schema__.proto")
    if name is not None:
        try:
            descriptor = pool.FindMessageTypeByName(name)
        except KeyError:
            raise SerializationError(f"no message {name} in the schema") from None
    else:
        path = indexes or [0]
        try:
            descriptor = list(file.message_types_by_name.values())[path[0]]
            for index in path[1:]:
                descriptor = list(descriptor.nested_types)[index]
        except IndexError:
            raise SerializationError(f"message indexes {path} name no message") from None
    return message_factory.GetMessageClass(descriptor), index_path(descriptor)
