"""Registry-encoded values as typed columns: ``valueFormat=avro`` with
``schema.registry.url`` (and other ``schema.registry.*`` client settings) makes the ``value``
column of a read a struct of the Avro schema's Spark types, decoded from the Confluent wire
format in the tasks, and makes a write encode its struct ``value`` column the same way.

The schema is the subject's latest version (``valueSubject``, default ``<topic>-value``) or
``valueSchema``, resolved once on the driver; reads resolve every writer schema to it (Avro
schema resolution), so a topic with several versions reads as one typed DataFrame.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .options import lower_keys
from .reader import KClientBatchReader
from .stream import KClientStreamReader
from .writer import KClientArrowWriter, KClientStreamArrowWriter, SentMessages, send_arrow

__all__ = [
    "RegistryFormat",
    "TypedArrowWriter",
    "TypedBatchReader",
    "TypedStreamReader",
    "TypedStreamWriter",
    "avro_to_spark",
    "binary_value",
    "decode_values",
    "encode_values",
    "registry_format",
    "typed_schema",
]

PRIMITIVE: dict[str, DataType] = {
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "string": StringType(),
    "bytes": BinaryType(),
}


@dataclass(frozen=True)
class RegistryFormat:
    """What the tasks need: the client settings and the schema values are typed by."""

    client_conf: tuple[tuple[str, str], ...]
    schema: str
    subject: str

    def client(self) -> Any:
        """This process's registry client for these settings (one per executor)."""
        key = self.client_conf
        found = _CLIENTS.get(key)
        if found is None:
            from kclient.schema_registry import SchemaRegistryClient

            found = _CLIENTS[key] = SchemaRegistryClient(dict(key))
        return found


_CLIENTS: dict[Any, Any] = {}
_SERDES: dict[Any, Any] = {}


def registry_format(options: Mapping[str, str], topic: str | None) -> RegistryFormat | None:
    """The registry settings of a read or write, or None without ``valueFormat``."""
    opts = lower_keys(options)
    fmt = opts.get("valueformat")
    if not fmt:
        return None
    if fmt.strip().lower() != "avro":
        raise ValueError(
            f"valueFormat {fmt!r}: typed columns are made for avro (decode JSON "
            "Schema and Protobuf values with kclient.schema_registry in a UDF)"
        )
    conf = {
        k[len("schema.registry.") :]: v for k, v in opts.items() if k.startswith("schema.registry.")
    }
    if not conf.get("url"):
        raise ValueError("valueFormat=avro needs the schema.registry.url option")
    subject = opts.get("valuesubject") or (f"{topic}-value" if topic else "")
    schema = opts.get("valueschema")
    if schema is None:
        if not subject:
            raise ValueError(
                "valueFormat=avro: give valueSubject (or valueSchema) when the "
                "topic is not one name"
            )
        fmt_ = RegistryFormat(tuple(sorted(conf.items())), "", subject)
        schema = fmt_.client().get_latest_version(subject).schema.schema_str
    return RegistryFormat(tuple(sorted(conf.items())), schema, subject)


def _named(schema: Any, names: dict[str, Any]) -> Any:
    """A named reference as its definition (fastavro's parsed form names types once)."""
    return names.get(schema, schema) if isinstance(schema, str) else schema


def avro_to_spark(schema: Any, names: dict[str, Any] | None = None) -> tuple[DataType, bool]:
    """(Spark type, nullable) of a parsed Avro schema."""
    names = {} if names is None else names
    schema = _named(schema, names)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) != 1:
            raise ValueError(f"Avro union {schema} has no Spark type (only [null, T] unions)")
        return avro_to_spark(branches[0], names)[0], True
    if isinstance(schema, str):
        if schema not in PRIMITIVE:
            raise ValueError(f"Avro type {schema!r} has no Spark type")
        return PRIMITIVE[schema], False
    kind, logical = schema.get("type"), schema.get("logicalType")
    if "name" in schema:
        names[schema["name"]] = schema
    if logical == "date":
        return DateType(), False
    if logical in ("timestamp-millis", "timestamp-micros"):
        return TimestampType(), False
    if logical == "decimal":
        return DecimalType(schema.get("precision", 10), schema.get("scale", 0)), False
    if kind == "record":
        fields = []
        for f in schema["fields"]:
            dtype, nullable = avro_to_spark(f["type"], names)
            fields.append(StructField(f["name"], dtype, nullable))
        return StructType(fields), False
    if kind == "array":
        dtype, nullable = avro_to_spark(schema["items"], names)
        return ArrayType(dtype, nullable), False
    if kind == "map":
        dtype, nullable = avro_to_spark(schema["values"], names)
        return MapType(StringType(), dtype, nullable), False
    if kind == "enum":
        return StringType(), False
    if kind == "fixed":
        return BinaryType(), False
    return avro_to_spark(kind, names)


def _parsed(fmt: RegistryFormat) -> Any:
    import fastavro

    return fastavro.parse_schema(json.loads(fmt.schema))


