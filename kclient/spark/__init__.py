"""PySpark integration: the ``kclient`` data source and ``foreach_partition_writer``.

::

    pip install kclient[spark]
    spark.read.format("kclient").option("kafka.bootstrap.servers", "b:9092")
         .option("subscribe", "events").load()

Same options and rows as Spark's ``format("kafka")``, no JVM jars.  See docs/spark.md.
"""

from .foreach import foreach_partition_writer
from .source import KClientDataSource, register

DefaultSource = KClientDataSource

__all__ = ["KClientDataSource", "DefaultSource", "register", "foreach_partition_writer"]
