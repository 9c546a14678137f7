"""JSON Schema serdes in the Confluent wire format: values as compact UTF-8 JSON (the bytes
confluent-kafka writes), validated with jsonschema against the draft the schema names, and
referenced schemas resolved by their reference names (``referencing``).

``JSONSerializer(schema_str, client, to_dict=None, conf=None)`` and
``JSONDeserializer(schema_str, from_dict=None, schema_registry_client=None, conf=None)`` take
their arguments in confluent-kafka's order; ``validate`` (default true) turns checking off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .model import Schema, SerializationError
from .serde import SchemaDeserializer, SchemaSerializer
from .wire import SerializationContext, schema_ref


def _validator(schema: Schema, references: Mapping[str, Schema]) -> Any:
    """A jsonschema validator of the draft ``schema`` names, its references registered."""
    try:
        from jsonschema.validators import validator_for
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError as exc:
        raise ImportError(
            "JSON Schema serdes need jsonschema: pip install 'kclient[schemaregistry]'"
        ) from exc
    try:
        document = json.loads(schema.schema_str)
        registry: Any = Registry().with_resources(
            (
                name,
                Resource.from_contents(
                    json.loads(ref.schema_str), default_specification=DRAFT202012
                ),
            )
            for name, ref in references.items()
        )
        cls = validator_for(document)
        cls.check_schema(document)
        return cls(document, registry=registry)
    except Exception as exc:  # json errors, jsonschema's SchemaError
        raise SerializationError(
            f"invalid JSON Schema: {type(exc).__name__}: {getattr(exc, 'message', exc)}"
        ) from exc


def _check(validator: Any, value: Any) -> None:
    """Raise SerializationError naming where ``value`` breaks the schema."""
    error = next(iter(validator.iter_errors(value)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "/"
        raise SerializationError(
            f"value does not match the JSON Schema at {where}: {error.message}"
        )


class JSONSerializer(SchemaSerializer):
    """Objects (dicts, or ``to_dict(obj, ctx)``'s) to Confluent-framed JSON."""

    schema_type = "JSON"

    def __init__(
        self,
        schema_str: str | Schema | None,
        schema_registry_client: Any,
        to_dict: Callable[[Any, SerializationContext], Any] | None = None,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(schema_registry_client, schema_str, conf, {"validate": True}, to_dict)
        self.validate = bool(self.conf["validate"])
        self._title: str | None = None
        if self.schema is not None:
            try:
                document = json.loads(self.schema.schema_str)
            except ValueError as exc:
                raise SerializationError(f"invalid JSON Schema: {exc}") from exc
            self._title = document.get("title") if isinstance(document, dict) else None

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        return _validator(schema, references)

    def record_name(self, obj: Any) -> str | None:
        return self._title

    def encode(self, parsed: Any, obj: Any, head: bytes) -> bytes:
        if self.validate:
            _check(parsed, obj)
        try:
            text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"value is not JSON: {exc}") from exc
        return head + text.encode()


class JSONDeserializer(SchemaDeserializer):
    """Confluent-framed JSON to Python values (or ``from_dict(value, ctx)``'s objects)."""

    schema_type = "JSON"

    def __init__(
        self,
        schema_str: str | Schema | None = None,
        from_dict: Callable[[Any, SerializationContext | None], Any] | None = None,
        schema_registry_client: Any = None,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(schema_registry_client, schema_str, conf, {"validate": True}, from_dict)
        self.validate = bool(self.conf["validate"])
        self._own = (
            _validator(self.reader_schema, {})
            if self.reader_schema is not None and not self.reader_schema.references
            else None
        )

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        return _validator(schema, references)

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        """The value ``data`` holds; without a registry client, a schema given here checks it."""
        if data is not None and self.client is None:
            return self._standalone(data, ctx)
        return super().__call__(data, ctx)

    def _standalone(self, data: bytes, ctx: SerializationContext | None) -> Any:
        """No registry: skip the framing, validate with the given schema."""
        _, start = schema_ref(data, ctx)
        value = self.decode(self._own, None, data, start)
        return value if self.from_dict is None else self.from_dict(value, ctx)

    def decode(self, writer: Any, reader: Any, data: bytes, start: int) -> Any:
        try:
            value = json.loads(memoryview(data)[start:].tobytes())
        except ValueError as exc:
            raise SerializationError(f"payload is not JSON: {exc}") from exc
        if self.validate and (reader or writer) is not None:
            _check(reader or writer, value)
        return value


__all__ = ["JSONDeserializer", "JSONSerializer"]
