"""Avro serdes in the Confluent wire format, encoding with fastavro (as confluent-kafka does,
so the bytes are the same).

``AvroSerializer(client, schema_str, conf, to_dict=None)`` writes dicts (``to_dict(obj, ctx)``
turns dataclasses or other objects into one); ``AvroDeserializer(client, schema_str=None,
conf, from_dict=None)`` reads with the writer's schema, resolved to ``schema_str`` (or the
latest version, with ``use.latest.version``) when given.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from typing import Any

from .model import Schema, SerializationError
from .serde import SchemaDeserializer, SchemaSerializer
from .wire import SerializationContext


def _fastavro() -> Any:
    """fastavro, or a clear message naming the extra that brings it."""
    try:
        import fastavro
    except ImportError as exc:
        raise ImportError(
            "Avro serdes need fastavro: pip install 'kclient[schemaregistry]'"
        ) from exc
    return fastavro


def parse_avro(schema: Schema, references: Mapping[str, Schema]) -> Any:
    """fastavro's parsed schema, the referenced schemas' named types known to it."""
    fastavro = _fastavro()
    named: dict[str, Any] = {}
    try:
        for ref in references.values():
            fastavro.parse_schema(json.loads(ref.schema_str), named_schemas=named)
        return fastavro.parse_schema(json.loads(schema.schema_str), named_schemas=named)
    except Exception as exc:  # json errors, fastavro's SchemaParseException / UnknownType
        raise SerializationError(f"invalid Avro schema: {type(exc).__name__}: {exc}") from exc


class AvroSerializer(SchemaSerializer):
    """Objects to Confluent-framed Avro (see the module doc)."""

    schema_type = "AVRO"

    def __init__(
        self,
        schema_registry_client: Any,
        schema_str: str | Schema | None = None,
        conf: Mapping[str, Any] | None = None,
        to_dict: Callable[[Any, SerializationContext], Any] | None = None,
    ) -> None:
        super().__init__(schema_registry_client, schema_str, conf, {}, to_dict)
        self._writer_fn = _fastavro().schemaless_writer
        self._name: str | None = None
        if self.schema is not None:
            parsed = parse_avro(self.schema, {}) if not self.schema.references else None
            if isinstance(parsed, dict):
                self._name = parsed.get("name")

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        return parse_avro(schema, references)

    def record_name(self, obj: Any) -> str | None:
        return self._name

    def encode(self, parsed: Any, obj: Any, head: bytes) -> bytes:
        out = io.BytesIO()
        out.write(head)
        try:
            self._writer_fn(out, parsed, obj)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SerializationError(f"value does not match the Avro schema: {exc}") from exc
        return out.getvalue()


class AvroDeserializer(SchemaDeserializer):
    """Confluent-framed Avro to dicts (or ``from_dict(d, ctx)``'s objects)."""

    schema_type = "AVRO"

    def __init__(
        self,
        schema_registry_client: Any,
        schema_str: str | Schema | None = None,
        conf: Mapping[str, Any] | None = None,
        from_dict: Callable[[Any, SerializationContext | None], Any] | None = None,
        return_record_name: bool = False,
    ) -> None:
        super().__init__(schema_registry_client, schema_str, conf, {}, from_dict)
        self.return_record_name = return_record_name
        self._reader_fn = _fastavro().schemaless_reader

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        return parse_avro(schema, references)

    def decode(self, writer: Any, reader: Any, data: bytes, start: int) -> Any:
        stream = io.BytesIO(data)
        stream.seek(start)
        try:
            return self._reader_fn(stream, writer, reader, self.return_record_name)
        except Exception as exc:  # truncated data, a schema resolution failure
            raise SerializationError(f"cannot decode Avro: {type(exc).__name__}: {exc}") from exc


__all__ = ["AvroDeserializer", "AvroSerializer", "parse_avro"]
