"""The sink: Arrow batch and stream writers (at-least-once) over a pooled kclient Producer.

Rows follow Spark's Kafka sink: ``value`` (string or binary, required), optional ``key``,
``topic`` (the ``topic`` option wins over the column), ``partition`` and ``headers``
(array<struct<key:string,value:binary>>).  Each task queues its rows on the worker's cached
async Producer and flushes before it reports success; any undelivered message makes ``flush``
raise, so the task fails and Spark retries it (a retry may write rows twice: at-least-once).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from kclient.producer import Producer, ProducerData

from . import pool
from .options import WriteOptions

__all__ = [
    "KClientArrowWriter",
    "KClientStreamArrowWriter",
    "SentMessages",
    "send_arrow",
    "send_batch",
    "validate_write_schema",
]


@dataclass
class SentMessages(WriterCommitMessage):
    """What one task reports: how many messages it delivered."""

    count: int


def _is_headers(t: DataType) -> bool:
    if not isinstance(t, ArrayType) or not isinstance(t.elementType, StructType):
        return False
    fields = [(f.name, type(f.dataType)) for f in t.elementType.fields]
    return fields == [("key", StringType), ("value", BinaryType)]


def validate_write_schema(schema: StructType, topic_option: str | None) -> None:
    """Reject a DataFrame Spark's Kafka sink would reject, with its messages."""
    types = {f.name.lower(): f.dataType for f in schema.fields}
    if "topic" not in types and not topic_option:
        raise ValueError(
            "topic option required when no 'topic' attribute is present. Use the "
            "topic option for setting a topic."
        )
    if "topic" in types and not isinstance(types["topic"], StringType):
        raise ValueError("Topic type must be a String")
    if "value" not in types:
        raise ValueError("Required attribute 'value' not found")
    for name in ("value", "key"):
        if name in types and not isinstance(types[name], (StringType, BinaryType)):
            raise ValueError(f"{name} attribute type must be a String or Binary")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise ValueError("partition attribute type must be an Int")
    if "headers" in types and not _is_headers(types["headers"]):
        raise ValueError("headers attribute type must be an array<struct<key:string,value:binary>>")


def _column(batch: pa.RecordBatch, names: dict[str, int], name: str) -> pa.Array | None:
    i = names.get(name)
    return None if i is None else batch.column(i)


def _bytes(col: pa.Array | None) -> list[Any] | None:
    """A string or binary column as a list of bytes (None for nulls)."""
    if col is None:
        return None
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        col = col.cast(pa.binary())
    return col.to_pylist()


def _topics(col: pa.Array | None, default: str | None) -> str | list[Any]:
    """The one topic of the batch, or a topic per row."""
    if default:
        return default
    assert col is not None  # validate_write_schema saw to it
    if col.null_count:
        raise ValueError(
            "null topic present in the data. Use the topic option for setting a default topic."
        )
    import pyarrow.compute as pc  # here: the driver-side planner processes never need it

    unique = pc.unique(col)
    return str(unique[0].as_py()) if len(unique) == 1 else col.to_pylist()


def send_batch(producer: Producer, batch: pa.RecordBatch, default_topic: str | None) -> None:
    """Queue every row of ``batch``: plain values of one topic as they are, others as one
    ProducerData per row."""
    names = {n.lower(): i for i, n in enumerate(batch.schema.names)}
    values = _bytes(_column(batch, names, "value")) or []
    key_col = _column(batch, names, "key")
    keys = _bytes(key_col) if key_col is not None and key_col.null_count < len(key_col) else None
    topics = _topics(_column(batch, names, "topic"), default_topic)
    parts_col, hdrs_col = _column(batch, names, "partition"), _column(batch, names, "headers")
    parts = (
        parts_col.to_pylist()
        if parts_col is not None and parts_col.null_count < len(parts_col)
        else None
    )
    headers = (
        hdrs_col.to_pylist()
        if hdrs_col is not None and hdrs_col.null_count < len(hdrs_col)
        else None
    )
    if isinstance(topics, str) and keys is None and parts is None and not headers:
        producer.send_values(topics, values)
    else:
        producer.send(_messages(values, keys, topics, parts, headers))


def _messages(
    values: list[Any],
    keys: list[Any] | None,
    topics: str | list[Any],
    parts: list[Any] | None,
    headers: list[Any] | None,
) -> list[ProducerData]:
    """One ProducerData per row."""
    n = len(values)
    topic_of = (lambda i: topics) if isinstance(topics, str) else topics.__getitem__
    out = []
    for i in range(n):
        hs = headers[i] if headers else None
        out.append(
            ProducerData(
                topic_of(i),
                values[i],
                None if keys is None else keys[i],
                None if parts is None else parts[i],
                headers=[(h["key"], h["value"]) for h in hs] if hs else None,
            )
        )
    return out


def send_arrow(batches: Iterable[pa.RecordBatch], opts: WriteOptions) -> int:
    """Send every row of ``batches``, flush, and return the count; raises when any message
    was not delivered (``FailedToSendMessageError``)."""
    producer = pool.producer(opts.producer_config())
    tracing = producer._tracing  # a span per task when the executor traces
    if tracing is None:
        return _send_all(producer, batches, opts)
    with tracing.task("send", opts.topic) as done:
        done["count"] = _send_all(producer, batches, opts)
    return int(done["count"])


def _send_all(producer: Producer, batches: Iterable[pa.RecordBatch], opts: WriteOptions) -> int:
    count = 0
    for batch in batches:
        if batch.num_rows:
            send_batch(producer, batch, opts.topic)
            count += batch.num_rows
    producer.flush()
    return count


class KClientArrowWriter(DataSourceArrowWriter):
    """``df.write.format("kclient")``: each task sends its Arrow batches, then flushes."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SentMessages:
        return SentMessages(send_arrow(iterator, self.opts))


class KClientStreamArrowWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("kclient")``: at-least-once, like Spark's Kafka sink.

    The exactly-once variant (``exactlyOnce=true``) is :mod:`kclient.spark.exactly_once`.
    """

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SentMessages:
        return SentMessages(send_arrow(iterator, self.opts))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: every task flushed its messages before reporting."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: at-least-once writes are not transactional."""
