"""Spark benchmark: the ``kclient`` data source, and Spark's own Kafka connector beside it.

Run: ``python -m kclient.bench.spark [--messages N] [--value-size B] [--partitions P]
[--master local[2] | --cluster WORKERS] [--broker mini|kafka] [--no-spark-kafka]
[--spark-kafka-version V] [--repeat R] [--stream-batches K]
[--stream-sink [--max-offsets-per-trigger N]] [--foreach-only]``

Starts the mini-broker in its own process, preloads one topic (default 1,000,000 x 100 B over
4 partitions) with kclient's Producer, and times in one ``local[2]`` session (worker reuse on):

* batch read: ``spark.read.format(F)...load()`` written to the ``noop`` sink;
* Arrow writer: a ``spark.range`` DataFrame of N 100-byte values written with
  ``df.write.format(F)``;
* streaming read: ``readStream`` with ``trigger(availableNow)`` and ``maxOffsetsPerTrigger`` =
  messages / ``--stream-batches`` (the same for both formats, which must then run the same number
  of micro-batches) to ``noop``.  "Per micro-batch" is rows / the sum of the micro-batches'
  ``triggerExecution`` times (Spark's own timing of each trigger: the source's offset and
  partition planning, the batch's tasks, the offset and commit logs); "whole query" is rows / the
  wall time from ``start()`` to the query's end, which adds the query's start (for ``kclient``
  the driver-side Python process that hosts the stream reader) and Spark's work between triggers;
* ``foreach_partition_writer`` against an empty ``foreachPartition`` function over the same
  DataFrame (kclient only; Spark's connector has no such helper).

``--foreach-only`` times only the ``foreach_partition_writer`` comparison: the empty function and
the writer run alternately (``--repeat`` rounds) and the writer's output topic is counted after.
``--stream-sink`` times only the streaming sink instead: a ``readStream`` copy of the topic
through ``writeStream.format("kclient")``, at-least-once against ``exactlyOnce=true``.

F is ``kclient`` and, unless ``--no-spark-kafka``, ``kafka`` (Spark's connector, resolved from
Maven Central as ``spark-sql-kafka-0-10_2.13:<pyspark version>`` into the Ivy cache).  A warm-up
round of every path and format (not counted: it starts the executors' Python workers and warms
the JVM) comes first, then ``--repeat`` rounds, the format that runs first alternating from round
to round; each figure is the best of those rounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from kclient.testing import MiniBrokerProcess

PATHS = (
    "batch read",
    "Arrow writer",
    "streaming read, per micro-batch",
    "streaming read, whole query",
)


class Stream(NamedTuple):
    """One streaming query's figures: rows and micro-batches with rows, the sum of those
    batches' ``triggerExecution`` (s) and the wall time from ``start()`` to its end (s)."""

    rows: int
    batches: int
    triggers: float
    whole: float


def _preload(bootstrap: str, topic: str, n: int, size: int, partitions: int) -> None:
    from kclient import Producer, ProducerData
    from kclient.testing import create_ready_topic

    create_ready_topic(bootstrap, topic, partitions)
    value = b"x" * size
    with Producer({"metadata.broker.list": bootstrap, "producer.type": "async"}) as p:
        for start in range(0, n, 10000):
            p.send([ProducerData(topic, value)] * min(10000, n - start))
        p.flush()


