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
    got = back.selectExpr(
        "CAST(key AS STRING) k", "CAST(value AS STRING) v", "partition", "offset", "timestamp"
    ).collect()
    assert sorted((r.k, r.v) for r in got) == sorted(rows)
    assert len({(r.partition, r.offset) for r in got}) == 3000
    assert all(r.timestamp is not None for r in got)

    q = (
        spark.readStream.format("kclient")
        .options(
            **boot, subscribe="spark-src", startingOffsets="earliest", maxOffsetsPerTrigger="1000"
        )
        .load()
        .select("key", "value")
        .writeStream.format("kclient")
        .options(**boot, topic="spark-copy")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(180)
    assert q.exception() is None
    assert max(p["numInputRows"] for p in q.recentProgress) <= 1000
    copy = spark.read.format("kclient").options(**boot, subscribe="spark-copy").load()
    assert sorted(
        (bytes(r.key).decode(), bytes(r.value).decode()) for r in copy.collect()
    ) == sorted(rows)

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
        **boot, topic="eos-src"
    ).mode("append").save()

    def copy(**hook):
        q = (
            spark.readStream.format("kclient")
            .options(**boot, subscribe="eos-src", startingOffsets="earliest")
            .load()
            .select("key", "value")
            .writeStream.format("kclient")
            .options(**boot, topic="eos-out", exactlyOnce="true", **hook)
            .option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            q.awaitTermination(180)
        except Exception:  # noqa: BLE001 - the hook's failure, checked below
            pass
        return q.exception()

    def values(level):
        df = (
            spark.read.format("kclient")
            .options(**boot, subscribe="eos-out", **{"kafka.isolation.level": level})
            .load()
        )
        return sorted(bytes(r.value).decode() for r in df.collect())

    # the driver fails after deciding the commit and committing one of the two transactions
    assert copy(**{"exactlyOnce.failCommit": "after:1"}) is not None
    assert 0 < len(values("read_committed")) < 2000
    assert copy() is None  # the replay commits the other one
    assert values("read_committed") == sorted(v for _, v in rows)
    assert values("read_uncommitted") == sorted(v for _, v in rows)  # nothing written twice


def _lag_rows(kafka4, group):
    """(partition, current offset, log end, lag) rows of kafka-consumer-groups --describe."""
    out = kafka4.run_tool(
        "consumer-groups", "--bootstrap-server", kafka4.bootstrap, "--describe", "--group", group
    ).stdout.decode()
    rows = [line.split() for line in out.splitlines() if line.startswith(group + " ")]
    return sorted((int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in rows)


def test_commit_offsets_to_group_shows_the_querys_lag_in_kafka_consumer_groups(
    kafka4, spark, tmp_path
):
    from kclient import Producer, ProducerData
    from kclient.simple import SimpleConsumer
    from tests.waiting import wait_until

    boot = {"kafka.bootstrap.servers": kafka4.bootstrap}
    with Cluster(kafka4.bootstrap) as cluster:
        cluster.refresh([])
        cluster.create_topic("lag-src", 2)

    def produce(n, tag):
        with Producer({"bootstrap.servers": kafka4.bootstrap, "producer.type": "async"}) as p:
            p.send(
                [ProducerData("lag-src", f"{tag}{i}".encode(), partition=i % 2) for i in range(n)]
            )
            p.flush()

    def committed():
        host, port = kafka4.bootstrap.split(",")[0].rsplit(":", 1)
        with SimpleConsumer(host, int(port)) as c:
            got = c.fetch_offsets("lag-q", [("lag-src", 0), ("lag-src", 1)])
        return sum(max(0, m.offset) for m in got.values())

    produce(60, "a")
    q = (
        spark.readStream.format("kclient")
        .options(
            **boot,
            subscribe="lag-src",
            startingOffsets="earliest",
            maxOffsetsPerTrigger="25",
            commitOffsetsToGroup="true",
            **{"kafka.group.id": "lag-q"},
        )
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_until(lambda: committed() == 60, 120, "the group's offsets reach the log end")
    finally:
        q.stop()
    assert q.exception() is None
    assert _lag_rows(kafka4, "lag-q") == [(0, 30, 30, 0), (1, 30, 30, 0)]
    produce(7, "b")  # the query is stopped: lag 4 + 3
    assert _lag_rows(kafka4, "lag-q") == [(0, 30, 34, 4), (1, 30, 33, 3)]
