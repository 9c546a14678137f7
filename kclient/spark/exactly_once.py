"""The exactly-once streaming sink: a two-phase commit over Kafka transactions, as Flink's.

Phase one, in each task: a transactional Producer with ``transactional.id`` =
``<prefix>-<task partition>`` (prefix: ``transactionalIdPrefix``, default from the query id,
which a checkpoint keeps) runs ``init_transactions()`` - fencing an earlier attempt of the same
task and aborting what it left open - writes its rows, flushes, records "prepared <batch> as
<producer id>:<epoch>" for its id, and reports the same in its commit message without
committing.  Phase two, on the driver: ``commit(messages, batchId)`` first records the decision
"batch committed" (one offset commit, the sink's group), then resumes and commits every task's
transaction.  ``abort`` aborts them, unless the decision was already recorded.

A restart replays the batch Spark's commit log lacks.  Its tasks read the decision: a batch
decided committed is not written again; each task instead commits its predecessor's prepared
transaction (a commit already done is a no-op at the coordinator) - the recovery of a batch left
half-committed.  A batch not decided is written again after ``init_transactions()`` aborted the
old attempt.  The records are group offsets (offset = batch id + 1) of the sink's groups
``<prefix>`` and ``<prefix>-<partition>``, keyed by partition 0 of the state topic.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from kclient.errors import KafkaError
from kclient.producer import Producer
from kclient.simple import SimpleConsumer

from .options import WriteOptions
from .writer import send_batch

__all__ = ["KClientExactlyOnceWriter", "PreparedTransaction", "SinkState"]

log = logging.getLogger(__name__)

#: transactions the driver commits at once (each one a Producer and a coordinator round trip)
_COMMIT_THREADS = 8


@dataclass
class PreparedTransaction(WriterCommitMessage):
    """One task's prepared transaction (``transactional_id`` None: the task had no rows;
    ``skipped``: the batch was already decided committed, nothing was written)."""

    transactional_id: str | None
    producer_id: int
    epoch: int
    batch_id: int
    count: int
    prefix: str
    query: str
    skipped: bool = False


class SinkState:
    """The sink's commit records: group offsets (batch id + 1) keyed by the state topic."""

    def __init__(self, opts: WriteOptions) -> None:
        brokers = opts.producer_config()["metadata.broker.list"].split(",")
        host, port = brokers[0].strip().rsplit(":", 1)
        self.consumer = SimpleConsumer(
            host,
            int(port),
            client_id="kclient-spark-eos",
            security=opts.security.client_keys() or None,
        )
        assert opts.state_topic is not None  # parse_write_options saw to it
        self.key = (opts.state_topic, 0)

    def _read(self, group: str) -> tuple[int, str]:
        got = self.consumer.fetch_offsets(group, [self.key]).get(self.key)
        if got is None or got.offset < 0:
            return -1, ""
        return got.offset - 1, got.metadata

    def decided(self, prefix: str, query: str) -> int:
        """The last batch query ``query`` decided committed (-1: none; a decision of another
        query that used the same prefix, with its own batch ids, does not count)."""
        batch, meta = self._read(prefix)
        return batch if meta == f"committed:{query}" else -1

    def decide(self, prefix: str, query: str, batch_id: int) -> None:
        self.consumer.commit_offsets(prefix, {self.key: (batch_id + 1, f"committed:{query}")})

    def prepared(self, tid: str) -> tuple[int, int, int]:
        """(batch id, producer id, epoch) of the last transaction ``tid`` prepared."""
        batch, meta = self._read(tid)
        if batch < 0 or ":" not in meta:
            return -1, -1, -1
        pid, epoch = meta.split(":", 1)
        return batch, int(pid), int(epoch)

    def prepare(self, tid: str, batch_id: int, pid: int, epoch: int) -> None:
        self.consumer.commit_offsets(tid, {self.key: (batch_id + 1, f"{pid}:{epoch}")})

    def close(self) -> None:
        self.consumer.close()


def _task_context() -> tuple[int, int, str]:
    """(task partition, micro-batch id, query id) from Spark's task context."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    batch = tc.getLocalProperty("streaming.sql.batchId") if tc else None
    query = tc.getLocalProperty("sql.streaming.queryId") if tc else None
    if tc is None or batch is None or query is None:
        raise RuntimeError(
            "exactlyOnce=true works in streaming queries only (no micro-batch "
            "id in the task context)"
        )
    return tc.partitionId(), int(batch), query


def _task_hook(how: str) -> None:
    """Test hook: the first attempt of task 0 dies (``kill``: no abort), takes its executor's
    JVM with it (``killExecutor``: SIGKILL) or fails here."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    if tc is None or tc.partitionId() != 0 or tc.attemptNumber() != 0:
        return
    if how == "kill":
        os._exit(17)
    if how == "killExecutor":
        _kill_jvm()
    raise RuntimeError(f"exactlyOnce.failTask={how}: test hook")


def _kill_jvm() -> None:
    """Test hook: SIGKILL the nearest ``java`` ancestor of this process: the driver's JVM from
    the driver's commit, the executor's from a task."""
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"java" in f.read().split(b"\0")[0]:
                os.kill(pid, signal.SIGKILL)
                os._exit(17)
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    raise RuntimeError("exactlyOnce.failCommit=kill: no JVM among this process's ancestors")


