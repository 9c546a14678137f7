"""df.write / writeStream .format("kclient") and foreach_partition_writer."""

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from kclient.protocol.apis import PRODUCE
from kclient.spark import foreach_partition_writer

FAILED = (Py4JJavaError, PySparkException)


def test_batch_write_sends_every_row(spark, kafka):
    t = kafka.topic(3)
    rows = [(f"k{i % 9}", f"value-{i}") for i in range(2000)]
    df = spark.createDataFrame(rows, "key STRING, value STRING").repartition(3)
    df.write.format("kclient").options(**kafka.options(topic=t)).mode("append").save()
    got = kafka.read_all(t)
    assert sorted((k, v) for _, _, k, v in got) == sorted((k.encode(), v.encode()) for k, v in rows)
    from kclient.partitioner import DefaultPartitioner

    part = DefaultPartitioner()
    assert all(p == part.partition(k, 3) for p, _, k, _ in got)  # keyed as the Java client does


def test_topic_option_wins_over_the_column_and_columns_route_rows(spark, kafka):
    a, b, c = kafka.topic(1), kafka.topic(2), kafka.topic(1)
    df = spark.createDataFrame(
        [(a, b"1", 0), (b, b"2", 1), (b, b"3", 1)], "topic STRING, value BINARY, partition INT"
    )
    df.write.format("kclient").options(**kafka.options()).mode("append").save()
    assert [v for *_, v in kafka.read_all(a)] == [b"1"]
    assert [(p, v) for p, _, _, v in kafka.read_all(b)] == [(1, b"2"), (1, b"3")]
    df.select("topic", "value").write.format("kclient").options(**kafka.options(topic=c)).mode(
        "append"
    ).save()
    assert sorted(v for *_, v in kafka.read_all(c)) == [b"1", b"2", b"3"]


def test_headers_are_written(spark, kafka):
    t = kafka.topic(1)
    df = spark.createDataFrame(
        [(b"v", [("h1", b"x"), ("h2", None)])],
        "value BINARY, headers ARRAY<STRUCT<key: STRING, value: BINARY>>",
    )
    df.write.format("kclient").options(**kafka.options(topic=t)).mode("append").save()
    back = (
        spark.read.format("kclient")
        .options(**kafka.options(subscribe=t, includeHeaders="true"))
        .load()
        .collect()
    )
    assert [(h.key, h.value) for h in back[0].headers] == [("h1", bytearray(b"x")), ("h2", None)]


def test_bad_schemas_are_rejected_with_sparks_messages(spark, kafka):
    df = spark.createDataFrame([(1,)], "value INT")
    with pytest.raises(FAILED, match="value attribute type must be a String or Binary"):
        df.write.format("kclient").options(**kafka.options(topic="x")).mode("append").save()
    df = spark.createDataFrame([("v",)], "value STRING")
    with pytest.raises(FAILED, match="topic option required when no 'topic' attribute"):
        df.write.format("kclient").options(**kafka.options()).mode("append").save()


def test_a_delivery_failure_fails_the_task_and_a_retry_delivers(spark, kafka):
    t = kafka.topic(1)
    df = spark.createDataFrame([(f"v{i}",) for i in range(100)], "value STRING").coalesce(1)
    faults = kafka.broker.faults
    faults.inject(PRODUCE.key, error=10, count=50)  # MESSAGE_TOO_LARGE: not retriable
    try:
        with pytest.raises(FAILED, match="FailedToSendMessageError|MessageSizeTooLarge"):
            df.write.format("kclient").options(**kafka.options(topic=t)).mode("append").save()
    finally:
        faults.clear()
    faults.inject(PRODUCE.key, error=10, count=1)  # only the first attempt fails
    df.write.format("kclient").options(**kafka.options(topic=t)).mode("append").save()
    faults.clear()
    values = {v for *_, v in kafka.read_all(t)}
    assert values == {b"v%d" % i for i in range(100)}  # at least once


