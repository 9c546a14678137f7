"""A Confluent-compatible Schema Registry served by the mini-broker (``MiniBroker(
schema_registry=True)``, ``kclient broker --schema-registry PORT``), its state in the
compacted ``_schemas`` topic."""

from .server import TOPIC, RegistryServer
from .store import RegistryError, SchemaStore

__all__ = ["TOPIC", "RegistryError", "RegistryServer", "SchemaStore"]
