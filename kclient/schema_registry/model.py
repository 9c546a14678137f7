"""What the Schema Registry API talks about: schemas, references, registered versions, errors."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class SchemaRegistryError(Exception):
    """The registry answered with an error: HTTP ``status``, Confluent's ``error_code``."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(f"{message} (HTTP {status}, error code {error_code})")
        self.status, self.error_code, self.message = status, error_code, message


class SerializationError(Exception):
    """A value could not be serialized or deserialized (bad framing, unknown id, bad data)."""


@dataclass(frozen=True)
class SchemaReference:
    """A schema another one imports: its ``name`` in the importing schema, where it is
    registered (``subject``, ``version``)."""

    name: str
    subject: str
    version: int

    def to_dict(self) -> dict[str, Any]:
        """The REST form."""
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class Schema:
    """A schema's text and type (``AVRO``, ``JSON`` or ``PROTOBUF``), with its references and
    optional metadata / rule set (data contracts)."""

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = ()
    metadata: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    rule_set: dict[str, Any] | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.schema_str, str):
            raise TypeError(f"schema_str must be a str, not {type(self.schema_str).__name__}")
        object.__setattr__(self, "schema_type", (self.schema_type or "AVRO").upper())
        object.__setattr__(
            self,
            "references",
            tuple(
                r if isinstance(r, SchemaReference) else SchemaReference(**r)
                for r in self.references
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The REST body registering or looking up this schema."""
        out: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = [r.to_dict() for r in self.references]
        if self.metadata:
            out["metadata"] = self.metadata
        if self.rule_set:
            out["ruleSet"] = self.rule_set
        return out

    @property
    def cache_key(self) -> str:
        """Equal for the same registration (metadata included)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> Schema:
        """A schema from a registry answer."""
        return cls(
            answer["schema"],
            answer.get("schemaType") or "AVRO",
            tuple(
                SchemaReference(r["name"], r["subject"], int(r["version"]))
                for r in answer.get("references") or ()
            ),
            answer.get("metadata"),
            answer.get("ruleSet"),
        )


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as registered: its global ``schema_id``, and ``subject`` / ``version`` when
    known."""

    schema_id: int
    schema: Schema
    subject: str | None = None
    version: int | None = None
    guid: str | None = None

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> RegisteredSchema:
        """A registered schema from a registry answer."""
        return cls(
            int(answer["id"]),
            Schema.from_answer(answer),
            answer.get("subject"),
            answer.get("version"),
            answer.get("guid"),
        )


__all__ = [
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistryError",
    "SerializationError",
]