def end_transaction(config: dict[str, Any], tid: str, pid: int, epoch: int, commit: bool) -> None:
    """Resume ``tid``'s open transaction (``pid`` / ``epoch``) and commit or abort it."""
    producer = Producer({**config, "transactional.id": tid})
    try:
        producer.resume_transaction(pid, epoch)
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
    finally:
        producer.close(abort_transaction=False)


class KClientExactlyOnceWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("kclient").option("exactlyOnce", "true")``."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PreparedTransaction:
        partition, batch_id, query = _task_context()
        prefix = self.opts.txn_prefix or f"kclient-spark-{query}"
        tid = f"{prefix}-{partition}"
        state = SinkState(self.opts)
        try:
            if state.decided(prefix, query) >= batch_id:
                for _ in iterator:  # Spark expects the input consumed
                    pass
                self._recover(state, tid, batch_id)
                return PreparedTransaction(tid, -1, -1, batch_id, 0, prefix, query, skipped=True)
            return self._write(state, iterator, tid, batch_id, prefix, query)
        finally:
            state.close()

    def _recover(self, state: SinkState, tid: str, batch_id: int) -> None:
        """Commit this task's transaction of a batch decided committed (a restart's replay)."""
        batch, pid, epoch = state.prepared(tid)
        if batch != batch_id:
            return  # the task had no rows in that batch
        log.info(
            "kclient exactly-once sink: batch %d was decided committed; committing "
            "transaction %r (producer %d epoch %d) again",
            batch_id,
            tid,
            pid,
            epoch,
        )
        end_transaction(self.opts.producer_config(), tid, pid, epoch, commit=True)

    def _write(
        self,
        state: SinkState,
        iterator: Iterator[pa.RecordBatch],
        tid: str,
        batch_id: int,
        prefix: str,
        query: str,
    ) -> PreparedTransaction:
        """Phase one: write every row in a transaction, flush, record it prepared."""
        batches = (b for b in iterator if b.num_rows)
        first = next(batches, None)
        if first is None:
            return PreparedTransaction(None, -1, -1, batch_id, 0, prefix, query)
        producer = Producer({**self.opts.producer_config(), "transactional.id": tid})
        try:
            producer.init_transactions()  # fences and aborts an earlier attempt
            producer.begin_transaction()
            count = 0
            for b in itertools.chain((first,), batches):
                send_batch(producer, b, self.opts.topic)
                count += b.num_rows
            producer.flush()
            if self.opts.fail_task:
                _task_hook(self.opts.fail_task)
            pid, epoch = producer.producer_id_and_epoch
            state.prepare(tid, batch_id, pid, epoch)
        except BaseException:
            producer.close()  # aborts the open transaction
            raise
        producer.close(abort_transaction=False)  # left open for the driver's commit
        return PreparedTransaction(tid, pid, epoch, batch_id, count, prefix, query)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Phase two: record the decision, then commit every task's transaction."""
        prepared = _prepared(messages)
        if not prepared:
            return
        hook = self.opts.fail_commit
        if hook == "before":
            raise RuntimeError("exactlyOnce.failCommit=before: test hook")
        state = SinkState(self.opts)
        try:
            state.decide(prepared[0].prefix, prepared[0].query, batchId)
        finally:
            state.close()
        if hook:
            for i, m in enumerate(prepared):  # one by one, to stop between two commits
                if hook == f"after:{i}":
                    raise RuntimeError(f"exactlyOnce.failCommit={hook}: test hook")
                if hook == f"kill:{i}":
                    _kill_jvm()
                self._end(m, commit=True)
            return
        with ThreadPoolExecutor(min(len(prepared), _COMMIT_THREADS)) as pool:
            for done in [pool.submit(self._end, m, True) for m in prepared]:
                done.result()  # the first failure fails the commit

    def _end(self, m: PreparedTransaction, commit: bool) -> None:
        assert m.transactional_id is not None
        end_transaction(
            self.opts.producer_config(), m.transactional_id, m.producer_id, m.epoch, commit=commit
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Abort every task's transaction - unless the batch was decided committed, when the
        restart's replay commits them instead."""
        prepared = _prepared(messages)
        if not prepared:
            return
        state = SinkState(self.opts)
        try:
            if state.decided(prepared[0].prefix, prepared[0].query) >= batchId:
                log.warning(
                    "kclient exactly-once sink: batch %d was decided committed; its "
                    "transactions are left for the restart to commit",
                    batchId,
                )
                return
        finally:
            state.close()
        for m in prepared:
            assert m.transactional_id is not None
            try:
                end_transaction(
                    self.opts.producer_config(),
                    m.transactional_id,
                    m.producer_id,
                    m.epoch,
                    commit=False,
                )
            except KafkaError as exc:  # fenced by a retry, or timed out: aborted anyway
                log.warning("aborting %r: %s", m.transactional_id, exc)


def _prepared(messages: list[Any]) -> list[PreparedTransaction]:
    """The messages of tasks that wrote a transaction."""
    return [
        m
        for m in messages
        if isinstance(m, PreparedTransaction) and m.transactional_id is not None and not m.skipped
    ]
