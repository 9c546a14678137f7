"""spark.readStream.format("kclient"): checkpoints, restarts, trigger limits, new partitions,
task failures."""

import json
import time

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from kclient.spark.offsets import from_json_dict
from kclient.spark.options import parse_read_options
from kclient.spark.reader import DataLossError
from kclient.spark.stream import KClientStreamReader
from tests.waiting import wait_until


def stream(spark, kafka, **opts):
    return spark.readStream.format("kclient").options(**kafka.options(**opts)).load()


def run_available_now(df, path, checkpoint, fmt="parquet"):
    q = (
        df.writeStream.format(fmt)
        .option("path", str(path))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert not q.isActive and q.exception() is None, q.exception()
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]


def test_restart_from_checkpoint_reads_exactly_the_new_rows(spark, kafka, tmp_path):
    t = kafka.topic(2)
    kafka.produce(t, [b"a%d" % i for i in range(100)])
    df = stream(spark, kafka, subscribe=t, startingOffsets="earliest")
    out, cp = tmp_path / "out", tmp_path / "cp"
    assert sum(run_available_now(df, out, cp)) == 100
    kafka.produce(t, [b"b%d" % i for i in range(50)])
    assert sum(run_available_now(df, out, cp)) == 50
    assert sum(run_available_now(df, out, cp)) == 0
    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == 150 == len({(r.partition, r.offset) for r in rows})
    assert sorted(bytes(r.value) for r in rows) == sorted(
        [b"a%d" % i for i in range(100)] + [b"b%d" % i for i in range(50)]
    )
    # the checkpoint holds Spark's Kafka offset JSON: {"topic": {"partition": next offset}}
    last = sorted(
        (p for p in (cp / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
    )[-1]
    offsets = json.loads(last.read_text().strip().splitlines()[-1])
    ends = {(p, o) for p, o in kafka.read_all_ends(t).items()}
    assert {(int(p), o) for p, o in offsets[t].items()} == ends


def test_max_offsets_per_trigger_caps_every_micro_batch(spark, kafka, tmp_path):
    t = kafka.topic(2)
    kafka.produce(t, [b"%d" % i for i in range(100)])
    df = stream(spark, kafka, subscribe=t, startingOffsets="earliest", maxOffsetsPerTrigger="30")
    sizes = run_available_now(df, tmp_path / "o", tmp_path / "c", fmt="noop")
    assert sum(sizes) == 100 and max(sizes) <= 30 and len(sizes) == 4


def reader(kafka, **opts):
    return KClientStreamReader(parse_read_options(kafka.options(**opts), streaming=True))


def test_min_offsets_per_trigger_waits_until_max_trigger_delay(kafka):
    t = kafka.topic(1)
    r = reader(kafka, subscribe=t, minOffsetsPerTrigger="50", maxTriggerDelay="300ms")
    try:
        start = r.initialOffset()
        assert start == {t: {"0": 0}}
        kafka.produce(t, [b"x"] * 10)
        waited = time.monotonic()
        assert r.latestOffset(start, ReadAllAvailable()) == start  # 10 < 50: wait
        wait_until(
            lambda: r.latestOffset(start, ReadAllAvailable()) == {t: {"0": 10}},
            10,
            "the trigger after maxTriggerDelay",
        )
        assert time.monotonic() - waited >= 0.25  # not before the delay
        kafka.produce(t, [b"x"] * 60)
        assert r.latestOffset({t: {"0": 10}}, ReadMaxRows(25)) == {t: {"0": 35}}
    finally:
        r.stop()


def test_available_now_stops_at_the_offsets_seen_when_it_started(kafka):
    t = kafka.topic(2)
    kafka.produce(t, [b"x"] * 20, partition=lambda i: i % 2)
    r = reader(kafka, subscribe=t, startingOffsets="earliest")
    try:
        start = r.initialOffset()
        r.prepareForTriggerAvailableNow()
        kafka.produce(t, [b"y"] * 20, partition=lambda i: i % 2)
        end = r.latestOffset(start, ReadAllAvailable())
        assert end == {t: {"0": 10, "1": 10}}
        assert r.latestOffset(end, ReadAllAvailable()) == end
    finally:
        r.stop()


def test_partitions_added_while_running_are_read_from_their_start(kafka):
    prefix = f"grow-{time.monotonic_ns()}"
    first = kafka.topic(1, prefix=prefix)
    kafka.produce(first, [b"x"] * 5)
    r = reader(kafka, subscribePattern=f"{prefix}-.*", startingOffsets="latest")
    try:
        start = r.initialOffset()
        assert start == {first: {"0": 5}}
        second = kafka.topic(2, prefix=prefix)
        kafka.produce(second, [b"y"] * 6, partition=lambda i: i % 2)
        kafka.produce(first, [b"x"] * 2)
        end = r.latestOffset(start, ReadAllAvailable())
        assert from_json_dict(end) == {(first, 0): 7, (second, 0): 3, (second, 1): 3}
        ranges = sorted(
            (p.value.topic, p.value.partition, p.value.start, p.value.end)
            for p in r.partitions(start, end)
        )
        assert ranges == sorted([(first, 0, 5, 7), (second, 0, 0, 3), (second, 1, 0, 3)])
    finally:
        r.stop()


def test_new_topic_is_picked_up_by_a_running_query(spark, kafka):
    prefix = f"live-{time.monotonic_ns()}"
    first = kafka.topic(1, prefix=prefix)
    df = stream(spark, kafka, subscribePattern=f"{prefix}-.*", startingOffsets="earliest")
    q = (
        df.selectExpr("topic", "CAST(value AS STRING) v")
        .writeStream.format("memory")
        .queryName("live")
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        kafka.produce(first, [b"one"] * 3)
        second = kafka.topic(2, prefix=prefix)
        kafka.produce(second, [b"two"] * 4)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            rows = spark.sql("SELECT topic, v FROM live").collect()
            if len(rows) >= 7:
                break
            time.sleep(0.5)
        assert sorted((r.topic, r.v) for r in rows) == sorted(
            [(first, "one")] * 3 + [(second, "two")] * 4
        )
    finally:
        q.stop()


def test_task_failing_mid_read_is_retried_without_duplicates(spark, kafka, tmp_path):
    from pyspark.sql.functions import col, udf

    t = kafka.topic(2)
    kafka.produce(t, [b"v%04d" % i for i in range(2000)], partition=lambda i: i % 2)
    marker = tmp_path / "failed-once"

    @udf("long")
    def fail_first_attempt(offset):
        from pyspark import TaskContext

        if offset == 600 and TaskContext.get().attemptNumber() == 0:
            marker.write_text("x")
            raise RuntimeError("injected failure in the middle of the read")
        return offset

    df = stream(
        spark,
        kafka,
        subscribe=t,
        startingOffsets="earliest",
        **{"kafka.max.partition.fetch.bytes": "2048"},
    )
    df = df.withColumn("offset", fail_first_attempt(col("offset")))
    assert sum(run_available_now(df, tmp_path / "out", tmp_path / "cp")) == 2000
    assert marker.exists()  # the first attempt did fail, after some fetches
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert len(rows) == 2000 == len({(r.partition, r.offset) for r in rows})


def test_checkpointed_offsets_past_the_log_end_follow_fail_on_data_loss(kafka):
    t = kafka.topic(1)
    kafka.produce(t, [b"x"] * 5)
    r = reader(kafka, subscribe=t)
    try:
        with pytest.raises(DataLossError, match="past the log end 5"):
            r.latestOffset({t: {"0": 50}}, ReadAllAvailable())
    finally:
        r.stop()
    r = reader(kafka, subscribe=t, failOnDataLoss="false")
    try:
        end = r.latestOffset({t: {"0": 50}}, ReadAllAvailable())
        assert end == {t: {"0": 5}}  # continues from the log end
        assert r.partitions({t: {"0": 50}}, end) == []
    finally:
        r.stop()


def test_commit_offsets_to_group_shows_lag_in_kclient_groups_describe(spark, kafka, tmp_path):
    from kclient.simple import SimpleConsumer
    from tests.conftest import CliRunner

    t = kafka.topic(2)
    kafka.produce(t, [b"a%d" % i for i in range(40)], partition=lambda i: i % 2)
    group = f"lag-{t}"
    q = (
        stream(
            spark,
            kafka,
            subscribe=t,
            startingOffsets="earliest",
            maxOffsetsPerTrigger="15",
            commitOffsetsToGroup="true",
            **{"kafka.group.id": group},
        )
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    host, port = kafka.bootstrap.split(":")

    def committed():
        with SimpleConsumer(host, int(port)) as c:
            got = c.fetch_offsets(group, [(t, 0), (t, 1)])
        return {tp[1]: m.offset for tp, m in got.items()}

    try:
        wait_until(lambda: committed() == {0: 20, 1: 20}, 120, "the group's offsets at the log end")
    finally:
        q.stop()
    assert q.exception() is None
    kafka.produce(t, [b"b%d" % i for i in range(5)], partition=0)
    rows = [
        line.split()
        for line in CliRunner(kafka.bootstrap).out("groups", "describe", group).splitlines()
        if line.startswith(group + " ")
    ]
    assert sorted((int(r[2]), int(r[3]), int(r[5])) for r in rows) == [(0, 20, 5), (1, 20, 0)]


def test_commit_offsets_to_group_needs_a_group_and_a_stream():
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "commitOffsetsToGroup": "true"}
    with pytest.raises(ValueError, match="needs kafka.group.id"):
        parse_read_options(base, streaming=True)
    with pytest.raises(ValueError, match="is for readStream"):
        parse_read_options({**base, "kafka.group.id": "g"}, streaming=False)
    assert parse_read_options({**base, "kafka.group.id": "g"}, streaming=True).commit_group == "g"
    assert (
        parse_read_options(
            {**base, "commitOffsetsToGroup": "false", "kafka.group.id": "g"}, streaming=True
        ).commit_group
        is None
    )
