"""spark.read.format("kclient"): schema, rows equal to what was produced, planning options."""

import dataclasses
import time

import pytest

from kclient.protocol.apis import PRODUCE
from kclient.protocol.records import build_message_set
from kclient.spark.arrow import SCHEMA_DDL, arrow_schema, kafka_schema
from tests.waiting import next_millisecond


def load(spark, kafka, **opts):
    return spark.read.format("kclient").options(**kafka.options(**opts)).load()


def test_schema_is_sparks_kafka_schema_and_arrow_schema_matches(spark, kafka):
    from pyspark.sql.pandas.types import to_arrow_schema

    reference = spark.createDataFrame([], SCHEMA_DDL).schema
    t = kafka.topic()
    assert load(spark, kafka, subscribe=t).schema == reference == kafka_schema()
    with_headers = load(spark, kafka, subscribe=t, includeHeaders="true").schema
    reference_h = spark.createDataFrame(
        [], SCHEMA_DDL + ", headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
    ).schema
    assert with_headers == reference_h
    assert arrow_schema(False) == to_arrow_schema(reference, timezone="UTC")
    assert arrow_schema(True) == to_arrow_schema(reference_h, timezone="UTC")


def test_batch_read_equals_what_was_produced(spark, kafka):
    t = kafka.topic(3)
    n = 3000
    values = [b"value-%05d" % i for i in range(n)]
    keys = [None if i % 5 == 0 else b"k%d" % (i % 17) for i in range(n)]
    headers = [[("h", b"%d" % i), ("n", None)] if i % 4 == 0 else None for i in range(n)]
    before = int(time.time() * 1000)
    kafka.produce(t, values, keys=keys, headers=headers)
    rows = load(spark, kafka, subscribe=t, includeHeaders="true").collect()
    expected = kafka.read_all(t)
    assert len(rows) == n
    assert sorted((r.partition, r.offset, r.key, r.value) for r in rows) == sorted(expected)
    by_value = {bytes(r.value): r for r in rows}
    for i in (0, 4, 7):
        r = by_value[values[i]]
        want = [("h", b"%d" % i), ("n", None)] if headers[i] else []
        assert [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers] == want
    assert {r.topic for r in rows} == {t} and {r.timestampType for r in rows} == {0}
    assert all(
        r.timestamp is not None and r.timestamp.timestamp() * 1000 >= before - 1000 for r in rows
    )


def test_empty_and_missing_topics_read_no_rows(spark, kafka):
    empty = kafka.topic(2)
    assert load(spark, kafka, subscribe=empty).count() == 0
    assert load(spark, kafka, subscribe="no-such-topic-here").count() == 0
    assert load(spark, kafka, subscribePattern="nothing-matches-.*").count() == 0


def test_assign_with_specific_offsets(spark, kafka):
    t = kafka.topic(2)
    kafka.produce(t, [b"%d" % i for i in range(100)], partition=lambda i: i % 2)
    df = load(
        spark,
        kafka,
        assign=f'{{"{t}": [1]}}',
        startingOffsets=f'{{"{t}": {{"1": 10}}}}',
        endingOffsets=f'{{"{t}": {{"1": 20}}}}',
    )
    assert sorted((r.partition, r.offset) for r in df.collect()) == [(1, o) for o in range(10, 20)]
    df = load(spark, kafka, subscribe=t, startingOffsets=f'{{"{t}": {{"0": 45, "1": -2}}}}')
    assert sorted(r.offset for r in df.collect() if r.partition == 0) == list(range(45, 50))
    assert df.count() == 55


def test_starting_timestamp(spark, kafka):
    t = kafka.topic(1)
    kafka.produce(t, [b"old"] * 10)
    cut = next_millisecond()  # after every "old" timestamp ...
    next_millisecond(cut)  # ... and before every "new" one
    kafka.produce(t, [b"new"] * 7)
    rows = load(spark, kafka, subscribe=t, startingTimestamp=str(cut)).collect()
    assert [bytes(r.value) for r in rows] == [b"new"] * 7
    rows = load(
        spark, kafka, subscribe=t, startingOffsetsByTimestamp=f'{{"{t}": {{"0": {cut}}}}}'
    ).collect()
    assert len(rows) == 7


def test_min_partitions_and_max_records_split_the_tasks(spark, kafka):
    t = kafka.topic(2)
    kafka.produce(t, [b"%d" % i for i in range(1000)], partition=lambda i: i % 2)
    df = load(spark, kafka, subscribe=t, minPartitions="6")
    assert df.rdd.getNumPartitions() >= 6
    assert sorted((r.partition, r.offset) for r in df.collect()) == sorted(
        (p, o) for p in (0, 1) for o in range(500)
    )
    df = load(spark, kafka, subscribe=t, maxRecordsPerPartition="100")
    assert df.rdd.getNumPartitions() == 10 and df.count() == 1000


def test_old_message_formats_give_null_timestamps(spark, kafka):
    from kclient.connection import BrokerConnection

    t = kafka.topic(1, config={"message.format.version": "0.9.0"})  # stored as v0
    host, port = kafka.bootstrap.split(":")
    with BrokerConnection(host, int(port)) as conn:
        body = {
            "acks": -1,
            "timeout_ms": 10000,
            "topic_data": [
                {
                    "name": t,
                    "partition_data": [
                        {"index": 0, "records": build_message_set([b"a", b"b"], magic=0)}
                    ],
                }
            ],
        }
        resp = conn.request(PRODUCE, body, 2)
    assert resp.responses[0].partition_responses[0].error_code == 0
    rows = load(spark, kafka, subscribe=t).orderBy("offset").collect()
    assert [(bytes(r.value), r.timestamp, r.timestampType) for r in rows] == [
        (b"a", None, -1),
        (b"b", None, -1),
    ]


def truncate_head(kafka, topic, values=200):
    """Produce ``values`` records, roll, 10 more, then let retention drop the first segment
    (as retention.bytes would): the log then starts at ``values``."""
    log_ = kafka.broker.log_manager.get_log(topic, 0)
    kafka.produce(topic, [b"x" * 100] * values)
    log_.roll()
    kafka.produce(topic, [b"y" * 100] * 10)
    log_.config = dataclasses.replace(log_.config, retention_bytes=log_.segments[-1].size)
    assert log_.delete_old_segments(int(time.time() * 1000)) == 1
    assert log_.log_start_offset == values
    return values


def test_fail_on_data_loss(spark, kafka):
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    t = kafka.topic(1)
    start = truncate_head(kafka, t)
    gone = f'{{"{t}": {{"0": 0}}}}'
    with pytest.raises((Py4JJavaError, PySparkException), match="Some data may have been lost"):
        load(spark, kafka, subscribe=t, startingOffsets=gone).collect()
    rows = load(spark, kafka, subscribe=t, startingOffsets=gone, failOnDataLoss="false").collect()
    assert sorted(r.offset for r in rows) == list(range(start, start + 10))


def test_register_is_harmless_when_the_format_was_found_already(spark, kafka):
    from kclient.spark import register

    register(spark)
    t = kafka.topic(1)
    kafka.produce(t, [b"r"])
    assert [bytes(r.value) for r in load(spark, kafka, subscribe=t).collect()] == [b"r"]
