"""writeStream.format("kclient").option("exactlyOnce", "true"): read_committed readers see each
input row once, across aborts, task failures and a driver restart in the middle of a commit."""

import subprocess
import sys

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from tests.needs import not_applicable

FAILED = (Py4JJavaError, PySparkException)


def read(kafka, topic, committed=True):
    """Every value in ``topic`` as a read_committed (or read_uncommitted) SimpleConsumer sees."""
    from kclient.simple import SimpleConsumer

    host, port = kafka.bootstrap.split(":")
    level = "read_committed" if committed else "read_uncommitted"
    out = []
    with SimpleConsumer(host, int(port), isolation_level=level) as c:
        for p in sorted(kafka.broker.cluster.partitions(topic)):
            out.extend(mo.value for mo in c.iter_messages(topic, p, 0))
    return out


def copy(spark, kafka, src, dst, checkpoint, **options):
    """Run an availableNow copy of ``src`` to ``dst`` with the exactly-once sink; the query's
    exception (None when it succeeded)."""
    q = (
        spark.readStream.format("kclient")
        .options(**kafka.options(subscribe=src, startingOffsets="earliest"))
        .load()
        .select("key", "value")
        .writeStream.format("kclient")
        .options(**kafka.options(topic=dst, exactlyOnce="true", **options))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        q.awaitTermination(180)
    except FAILED:
        pass
    return q.exception()


def source(kafka, n=400):
    src, dst = kafka.topic(2), kafka.topic(2)
    kafka.produce(src, [b"m%d" % i for i in range(n)], keys=[b"k%d" % i for i in range(n)])
    return src, dst, sorted(b"m%d" % i for i in range(n))


def test_rows_are_written_once_in_committed_transactions(spark, kafka, tmp_path):
    """On transactions v2 (the mini-broker finalizes transaction.version 2, KIP-890): the
    driver's EndTxn v5 of each task's resumed transaction bumps that task's epoch."""
    coordinator = kafka.broker.txn_coordinator
    before = {m.transactional_id for m in coordinator.transactions()}
    src, dst, want = source(kafka)
    assert copy(spark, kafka, src, dst, tmp_path / "cp") is None
    ended = [
        m
        for m in coordinator.transactions()
        if m.transactional_id not in before and m.state.name == "COMPLETE_COMMIT"
    ]
    assert ended and all(m.client_version == 2 and m.producer_epoch >= 1 for m in ended), ended
    assert sorted(read(kafka, dst)) == want
    assert sorted(read(kafka, dst, committed=False)) == want  # nothing aborted either
    back = (
        spark.read.format("kclient")
        .options(**kafka.options(subscribe=dst, **{"kafka.isolation.level": "read_committed"}))
        .load()
    )
    assert sorted(bytes(r.value) for r in back.collect()) == want  # the kclient source too
    kafka.produce(src, [b"late"])
    assert copy(spark, kafka, src, dst, tmp_path / "cp") is None  # the next batch only
    assert sorted(read(kafka, dst)) == sorted(want + [b"late"])


def test_an_aborted_batch_is_invisible_and_a_restart_writes_it_once(spark, kafka, tmp_path):
    src, dst, want = source(kafka)
    assert copy(spark, kafka, src, dst, tmp_path / "cp", **{"exactlyOnce.failCommit": "before"})
    assert read(kafka, dst) == []  # aborted: invisible
    assert sorted(read(kafka, dst, committed=False)) == want  # though written
    assert copy(spark, kafka, src, dst, tmp_path / "cp") is None
    assert sorted(read(kafka, dst)) == want


@pytest.mark.parametrize("how", ["kill", "raise"])
def test_a_task_failing_mid_write_is_retried_without_duplicates(spark, kafka, tmp_path, how):
    src, dst, want = source(kafka)
    assert copy(spark, kafka, src, dst, tmp_path / "cp", **{"exactlyOnce.failTask": how}) is None
    assert sorted(read(kafka, dst)) == want
    uncommitted = read(kafka, dst, committed=False)
    assert len(uncommitted) > len(want)  # the first attempt's rows reached the log, aborted


def test_a_driver_restart_commits_a_half_committed_batch(spark, kafka, tmp_path):
    src, dst, want = source(kafka)
    # the driver dies after deciding the commit and committing the first task's transaction
    assert copy(spark, kafka, src, dst, tmp_path / "cp", **{"exactlyOnce.failCommit": "after:1"})
    assert 0 < len(read(kafka, dst)) < len(want)  # half committed
    assert sorted(read(kafka, dst, committed=False)) == want
    assert copy(spark, kafka, src, dst, tmp_path / "cp") is None  # replays the batch
    assert sorted(read(kafka, dst)) == want  # the rest committed, not rewritten
    assert sorted(read(kafka, dst, committed=False)) == want


def test_exactly_once_options_are_checked(spark, kafka, tmp_path):
    df = spark.readStream.format("rate").load().selectExpr("CAST(value AS STRING) value")
    with pytest.raises(FAILED, match="transactional.id' is not supported"):
        df.writeStream.format("kclient").options(
            **kafka.options(topic="x", exactlyOnce="true", **{"kafka.transactional.id": "t"})
        ).option("checkpointLocation", str(tmp_path / "cp")).start().awaitTermination(30)
    batch = spark.createDataFrame([("v",)], "value STRING")
    with pytest.raises(FAILED, match="exactlyOnce=true is for writeStream"):
        batch.write.format("kclient").options(**kafka.options(topic="x", exactlyOnce="true")).mode(
            "append"
        ).save()


DRIVER = """
import sys
from kclient.testing.spark import local_spark
boot, src, dst, cp = sys.argv[1:]
with local_spark("local[2]") as spark:
    q = (spark.readStream.format("kclient").option("kafka.bootstrap.servers", boot)
         .option("subscribe", src).option("startingOffsets", "earliest").load()
         .select("key", "value").writeStream.format("kclient")
         .option("kafka.bootstrap.servers", boot).option("topic", dst)
         .option("exactlyOnce", "true").option("exactlyOnce.failCommit", "kill:1")
         .option("checkpointLocation", cp).trigger(availableNow=True).start())
    q.awaitTermination(180)
"""


def test_a_killed_driver_is_recovered_by_the_restart(spark, kafka, tmp_path):
    if not sys.platform.startswith("linux"):
        not_applicable("the hook walks /proc")
    src, dst, want = source(kafka)
    # another driver process: its JVM is SIGKILLed after one of two transactions committed
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, kafka.bootstrap, src, dst, str(tmp_path / "cp")],
        capture_output=True,
        timeout=300,
    )
    assert run.returncode != 0
    assert 0 < len(read(kafka, dst)) < len(want)  # half committed
    assert copy(spark, kafka, src, dst, tmp_path / "cp") is None  # this driver replays it
    assert sorted(read(kafka, dst)) == want
    assert sorted(read(kafka, dst, committed=False)) == want


def test_a_decision_names_its_query(kafka):
    """A new query reusing a transactionalIdPrefix (batch ids from 0 again) is not taken for
    one already done: the decision record counts for its own query only."""
    from kclient.spark.exactly_once import SinkState
    from kclient.spark.options import parse_write_options

    t = kafka.topic(1)
    state = SinkState(parse_write_options(kafka.options(topic=t, exactlyOnce="true")))
    try:
        assert state.decided("p", "q1") == -1 and state.prepared("p-0") == (-1, -1, -1)
        state.decide("p", "q1", 7)
        state.prepare("p-0", 7, 1234, 5)
        assert state.decided("p", "q1") == 7
        assert state.decided("p", "q2") == -1
        assert state.prepared("p-0") == (7, 1234, 5)
    finally:
        state.close()