def typed_schema(base: StructType, fmt: RegistryFormat) -> StructType:
    """``base`` (the Kafka row schema) with ``value`` typed by the schema."""
    dtype, _ = avro_to_spark(_parsed(fmt))
    return StructType(
        [StructField("value", dtype, True) if f.name == "value" else f for f in base.fields]
    )


def _value_type(fmt: RegistryFormat) -> pa.DataType:
    """The Arrow type Spark expects of the typed value column."""
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(avro_to_spark(_parsed(fmt))[0], timezone="UTC")


def _serde(fmt: RegistryFormat, kind: str) -> Any:
    """This executor's (de)serializer and Arrow type for ``fmt`` (made once)."""
    key = (fmt, kind)
    found = _SERDES.get(key)
    if found is None:
        from kclient.schema_registry.avro import AvroDeserializer, AvroSerializer

        serde: Any
        if kind == "read":
            serde = AvroDeserializer(fmt.client(), fmt.schema)
        else:
            serde = AvroSerializer(fmt.client(), fmt.schema)
        found = _SERDES[key] = (serde, _value_type(fmt))
    return found


def decode_values(
    batches: Iterator[pa.RecordBatch], fmt: RegistryFormat
) -> Iterator[pa.RecordBatch]:
    """Each batch with its binary value column decoded into the typed struct column."""
    from kclient.schema_registry import SerializationContext

    de, arrow_type = _serde(fmt, "read")
    for batch in batches:
        i = batch.schema.get_field_index("value")
        topics = batch.column(batch.schema.get_field_index("topic")).to_pylist()
        values = [
            None if v is None else de(v, SerializationContext(t))
            for v, t in zip(batch.column(i).to_pylist(), topics)
        ]
        column = pa.array(values, type=arrow_type)
        yield batch.set_column(i, pa.field("value", arrow_type), column)


def _maps_as_dicts(value: Any, dtype: DataType) -> Any:
    """A value from Arrow's ``to_pylist`` with its maps (lists of pairs there) as dicts."""
    if value is None:
        return None
    if isinstance(dtype, MapType):
        return {k: _maps_as_dicts(v, dtype.valueType) for k, v in value}
    if isinstance(dtype, ArrayType):
        return [_maps_as_dicts(v, dtype.elementType) for v in value]
    if isinstance(dtype, StructType):
        return {f.name: _maps_as_dicts(value.get(f.name), f.dataType) for f in dtype.fields}
    return value


def encode_values(
    batches: Iterator[pa.RecordBatch], fmt: RegistryFormat, topic: str | None
) -> Iterator[pa.RecordBatch]:
    """Each batch with its struct value column encoded into Confluent-framed Avro."""
    from kclient.schema_registry import SerializationContext

    ser, _ = _serde(fmt, "write")
    dtype = avro_to_spark(_parsed(fmt))[0]
    for batch in batches:
        i = batch.schema.get_field_index("value")
        t = batch.schema.get_field_index("topic")
        topics = batch.column(t).to_pylist() if t >= 0 else [topic] * batch.num_rows
        rows = [_maps_as_dicts(v, dtype) for v in batch.column(i).to_pylist()]
        values = [
            None if v is None else ser(v, SerializationContext(str(tp)))
            for v, tp in zip(rows, topics)
        ]
        yield batch.set_column(i, pa.field("value", pa.binary()), pa.array(values, pa.binary()))


def binary_value(schema: StructType) -> StructType:
    """``schema`` with a struct ``value`` seen as the binary it is encoded to (for the sink's
    schema checks)."""
    return StructType(
        [
            StructField("value", BinaryType(), f.nullable)
            if f.name == "value" and isinstance(f.dataType, StructType)
            else f
            for f in schema.fields
        ]
    )


class _Typed:
    """What the typed readers and writers add to the binary ones: the format."""

    opts: Any

    def __init__(self, opts: Any, fmt: RegistryFormat) -> None:
        super().__init__(opts)  # type: ignore[call-arg]  # the reader's or writer's
        self.fmt = fmt


class _Decoding(_Typed):
    """Reads decode each batch's values."""

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        return decode_values(iter(super().read(partition)), self.fmt)  # type: ignore[misc]


class _Encoding(_Typed):
    """Writes encode each batch's struct values before sending."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SentMessages:
        return SentMessages(
            send_arrow(encode_values(iterator, self.fmt, self.opts.topic), self.opts)
        )


class TypedBatchReader(_Decoding, KClientBatchReader):
    """The batch reader, its values decoded into typed columns."""


class TypedArrowWriter(_Encoding, KClientArrowWriter):
    """The batch writer, its struct values encoded first."""


class TypedStreamReader(_Decoding, KClientStreamReader):
    """The stream reader, its values decoded into typed columns."""

    def __getstate__(self) -> dict[str, object]:
        """The tasks' state, with the format."""
        return dict(super().__getstate__(), fmt=self.fmt)


class TypedStreamWriter(_Encoding, KClientStreamArrowWriter):
    """The at-least-once stream writer, its struct values encoded first."""
