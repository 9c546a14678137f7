"""The ``kclient`` data source: Spark's Kafka connector in pure Python over kclient.

``spark.read`` / ``readStream`` / ``write`` / ``writeStream`` ``.format("kclient")`` take the
options and give the rows of Spark's ``format("kafka")``.  PySpark finds it by itself through the
top-level module ``pyspark_kclient`` (installed with ``pip install kclient[spark]``);
:func:`register` does it explicitly.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from .arrow import kafka_schema
from .exactly_once import KClientExactlyOnceWriter
from .options import lower_keys, parse_read_options, parse_write_options
from .reader import KClientBatchReader
from .registry import (
    RegistryFormat,
    TypedArrowWriter,
    TypedBatchReader,
    TypedStreamReader,
    TypedStreamWriter,
    binary_value,
    registry_format,
    typed_schema,
)
from .stream import KClientStreamReader
from .writer import KClientArrowWriter, KClientStreamArrowWriter, validate_write_schema

__all__ = ["KClientDataSource", "register", "OVERWRITE_REFUSED"]

#: Spark's Kafka sink refuses Overwrite in these words; PySpark lets a Python data source write
#: in Append or Overwrite mode only, so Append is the one left (docs/spark.md)
OVERWRITE_REFUSED = (
    "Save mode Overwrite not allowed for Kafka. Allowed save mode for the "
    'kclient format is Append: use .mode("append") (Kafka topics are only '
    "appended to)"
)


class KClientDataSource(DataSource):
    """Batch and streaming reads and writes of Kafka topics through kclient."""

    @classmethod
    def name(cls) -> str:
        return "kclient"

    def schema(self) -> StructType:
        opts = lower_keys(self.options)
        base = kafka_schema(opts.get("includeheaders", "false").strip().lower() == "true")
        fmt = self._registry(opts.get("subscribe"))
        return base if fmt is None else typed_schema(base, fmt)

    def _registry(self, topic: str | None) -> RegistryFormat | None:
        """``valueFormat`` settings (resolved once: the latest schema is asked for here)."""
        if "_fmt" not in self.__dict__:
            one = topic.strip() if topic and "," not in topic else None
            self.__dict__["_fmt"] = registry_format(self.options, one)
        found: RegistryFormat | None = self.__dict__["_fmt"]
        return found

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = parse_read_options(self.options, streaming=False)
        fmt = self._registry(lower_keys(self.options).get("subscribe"))
        return KClientBatchReader(opts) if fmt is None else TypedBatchReader(opts, fmt)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = parse_read_options(self.options, streaming=True)
        fmt = self._registry(lower_keys(self.options).get("subscribe"))
        return KClientStreamReader(opts) if fmt is None else TypedStreamReader(opts, fmt)

    def _write_options(self, schema: StructType, overwrite: bool) -> Any:
        if overwrite:
            raise ValueError(OVERWRITE_REFUSED)
        opts = parse_write_options(self.options)
        validate_write_schema(binary_value(schema), opts.topic)
        return opts

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        opts = self._write_options(schema, overwrite)
        if opts.exactly_once:
            raise ValueError(
                "exactlyOnce=true is for writeStream (micro-batch ids key its "
                "transactions); df.write is at-least-once"
            )
        fmt = self._registry(opts.topic)
        return KClientArrowWriter(opts) if fmt is None else TypedArrowWriter(opts, fmt)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        opts = self._write_options(schema, False)
        fmt = self._registry(opts.topic)
        if opts.exactly_once:
            if fmt is not None:
                raise ValueError(
                    "valueFormat with exactlyOnce=true is not supported yet: "
                    "encode the value first (or write at-least-once)"
                )
            return KClientExactlyOnceWriter(opts)
        return KClientStreamArrowWriter(opts) if fmt is None else TypedStreamWriter(opts, fmt)


def register(spark: Any) -> None:
    """Register the ``kclient`` format with ``spark`` (a SparkSession).

    Not needed when the package is installed where the Python workers run: PySpark then finds
    ``pyspark_kclient`` by itself.
    """
    spark.dataSource.register(KClientDataSource)