def _session(master: str, with_kafka: bool, kafka_version: str | None = None) -> tuple[Any, bool]:
    """A session on ``master``; with Spark's Kafka connector on the classpath when it resolves
    (executors run ``KCLIENT_BENCH_PYTHON``, the cluster's venv, when set)."""
    import pyspark
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = os.environ.get("KCLIENT_BENCH_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    def builder() -> Any:
        return (
            SparkSession.builder.master(master)
            .appName("kclient-bench")
            .config("spark.python.worker.reuse", "true")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "2g")
        )

    if with_kafka:
        version = kafka_version or pyspark.__version__
        package = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"
        try:
            session = builder().config("spark.jars.packages", package).getOrCreate()
            session.sparkContext.setLogLevel("ERROR")
            return session, True
        except Exception as exc:  # noqa: BLE001 - reported, then run without it
            print(
                f"Spark's Kafka connector did not resolve from Maven Central ({package}): "
                f"{type(exc).__name__}"
            )
    session = builder().config("spark.jars.packages", "").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session, False


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _read_batch(spark: Any, fmt: str, bootstrap: str, topic: str) -> float:
    df = (
        spark.read.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    return _timed(lambda: df.write.format("noop").mode("overwrite").save())


def _source_df(spark: Any, n: int, size: int, partitions: int) -> Any:
    return (
        spark.range(0, n, 1, partitions)
        .selectExpr(f"CAST(repeat('x', {size}) AS BINARY) AS value")
        .cache()
    )


def _write_arrow(df: Any, fmt: str, bootstrap: str, topic: str) -> float:
    return _timed(
        lambda: (
            df.write.format(fmt)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .mode("append")
            .save()
        )
    )


def _read_stream(
    spark: Any, fmt: str, bootstrap: str, topic: str, workdir: str, per_trigger: int
) -> Stream:
    """One ``availableNow`` streaming read of ``topic`` to ``noop`` with ``maxOffsetsPerTrigger``
    ``per_trigger`` (the same trigger and limit for either format)."""
    cp = os.path.join(workdir, f"cp-{fmt}-{time.monotonic_ns()}")
    df = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_trigger))
        .load()
    )
    t0 = time.perf_counter()
    q = (
        df.writeStream.format("noop")
        .option("checkpointLocation", cp)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    whole = time.perf_counter() - t0
    batches = [p for p in q.recentProgress if p["numInputRows"]]
    return Stream(
        rows=sum(p["numInputRows"] for p in batches),
        batches=len(batches),
        triggers=sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000,
        whole=whole,
    )


def _round(
    spark: Any, fmt: str, src: Any, bootstrap: str, n: int, workdir: str, per_trigger: int
) -> tuple[dict[str, float], int]:
    """One round of every path for ``fmt``: rows/s by path, and the stream's micro-batches."""
    read = _read_batch(spark, fmt, bootstrap, "bench-in")
    write = _write_arrow(src, fmt, bootstrap, f"bench-out-{fmt}")
    stream = _read_stream(spark, fmt, bootstrap, "bench-in", workdir, per_trigger)
    if stream.rows != n:
        raise RuntimeError(f"{fmt}: the streaming read gave {stream.rows:,} of {n:,} rows")
    rates = dict(zip(PATHS, (n / read, n / write, n / stream.triggers, n / stream.whole)))
    return rates, stream.batches


def _compare(
    spark: Any,
    formats: list[str],
    src: Any,
    bootstrap: str,
    n: int,
    workdir: str,
    args: argparse.Namespace,
    per_trigger: int,
) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """A warm-up round (not counted), then ``args.repeat`` rounds, the format that runs first
    alternating; the best rows/s of each path, and each format's micro-batches per query
    (raises when the formats' micro-batch counts differ)."""
    best: dict[str, dict[str, float]] = {f: dict.fromkeys(PATHS, 0.0) for f in formats}
    batches: dict[str, int] = {}
    for r in range(1 + args.repeat):
        for fmt in formats if r % 2 == 0 else formats[::-1]:
            rates, batches[fmt] = _round(spark, fmt, src, bootstrap, n, workdir, per_trigger)
            if r:
                best[fmt] = {p: max(best[fmt][p], rates[p]) for p in PATHS}
    if len(set(batches.values())) > 1:
        raise RuntimeError(f"the streaming reads ran different numbers of micro-batches: {batches}")
    return best, batches


def _stream_write(
    spark: Any,
    bootstrap: str,
    topic: str,
    workdir: str,
    exactly_once: bool,
    per_trigger: int | None,
) -> tuple[float, float]:
    """A streaming copy of ``topic`` through ``writeStream.format("kclient")`` (at-least-once
    or exactlyOnce=true): (best per-micro-batch rows/s, whole-query rows/s)."""
    cp = os.path.join(workdir, f"cp-sink-{exactly_once}-{time.monotonic_ns()}")
    df = (
        spark.readStream.format("kclient")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    if per_trigger:
        df = df.option("maxOffsetsPerTrigger", str(per_trigger))
    out = f"bench-sink-{'eos' if exactly_once else 'alo'}"
    t0 = time.perf_counter()
    q = (
        df.load()
        .select("value")
        .writeStream.format("kclient")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", out)
        .option("exactlyOnce", str(exactly_once).lower())
        .option("checkpointLocation", cp)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    whole = time.perf_counter() - t0
    batches = [p for p in q.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in batches)
    per_batch = max(
        p["numInputRows"] / (p["durationMs"]["triggerExecution"] / 1000) for p in batches
    )
    return per_batch, rows / whole


def _stream_sinks(
    spark: Any, bootstrap: str, workdir: str, repeat: int, per_trigger: int | None
) -> int:
    """``--stream-sink``: the at-least-once and the exactly-once streaming sink, alternately."""
    from kclient.testing import create_ready_topic

    for name in ("bench-sink-alo", "bench-sink-eos"):
        create_ready_topic(bootstrap, name, 4)
    _read_batch(spark, "kclient", bootstrap, "bench-in")  # start the Python workers
    best: dict[bool, tuple[float, float]] = {False: (0.0, 0.0), True: (0.0, 0.0)}
    for _ in range(repeat):
        for eos in (False, True):
            best[eos] = max(
                best[eos], _stream_write(spark, bootstrap, "bench-in", workdir, eos, per_trigger)
            )
    print("\n| streaming sink | rows/s per micro-batch | rows/s whole query |")
    print("|---|---|---|")
    for eos, name in ((False, "at-least-once"), (True, "exactlyOnce=true")):
        print(f"| {name} | {best[eos][0] / 1e6:.2f}M | {best[eos][1] / 1e6:.2f}M |")
    print(
        f"| exactly-once / at-least-once | {best[True][0] / best[False][0]:.2f}x | "
        f"{best[True][1] / best[False][1]:.2f}x |"
    )
    return 0


def _topic_size(bootstrap: str, topic: str) -> int:
    """Messages in ``topic`` (latest minus earliest offsets, over its partitions)."""
    from kclient.spark.options import parse_read_options
    from kclient.spark.planner import Planner

    planner = Planner(
        parse_read_options(
            {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=False
        )
    )
    try:
        parts = planner.partitions()
        end = planner.offsets_at(parts, -1)
        start = planner.offsets_at(parts, -2)
        return sum(end[tp] - start[tp] for tp in parts)
    finally:
        planner.close()


def _foreach(spark: Any, src: Any, bootstrap: str, n: int, repeat: int) -> tuple[float, float]:
    """(empty foreachPartition rows/s, foreach_partition_writer rows/s), best of ``repeat``
    alternating rounds; raises unless the writer delivered every row of every round."""
    from kclient.spark import foreach_partition_writer
    from kclient.testing import create_ready_topic

    topic = "bench-foreach"
    create_ready_topic(bootstrap, topic, 4)
    writer = foreach_partition_writer({"kafka.bootstrap.servers": bootstrap, "topic": topic})
    before = _topic_size(bootstrap, topic)
    empty = helper = float("inf")
    for _ in range(repeat):
        empty = min(empty, _timed(lambda: src.foreachPartition(_empty_partition)))
        helper = min(helper, _timed(lambda: src.foreachPartition(writer)))
    delivered = _topic_size(bootstrap, topic) - before
    if delivered != n * repeat:
        raise RuntimeError(
            f"foreach_partition_writer delivered {delivered:,} of {n * repeat:,} rows"
        )
    return n / empty, n / helper


def _broker(kind: str) -> Any:
    """The broker to run against (a context manager with ``bootstrap``)."""
    if kind == "kafka":
        from kclient.testing import KafkaServer

        return KafkaServer("4", config={"auto.create.topics.enable": "true", "num.partitions": "4"})
    return MiniBrokerProcess()


def _empty_partition(rows: Any) -> None:
    for _ in rows:
        pass


def _without_cluster(argv: list[str]) -> list[str]:
    """``argv`` less ``--cluster N`` / ``--cluster=N`` and ``--master``."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--cluster", "--master"):
            skip = True
        elif not arg.startswith(("--cluster=", "--master=")):
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kclient bench spark", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--cluster",
        type=int,
        default=0,
        metavar="WORKERS",
        help="run on a Spark standalone cluster of WORKERS one-core workers "
        "(kclient.testing.SparkCluster; executors run the wheel venv)",
    )
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--broker",
        choices=["mini", "kafka"],
        default="mini",
        help="the mini-broker in its own process, or Apache Kafka 4 (JVM)",
    )
    parser.add_argument("--no-spark-kafka", action="store_true")
    parser.add_argument(
        "--spark-kafka-version",
        default=None,
        help="connector version to resolve (default: the installed PySpark's)",
    )
    parser.add_argument(
        "--stream-sink",
        action="store_true",
        help="only the streaming sink: at-least-once against exactlyOnce=true",
    )
    parser.add_argument(
        "--foreach-only",
        action="store_true",
        help="only foreach_partition_writer against an empty foreachPartition",
    )
    parser.add_argument(
        "--max-offsets-per-trigger",
        type=int,
        default=None,
        help="with --stream-sink: micro-batch size (default: one batch)",
    )
    parser.add_argument(
        "--stream-batches",
        type=int,
        default=4,
        help="the streaming read's micro-batches (maxOffsetsPerTrigger = messages / this, "
        "the same for both formats)",
    )
    args = parser.parse_args(argv)
    if args.cluster:
        from kclient.testing.spark_cluster import SparkCluster

        with SparkCluster(workers=args.cluster, cores=1) as cluster:
            os.environ["KCLIENT_BENCH_PYTHON"] = str(cluster.python)
            rest = list(argv if argv is not None else sys.argv[1:])
            return main(_without_cluster(rest) + ["--master", cluster.master_url])
    n, size, parts = args.messages, args.value_size, args.partitions
    print(
        f"load average {os.getloadavg()[0]:.1f}; {n:,} x {size} B, {parts} partitions, "
        f"{args.master}, broker {args.broker}"
    )
    workdir = tempfile.mkdtemp(prefix="kclient-bench-spark-")
    with _broker(args.broker) as broker:
        bootstrap = broker.bootstrap
        _preload(bootstrap, "bench-in", n, size, parts)
        if args.stream_sink:
            spark, _ = _session(args.master, False)
            try:
                return _stream_sinks(
                    spark, bootstrap, workdir, args.repeat, args.max_offsets_per_trigger
                )
            finally:
                spark.stop()
                shutil.rmtree(workdir, ignore_errors=True)
        if args.foreach_only:
            spark, _ = _session(args.master, False)
            try:
                src = _source_df(spark, n, size, parts)
                src.count()
                src.foreachPartition(_empty_partition)  # start the Python workers
                empty, helper = _foreach(spark, src, bootstrap, n, args.repeat)
            finally:
                spark.stop()
                shutil.rmtree(workdir, ignore_errors=True)
            print(f"load average {os.getloadavg()[0]:.1f} after")
            print(f"\n| empty foreachPartition | {empty / 1e6:.2f}M |")
            print(
                f"| foreach_partition_writer | {helper / 1e6:.2f}M ({helper / empty:.2f}x "
                "of empty) |"
            )
            return 0
        spark, has_kafka = _session(args.master, not args.no_spark_kafka, args.spark_kafka_version)
        formats = ["kclient"] + (["kafka"] if has_kafka else [])
        src = _source_df(spark, n, size, parts)
        src.count()
        per_trigger = -(-n // args.stream_batches)
        results, batches = _compare(spark, formats, src, bootstrap, n, workdir, args, per_trigger)
        empty, helper = _foreach(spark, src, bootstrap, n, args.repeat)
        spark.stop()
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")
    print(
        f"\nbest of {args.repeat} rounds after a warm-up round, the side that runs first "
        f"alternating; streaming: availableNow, maxOffsetsPerTrigger {per_trigger:,}, "
        + ", ".join(f"{fmt} {b} micro-batches" for fmt, b in batches.items())
    )
    print(f"\n| path | kclient rows/s | {'Spark Kafka rows/s | ratio |' if has_kafka else ''}")
    print(f"|---|---|{'---|---|' if has_kafka else ''}")
    for name in PATHS:
        rate = results["kclient"][name]
        extra = ""
        if has_kafka:
            theirs = results["kafka"][name]
            extra = f" {theirs / 1e6:.2f}M | {rate / theirs:.2f}x |"
        print(f"| {name} | {rate / 1e6:.2f}M |{extra}")
    print(f"| empty foreachPartition | {empty / 1e6:.2f}M |")
    print(f"| foreach_partition_writer | {helper / 1e6:.2f}M ({helper / empty:.2f}x of empty) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
