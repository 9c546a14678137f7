"""The batch reader, and the read task both readers run on the executors.

The driver plans one :class:`~kclient.spark.offsets.OffsetRange` per partition (split by
``minPartitions`` / ``maxRecordsPerPartition``); each range is one Spark task, which fetches it
with a pooled SimpleConsumer and yields one Arrow batch per fetch, built from the columns.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kclient.errors import KafkaConnectionError
from kclient.observability import task_tracing
from kclient.protocol.error_codes import NotLeaderForPartitionError, OffsetOutOfRangeError
from kclient.simple import FetchRequest, OffsetRequest, SimpleConsumer

from . import pool
from .arrow import record_batch
from .offsets import OffsetRange, split_ranges
from .options import EARLIEST, LATEST, ReadOptions
from .planner import Planner

__all__ = ["KClientBatchReader", "read_range", "DataLossError", "plan_batch"]

DATA_LOSS_ADVICE = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you don't want your query to fail on such cases, set the source "
    'option "failOnDataLoss" to "false".'
)
#: Empty fetches in a row (the broker's long poll each) before a range counts as cut short.
MAX_EMPTY_FETCHES = 50


class DataLossError(RuntimeError):
    """Offsets a query planned to read are gone (retention, deleted or recreated topic)."""


def plan_batch(opts: ReadOptions) -> list[OffsetRange]:
    """The ranges of a batch read: startingOffsets to endingOffsets, split into tasks."""
    planner = Planner(opts)
    try:
        leaders = planner.partitions()
        start = planner.resolve(opts.starting, leaders, EARLIEST)
        end = planner.resolve(opts.ending, leaders, LATEST)
        ranges = [
            OffsetRange(t, p, start[(t, p)], end[(t, p)], leaders[(t, p)]) for t, p in leaders
        ]
    finally:
        planner.close()
    return split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)


class KClientBatchReader(DataSourceReader):
    """``spark.read.format("kclient")``: plans ranges on the driver, reads them in tasks."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(r) for r in plan_batch(self.opts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # Spark's stand-in when partitions() is empty
            return iter(())
        return read_range(partition.value, self.opts)


def _lost(r: OffsetRange, offset: int, what: str) -> DataLossError:
    return DataLossError(
        f"Cannot fetch offset {offset} of {r.topic}-{r.partition} (planned "
        f"{r.start} to {r.end}): {what}. {DATA_LOSS_ADVICE}"
    )


def _recover(
    consumer: SimpleConsumer, r: OffsetRange, offset: int, opts: ReadOptions
) -> int | None:
    """After offset ``offset`` went missing: where to continue (None: stop), or raise."""
    earliest = consumer.get_offsets_before(r.topic, r.partition, OffsetRequest.EARLIEST_TIME)[0]
    latest = consumer.get_offsets_before(r.topic, r.partition, OffsetRequest.LATEST_TIME)[0]
    if offset < earliest:
        what = f"the log now starts at {earliest}"
    else:
        what = f"the log now ends at {latest}"
    if opts.fail_on_data_loss:
        raise _lost(r, offset, what)
    if earliest > offset and earliest < r.end:
        return earliest
    return None


def _fetch_leader(r: OffsetRange, opts: ReadOptions, leader: str, exc: Exception) -> str:
    """The broker to fetch from after ``exc`` (leader moved or connection lost)."""
    pool.drop_consumer(leader, opts.consumer_kwargs())
    info = getattr(exc, "leader", None)
    if info is not None:
        return f"{info.host}:{info.port}"
    planner = Planner(opts)
    try:
        return planner.leaders([(r.topic, r.partition)])[(r.topic, r.partition)] or leader
    finally:
        planner.close()


def read_range(r: OffsetRange, opts: ReadOptions) -> Iterator[pa.RecordBatch]:
    """Fetch ``r`` and yield Arrow batches of the read schema (one per fetch); a ``receive``
    span per task when the executor traces."""
    tracing = task_tracing(opts.bootstrap)
    if tracing is None:
        yield from _read_range(r, opts)
        return
    with tracing.task(
        "receive", r.topic, r.partition, **{"messaging.kafka.offset": r.start}
    ) as done:
        n = 0
        for batch in _read_range(r, opts):
            n += batch.num_rows
            yield batch
        done["count"] = n


def _read_range(r: OffsetRange, opts: ReadOptions) -> Iterator[pa.RecordBatch]:
    kwargs: dict[str, Any] = opts.consumer_kwargs()
    leader = r.leader or opts.bootstrap.split(",")[0].strip()
    offset, empty, retries = r.start, 0, 0
    while offset < r.end:
        consumer = pool.consumer(leader, kwargs)
        try:
            cols = consumer.fetch_columns(
                FetchRequest(r.topic, r.partition, offset, opts.fetch_size), end_offset=r.end
            )
        except OffsetOutOfRangeError:
            resumed = _recover(consumer, r, offset, opts)
            if resumed is None:
                return
            offset = resumed
            continue
        except (NotLeaderForPartitionError, KafkaConnectionError) as exc:
            retries += 1
            if retries > 3:
                raise
            leader = _fetch_leader(r, opts, leader, exc)
            time.sleep(0.1 * retries)
            continue
        if len(cols):
            empty = 0
            yield record_batch(cols, r.topic, r.partition, opts.include_headers)
        elif cols.next_offset <= offset:
            empty += 1
            if 0 <= cols.high_watermark <= offset or empty > MAX_EMPTY_FETCHES:
                if opts.fail_on_data_loss:
                    raise _lost(r, offset, f"the log ends at {cols.high_watermark}")
                return
        if cols.error is not None:
            raise cols.error
        offset = max(offset, cols.next_offset)
