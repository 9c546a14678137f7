"""Serdes without generated code or a schema in hand, for tools (``kclient produce`` /
``consume``, the Spark data source): values as plain Python (dicts, lists, strings, numbers).

:class:`AnyDeserializer` reads any registry-encoded value, whatever its schema type: Avro as
fastavro's dicts, JSON as parsed JSON, Protobuf through a message class built from the
registered descriptor (as a dict with the proto field names).  :func:`serializer_for` makes
the serializer of a format from a schema text, or from the subject's latest version when no
text is given.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from typing import Any

from .avro import AvroSerializer, parse_avro
from .json_schema import JSONSerializer
from .model import Schema, SerializationError
from .protobuf import message_class
from .serde import SchemaDeserializer, SchemaSerializer
from .wire import decode_indexes, encode_indexes, prefix

FORMATS = {"avro": "AVRO", "json-schema": "JSON", "protobuf": "PROTOBUF"}
Decode = Callable[[bytes, int], Any]


def _avro_decoder(parsed: Any) -> Decode:
    """Avro payload -> dict."""
    import fastavro

    reader = fastavro.schemaless_reader

    def decode(data: bytes, start: int) -> Any:
        stream = io.BytesIO(data)
        stream.seek(start)
        return reader(stream, parsed, None)

    return decode


def _protobuf_decoder(schema: Schema, references: dict[str, Schema]) -> Decode:
    """Protobuf payload (indexes, message) -> dict, one message class per index path."""
    from google.protobuf.json_format import MessageToDict

    classes: dict[tuple[int, ...], Any] = {}

    def decode(data: bytes, start: int) -> Any:
        indexes, start = decode_indexes(data, start)
        cls = classes.get(tuple(indexes))
        if cls is None:
            cls = classes[tuple(indexes)] = message_class(schema, references, indexes)[0]
        message = cls()
        message.ParseFromString(memoryview(data)[start:].tobytes())
        return MessageToDict(message, preserving_proto_field_name=True)

    return decode


class AnyDeserializer(SchemaDeserializer):
    """Any registry-encoded value to plain Python (see the module doc)."""

    def __init__(self, schema_registry_client: Any, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(schema_registry_client, None, conf, {})

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        if schema.schema_type == "AVRO":
            return _avro_decoder(parse_avro(schema, references))
        if schema.schema_type == "PROTOBUF":
            return _protobuf_decoder(schema, references)
        return lambda data, start: json.loads(memoryview(data)[start:].tobytes())

    def decode(self, writer: Any, reader: Any, data: bytes, start: int) -> Any:
        try:
            return writer(data, start)
        except SerializationError:
            raise
        except Exception as exc:  # truncated or corrupt payloads of any format
            raise SerializationError(f"cannot decode: {type(exc).__name__}: {exc}") from exc


class DynamicProtobufSerializer(SchemaSerializer):
    """Dicts to Protobuf through the registered schema's descriptor (the subject's latest
    version, or ``use.schema.id``), as message ``message_name`` (default: the first)."""

    schema_type = "PROTOBUF"

    def __init__(
        self,
        schema_registry_client: Any,
        conf: Mapping[str, Any] | None = None,
        message_name: str | None = None,
    ) -> None:
        conf = dict(conf or {})
        if conf.get("use.schema.id") is None:
            conf.setdefault("use.latest.version", True)
        conf["auto.register.schemas"] = False
        super().__init__(schema_registry_client, None, conf, {})
        self.message_name = message_name

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        return message_class(schema, references, None, self.message_name)

    def head(self, schema_id: int, parsed: Any) -> bytes:
        return prefix(schema_id) + encode_indexes(parsed[1])

    def encode(self, parsed: Any, obj: Any, head: bytes) -> bytes:
        from google.protobuf.json_format import ParseDict, ParseError

        try:
            return head + ParseDict(obj, parsed[0]()).SerializeToString()
        except (ParseError, TypeError, ValueError) as exc:
            raise SerializationError(f"value does not fit the Protobuf message: {exc}") from exc


def serializer_for(
    fmt: str,
    client: Any,
    schema_text: str | None = None,
    conf: Mapping[str, Any] | None = None,
    message_name: str | None = None,
) -> SchemaSerializer:
    """The serializer of ``fmt`` (avro, json-schema, protobuf): with ``schema_text`` it is
    registered as needed; without, the subject's latest version is used."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    conf = dict(conf or {})
    if fmt == "protobuf":
        if schema_text is not None:
            raise ValueError(
                "protobuf: register the schema first (kclient schemas register "
                "... --type PROTOBUF) and produce with the subject's latest"
            )
        return DynamicProtobufSerializer(client, conf, message_name)
    if schema_text is None and conf.get("use.schema.id") is None:
        conf.setdefault("use.latest.version", True)
        conf["auto.register.schemas"] = False
    if fmt == "avro":
        return AvroSerializer(client, schema_text, conf)
    return JSONSerializer(schema_text, client, None, conf)


__all__ = ["FORMATS", "AnyDeserializer", "DynamicProtobufSerializer", "serializer_for"]
