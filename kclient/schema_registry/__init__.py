"""Schema Registry client and serdes: Avro, JSON Schema and Protobuf in the Confluent wire
format (docs/schema-registry.md).  Needs the ``schemaregistry`` extra (httpx, fastavro,
jsonschema, protobuf)."""

from .client import AsyncSchemaRegistryClient, SchemaRegistryClient
from .model import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistryError,
    SerializationError,
)
from .serde import (
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from .wire import MessageField, SerializationContext

__all__ = [
    "AsyncSchemaRegistryClient",
    "MessageField",
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SerializationContext",
    "SerializationError",
    "record_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]
