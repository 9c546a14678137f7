"""The kclient Spark data source against real Apache Kafka 4.x: write, batch read, stream read,
foreach_partition_writer."""
import pytest

from kclient.cluster import Cluster
from kclient.spark import foreach_partition_writer

pytestmark = pytest.mark.spark


def test_spark_readers_and_writers_against_kafka4(kafka4, spark, tmp_path):
    boot = {"kafka.bootstrap.servers": kafka4.bootstrap}
    with Cluster(kafka4.bootstrap) as cluster:
        cluster.refresh([])
        for name in ("spark-src", "spark-copy", "spark-each"):
            cluster.create_topic(name, 3)
    rows = [(f"k{i % 7}", f"v{i}") for i in range(3000)]
    df = spark.createDataFrame(rows, "key STRING, value STRING").repartition(2)
    df.write.format("kclient").options(**boot, topic="spark-src").mode("append").save()

    back = spark.read.format("kclient").options(**boot, subscribe="spark-src").load()
    got = back.selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v", "partition",
                          "offset", "timestamp").collect()
    assert sorted((r.k, r.v) for r in got) == sorted(rows)
    assert len({(r.partition, r.offset) for r in got}) == 3000
    assert all(r.timestamp is not None for r in got)

    q = (spark.readStream.format("kclient")
         .options(**boot, subscribe="spark-src", startingOffsets="earliest",
                  maxOffsetsPerTrigger="1000").load()
         .select("key", "value").writeStream.format("kclient")
         .options(**boot, topic="spark-copy")
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None
    assert max(p["numInputRows"] for p in q.recentProgress) <= 1000
    copy = spark.read.format("kclient").options(**boot, subscribe="spark-copy").load()
    assert sorted((bytes(r.key).decode(), bytes(r.value).decode()) for r in copy.collect()) == \
        sorted(rows)

    df.foreachPartition(foreach_partition_writer({**boot, "topic": "spark-each"}))
    each = spark.read.format("kclient").options(**boot, subscribe="spark-each").load()
    assert each.count() == 3000


def test_exactly_once_sink_recovers_a_half_committed_batch_on_kafka4(kafka4, spark, tmp_path):
    boot = {"kafka.bootstrap.servers": kafka4.bootstrap}
    with Cluster(kafka4.bootstrap) as cluster:
        cluster.refresh([])
        for name in ("eos-src", "eos-out"):
            cluster.create_topic(name, 2)
    rows = [(f"k{i}", f"v{i}") for i in range(2000)]
    spark.createDataFrame(rows, "key STRING, value STRING").write.format("kclient").options(
        **boot, topic="eos-src").mode("append").save()

    def copy(**hook):
        q = (spark.readStream.format("kclient")
             .options(**boot, subscribe="eos-src", startingOffsets="earliest").load()
             .select("key", "value").writeStream.format("kclient")
             .options(**boot, topic="eos-out", exactlyOnce="true", **hook)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
             .start())
        try:
            q.awaitTermination(180)
        except Exception:  # noqa: BLE001 - the hook's failure, checked below
            pass
        return q.exception()

    def values(level):
        df = spark.read.format("kclient").options(
            **boot, subscribe="eos-out", **{"kafka.isolation.level": level}).load()
        return sorted(bytes(r.value).decode() for r in df.collect())

    # the driver fails after deciding the commit and committing one of the two transactions
    assert copy(**{"exactlyOnce.failCommit": "after:1"}) is not None
    assert 0 < len(values("read_committed")) < 2000
    assert copy() is None                       # the replay commits the other one
    assert values("read_committed") == sorted(v for _, v in rows)
    assert values("read_uncommitted") == sorted(v for _, v in rows)   # nothing written twice
