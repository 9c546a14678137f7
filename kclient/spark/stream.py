"""The streaming reader: micro-batches of offset ranges, checkpointed as Spark's offset JSON.

Its planning methods run in a long-lived Python process beside the driver; ``read`` runs in the
tasks (:func:`~kclient.spark.reader.read_range`).  Offsets are ``{"topic": {"0": next}}``, the
JSON Spark's Kafka source writes, so Spark's checkpoint holds the exact position and a restart
reads exactly what follows it.  Partitions that appear while the query runs (a new topic
matching ``subscribePattern``, partitions added to a topic) are read from their earliest offset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kclient.errors import KafkaError
from kclient.simple import SimpleConsumer

from .offsets import TopicPartition, from_json_dict, rate_limit, split_ranges, to_json_dict
from .options import EARLIEST, LATEST, ReadOptions
from .planner import Planner
from .reader import DataLossError, read_range

__all__ = ["KClientStreamReader"]

log = logging.getLogger(__name__)
Offsets = dict[str, dict[str, int]]


class KClientStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kclient")``."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._planner: Planner | None = None
        self._target: dict[TopicPartition, int] | None = None  # availableNow's end
        self._latest: dict[TopicPartition, int] = {}
        self._leaders: dict[TopicPartition, str] = {}
        self._last_trigger: float | None = None  # set by the first latestOffset
        self._group_client: SimpleConsumer | None = None  # commitOffsetsToGroup's
        self._group_offsets: Offsets | None = None  # what the group was last given

    @property
    def planner(self) -> Planner:
        if self._planner is None:
            self._planner = Planner(self.opts)
        return self._planner

    def __getstate__(self) -> dict[str, object]:
        """Tasks get the options only (the planner's connections stay on the driver side)."""
        return {
            "opts": self.opts,
            "_planner": None,
            "_target": None,
            "_latest": {},
            "_leaders": {},
            "_last_trigger": None,
            "_group_client": None,
            "_group_offsets": None,
        }

    # -- offsets ------------------------------------------------------------------------------
    def _current(self) -> dict[TopicPartition, int]:
        """Every subscribed partition's latest offset (leaders remembered for planning)."""
        self._leaders = self.planner.partitions()
        self._latest = self.planner.offsets_at(self._leaders, LATEST)
        return self._latest

    def initialOffset(self) -> Offsets:
        leaders = self.planner.partitions()
        self._leaders = leaders
        return to_json_dict(self.planner.resolve(self.opts.starting, leaders, LATEST))

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = dict(self._current())

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> Offsets | None:
        return to_json_dict(self._latest) if self._latest else None

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        """The end of the next micro-batch: the latest offsets, capped by availableNow's
        target and the read limit; ``start`` again when minOffsetsPerTrigger says wait."""
        self._commit_to_group(start)  # Spark asks from a batch's end once it committed
        begin = from_json_dict(start)
        latest = dict(self._current())
        if self._target is not None:
            latest = {
                tp: min(off, self._target[tp]) for tp, off in latest.items() if tp in self._target
            }
        for tp in latest:
            if tp not in begin:  # a partition added since the last batch: from its start
                begin[tp] = self.planner.offset_at(tp, self._leaders.get(tp, ""), EARLIEST)
        for tp, off in begin.items():
            if tp in latest and latest[tp] < off:
                self._behind(tp, off, latest[tp])  # raises, or the next batch starts there
        latest.update({tp: off for tp, off in begin.items() if tp not in latest})
        if self._should_wait(begin, latest):
            return start
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        self._last_trigger = time.monotonic()
        return to_json_dict(latest)

    def _behind(self, tp: TopicPartition, off: int, latest: int) -> None:
        """The log ends before a checkpointed offset: the topic was truncated or recreated."""
        what = (
            f"{tp[0]}-{tp[1]}: checkpointed offset {off} is past the log end {latest} "
            "(topic deleted and recreated, or data lost)"
        )
        if self.opts.fail_on_data_loss:
            raise DataLossError(
                what + '; set the source option "failOnDataLoss" to "false" '
                "to continue from the log end"
            )
        log.warning("%s; continuing", what)

    def _should_wait(
        self, begin: dict[TopicPartition, int], end: dict[TopicPartition, int]
    ) -> bool:
        """minOffsetsPerTrigger: wait for more records, but not past maxTriggerDelay."""
        need = self.opts.min_offsets_per_trigger
        if not need or self._target is not None:
            return False
        if self._last_trigger is None:
            self._last_trigger = time.monotonic()
        backlog = sum(max(0, off - begin.get(tp, off)) for tp, off in end.items())
        waited_ms = (time.monotonic() - self._last_trigger) * 1000
        return backlog < need and waited_ms < self.opts.max_trigger_delay_ms

    # -- tasks --------------------------------------------------------------------------------
    def partitions(self, start: Offsets, end: Offsets) -> list[InputPartition]:
        begin, stop = from_json_dict(start), from_json_dict(end)
        leaders = dict(self._leaders)
        missing = [tp for tp in stop if tp not in leaders]
        if missing:
            leaders.update(self.planner.leaders(missing))
        ranges = self.planner.ranges(begin, stop, leaders, EARLIEST)
        pieces = split_ranges(ranges, self.opts.min_partitions, None)
        return [InputPartition(r) for r in pieces]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:
            return iter(())
        return read_range(partition.value, self.opts)

    def commit(self, end: Offsets) -> None:
        """A micro-batch ending at ``end`` is done: with commitOffsetsToGroup, tell the group
        (the position itself lives in Spark's checkpoint)."""
        self._commit_to_group(end)

    def _commit_to_group(self, end: Offsets) -> None:
        """Commit ``end`` to ``kafka.group.id`` for Kafka's lag tools; never fails the query."""
        if self.opts.commit_group is None or end == self._group_offsets:
            return
        offsets = {tp: off for tp, off in from_json_dict(end).items() if off >= 0}
        try:
            if self._group_client is None:
                self._group_client = self.planner.group_client()
            self._group_client.commit_offsets(self.opts.commit_group, offsets)
            self._group_offsets = end
        except KafkaError as exc:  # e.g. the group has live members of another application
            log.warning(
                "commitOffsetsToGroup: committing to group %r failed (the query goes "
                "on; its checkpoint holds the position): %s",
                self.opts.commit_group,
                exc,
            )
            if self._group_client is not None:
                self._group_client.close()
                self._group_client = None

    def stop(self) -> None:
        if self._group_client is not None:
            self._group_client.close()
            self._group_client = None
        if self._planner is not None:
            self._planner.close()
            self._planner = None
