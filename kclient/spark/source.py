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
from .stream import KClientStreamReader
from .writer import KClientArrowWriter, KClientStreamArrowWriter, validate_write_schema

__all__ = ["KClientDataSource", "register"]


class KClientDataSource(DataSource):
    """Batch and streaming reads and writes of Kafka topics through kclient."""

    @classmethod
    def name(cls) -> str:
        return "kclient"

    def schema(self) -> StructType:
        opts = lower_keys(self.options)
        return kafka_schema(opts.get("includeheaders", "false").strip().lower() == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        return KClientBatchReader(parse_read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KClientStreamReader(parse_read_options(self.options, streaming=True))

    def _write_options(self, schema: StructType, overwrite: bool) -> Any:
        if overwrite:
            raise ValueError("the kclient sink appends only (as Spark's Kafka sink): use "
                             "mode('append')")
        opts = parse_write_options(self.options)
        validate_write_schema(schema, opts.topic)
        return opts

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        opts = self._write_options(schema, overwrite)
        if opts.exactly_once:
            raise ValueError("exactlyOnce=true is for writeStream (micro-batch ids key its "
                             "transactions); df.write is at-least-once")
        return KClientArrowWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        opts = self._write_options(schema, False)
        if opts.exactly_once:
            return KClientExactlyOnceWriter(opts)
        return KClientStreamArrowWriter(opts)


def register(spark: Any) -> None:
    """Register the ``kclient`` format with ``spark`` (a SparkSession).

    Not needed when the package is installed where the Python workers run: PySpark then finds
    ``pyspark_kclient`` by itself.
    """
    spark.dataSource.register(KClientDataSource)