def test_stream_write_copies_a_topic(spark, kafka, tmp_path):
    src, dst = kafka.topic(2), kafka.topic(2)
    kafka.produce(src, [b"m%d" % i for i in range(500)], keys=[b"k%d" % i for i in range(500)])
    q = (
        spark.readStream.format("kclient")
        .options(**kafka.options(subscribe=src, startingOffsets="earliest"))
        .load()
        .select("key", "value")
        .writeStream.format("kclient")
        .options(**kafka.options(topic=dst))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert q.exception() is None
    assert sorted((k, v) for _, _, k, v in kafka.read_all(dst)) == sorted(
        (b"k%d" % i, b"m%d" % i) for i in range(500)
    )


def test_foreach_partition_writer(spark, kafka):
    t, u = kafka.topic(2), kafka.topic(1)
    df = spark.createDataFrame(
        [(f"k{i}", f"v{i}") for i in range(1000)], "key STRING, value STRING"
    )
    df.repartition(4).foreachPartition(foreach_partition_writer(kafka.options(topic=t)))
    assert sorted(v for *_, v in kafka.read_all(t)) == sorted(b"v%d" % i for i in range(1000))
    df.select("value").foreachPartition(
        foreach_partition_writer({"kafka.bootstrap.servers": kafka.bootstrap}, topic=u)
    )
    assert len(kafka.read_all(u)) == 1000
    kafka.broker.faults.inject(PRODUCE.key, error=10, count=50)
    try:
        with pytest.raises(FAILED, match="FailedToSendMessageError|MessageSizeTooLarge"):
            df.coalesce(1).foreachPartition(foreach_partition_writer(kafka.options(topic=u)))
    finally:
        kafka.broker.faults.clear()


def test_foreach_partition_writer_sends_the_value_column_of_rows_as_given(kafka):
    """The value-only path on Rows as a worker gets them: a BinaryType column arrives as
    bytearray, beside a column the sink ignores; nulls stay null; more rows than one chunk."""
    from pyspark.sql import Row

    from kclient.spark.foreach import CHUNK

    t, u = kafka.topic(2), kafka.topic(1)
    n = 2 * CHUNK + 7
    writer = foreach_partition_writer(kafka.options(topic=t))
    writer(iter([Row(id=i, value=bytearray(b"b%d" % i)) for i in range(n)]))
    assert sorted(v for *_, v in kafka.read_all(t)) == sorted(b"b%d" % i for i in range(n))
    mixed = [Row(id=0, value=None), Row(id=1, value="s\u00e9"), Row(id=2, value=b"raw")]
    foreach_partition_writer(kafka.options(topic=u))(iter(mixed))
    assert [v for *_, v in kafka.read_all(u)] == [None, "s\u00e9".encode(), b"raw"]


def test_foreach_partition_writer_keyed_rows_of_bytearray(kafka):
    """Rows with a key (the ProducerData path): BinaryType key and value arrive as bytearray
    and are sent as they are; the partition follows the key's bytes."""
    from pyspark.sql import Row

    from kclient import Producer

    t = kafka.topic(3)
    rows = [Row(key=bytearray(b"k%d" % (i % 5)), value=bytearray(b"v%d" % i)) for i in range(300)]
    foreach_partition_writer(kafka.options(topic=t))(iter(rows))
    got = kafka.read_all(t)
    assert sorted((k, v) for _, _, k, v in got) == sorted(
        (b"k%d" % (i % 5), b"v%d" % i) for i in range(300)
    )
    with Producer({"metadata.broker.list": kafka.bootstrap}) as p:
        assert all(p.partition_for(t, k) == part for part, _, k, _ in got)


def test_save_modes_spark_lets_a_python_source_take(spark, kafka):
    from kclient.spark.source import OVERWRITE_REFUSED

    t = kafka.topic()
    w = (
        spark.createDataFrame([("a",)], "value STRING")
        .write.format("kclient")
        .options(**kafka.options(topic=t))
    )
    with pytest.raises((Py4JJavaError, PySparkException)) as err:
        w.save()  # Spark's default: errorifexists
    assert 'The data source "kclient" cannot be written in the "ErrorIfExists" mode' in str(
        err.value
    ), str(err.value)
    with pytest.raises((Py4JJavaError, PySparkException)) as err:
        w.mode("overwrite").save()
    assert OVERWRITE_REFUSED in str(err.value)
    w.mode("append").save()
    assert [v for _, _, _, v in kafka.read_all(t)] == [b"a"]
