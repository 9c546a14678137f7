"""Schema parsing, canonical forms and compatibility levels for the mini-broker's registry.

A schema is accepted only if its library parses it: Avro with fastavro (references parsed
first, their named types visible to the schema), JSON Schema with jsonschema's metaschema check
for the draft the schema names, Protobuf as text or as a base64 ``FileDescriptorProto`` (the
form confluent-kafka registers), checked by protobuf.  Compatibility levels follow Confluent's
names; for Avro the rules are the specification's schema resolution (avro_compat.py).  JSON
Schema and Protobuf have no resolution rules in their libraries, so only their parse is checked
(see docs/schema-registry.md).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

from .avro_compat import reading_problems

LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
TYPES = ("AVRO", "JSON", "PROTOBUF")


class InvalidSchema(ValueError):
    """A schema its library refuses (the registry's 42201)."""


def _need(module: str) -> Any:
    """Import a schema library, or say which extra brings it."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as exc:
        raise InvalidSchema(
            f"the registry needs {module} for this schema type: "
            "pip install 'kclient[schemaregistry]'"
        ) from exc


def parse_avro(text: str, references: Sequence[str] = ()) -> Any:
    """fastavro's parsed form of ``text``, with the referenced schemas' named types known."""
    fastavro = _need("fastavro")
    named: dict[str, Any] = {}
    try:
        for ref in references:
            fastavro.parse_schema(json.loads(ref), named_schemas=named)
        return fastavro.parse_schema(json.loads(text), named_schemas=named)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidSchema(f"Invalid schema: {exc}") from exc
    except Exception as exc:  # fastavro's SchemaParseException and UnknownType
        raise InvalidSchema(f"Invalid schema: {type(exc).__name__}: {exc}") from exc


def _check_json(text: str) -> None:
    """jsonschema's metaschema check for the draft the schema's ``$schema`` names."""
    validators = _need("jsonschema.validators")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise InvalidSchema(f"Invalid schema: not JSON: {exc}") from exc
    if not isinstance(document, (dict, bool)):
        raise InvalidSchema("Invalid schema: a JSON Schema is an object or a boolean")
    cls = validators.validator_for(document)
    try:
        cls.check_schema(document)
    except Exception as exc:  # jsonschema.exceptions.SchemaError
        raise InvalidSchema(f"Invalid schema: {getattr(exc, 'message', exc)}") from exc


def _check_protobuf(text: str) -> None:
    """A base64 FileDescriptorProto must decode; text must at least name a syntax or message."""
    stripped = text.strip()
    if not stripped:
        raise InvalidSchema("Invalid schema: empty Protobuf schema")
    if any(word in stripped for word in ("message ", "syntax", "enum ", "service ")):
        return
    descriptor_pb2 = _need("google.protobuf.descriptor_pb2")
    try:
        descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(stripped, validate=True))
    except (binascii.Error, ValueError, Exception) as exc:
        raise InvalidSchema(
            f"Invalid schema: neither .proto text nor a serialized FileDescriptorProto: {exc}"
        ) from exc


def _plain(schema: Any) -> Any:
    """An Avro schema with ``{"type": "int"}`` written ``"int"`` wherever it stands alone (as
    Avro's own ``Schema.toString`` writes it), so both spellings get one id."""
    if isinstance(schema, list):
        return [_plain(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    if set(schema) == {"type"} and isinstance(schema["type"], (str, list, dict)):
        return _plain(schema["type"])
    out = dict(schema)
    for key in ("items", "values"):
        if key in out:
            out[key] = _plain(out[key])
    if isinstance(out.get("type"), (list, dict)):
        out["type"] = _plain(out["type"])
    if isinstance(out.get("fields"), list):
        out["fields"] = [
            dict(f, type=_plain(f["type"])) if isinstance(f, dict) and "type" in f else f
            for f in out["fields"]
        ]
    return out


def canonical(schema_type: str, text: str, references: Sequence[str] = ()) -> str:
    """The stored form of a valid schema (JSON compacted); InvalidSchema when it is not valid."""
    if schema_type == "AVRO":
        parse_avro(text, references)
        return json.dumps(_plain(json.loads(text)), separators=(",", ":"))
    if schema_type == "JSON":
        _check_json(text)
        return json.dumps(json.loads(text), separators=(",", ":"))
    if schema_type == "PROTOBUF":
        _check_protobuf(text)
        return text.strip()
    raise InvalidSchema(f"Invalid schema type {schema_type!r} (one of {', '.join(TYPES)})")


def problems(
    schema_type: str,
    new: tuple[str, Sequence[str]],
    existing: Sequence[tuple[str, Sequence[str]]],
    level: str,
) -> list[str]:
    """Why ``new`` (text, reference texts) breaks ``level`` against ``existing`` (oldest
    first; all of them for the TRANSITIVE levels, else the latest only); [] when it does not."""
    if level == "NONE" or not existing or schema_type != "AVRO":
        return []
    against = existing if level.endswith("_TRANSITIVE") else existing[-1:]
    mine = parse_avro(*new)
    found: list[str] = []
    for text, refs in against:
        theirs = parse_avro(text, refs)
        if level.startswith(("BACKWARD", "FULL")):
            found += [f"BACKWARD: {p}" for p in reading_problems(theirs, mine)]
        if level.startswith(("FORWARD", "FULL")):
            found += [f"FORWARD: {p}" for p in reading_problems(mine, theirs)]
    return found


__all__ = ["LEVELS", "TYPES", "InvalidSchema", "canonical", "parse_avro", "problems"]
