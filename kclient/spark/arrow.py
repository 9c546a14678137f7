"""The row schema of Spark's Kafka source, and Arrow record batches built from fetch columns.

Spark checks that a reader's batches have exactly the Arrow schema of the declared Spark
schema, so the schema is derived with PySpark's own ``to_arrow_schema`` and every batch is built
against it.  Columns come straight from :class:`~kclient.simple.MessageColumns` lists: no tuple or
Row per message.
"""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kclient.simple import MessageColumns

__all__ = ["HEADERS_TYPE", "kafka_schema", "arrow_schema", "record_batch", "SCHEMA_DDL"]

#: Spark's ``KafkaRecordToRowConverter.kafkaSchema`` as DDL (the reference for the tests).
SCHEMA_DDL = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, "
    "timestamp TIMESTAMP, timestampType INT"
)
HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def kafka_schema(include_headers: bool = False) -> StructType:
    """The read schema: key, value, topic, partition, offset, timestamp, timestampType[,
    headers], every field nullable, as Spark's Kafka source declares it."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


@lru_cache(maxsize=4)
def arrow_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema Spark expects of the read schema's batches."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(kafka_schema(include_headers), timezone="UTC")


def _timestamps(ms: list[int]) -> pa.Array:
    """Milliseconds as UTC microsecond timestamps; -1 (message format v0) as null."""
    import pyarrow.compute as pc  # here: the driver-side planner processes never need it

    arr = pa.array(ms, pa.int64())
    if len(arr) and pc.min(arr).as_py() < 0:
        arr = pc.if_else(pc.less(arr, 0), pa.scalar(None, pa.int64()), arr)
    return pc.multiply(arr, 1000).cast(pa.timestamp("us", tz="UTC"))


def _headers(cols: MessageColumns, typ: pa.ListType) -> pa.Array:
    """Each message's headers as list<struct<key, value>> (an empty list when it has none)."""
    n = len(cols)
    if cols.headers is None:
        empty = pa.array([], typ.value_type)
        return pa.ListArray.from_arrays(pa.array([0] * (n + 1), pa.int32()), empty, type=typ)
    rows = [[{"key": k, "value": v} for k, v in h] if h else [] for h in cols.headers]
    return pa.array(rows, typ)


def record_batch(
    cols: MessageColumns, topic: str, partition: int, include_headers: bool = False
) -> pa.RecordBatch:
    """One Arrow batch of the read schema from one fetch's columns."""
    schema = arrow_schema(include_headers)
    n = len(cols)
    keys = pa.array(cols.keys, pa.binary()) if cols.keys is not None else pa.nulls(n, pa.binary())
    arrays = [
        keys,
        pa.array(cols.values, pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.array(cols.offsets, pa.int64()),
        _timestamps(cols.timestamps),
        pa.array(cols.timestamp_types, pa.int32()),
    ]
    if include_headers:
        arrays.append(_headers(cols, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
