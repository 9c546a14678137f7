"""A driver program for the standalone-cluster tests (tests/spark/test_cluster.py), run by
``SparkCluster.run_driver`` with the cluster's venv python: ``cluster_app.py MASTER BOOTSTRAP
WORKDIR``.  It runs every scenario in one application (executors start once) and prints a JSON
report as its last line; the test reads the topics itself to check them."""

import json
import os
import sys
import time


def main(master, bootstrap, work):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName("kclient-cluster-test")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.executor.memory", "512m")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.task.maxFailures", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    report = {}
    boot = {"kafka.bootstrap.servers": bootstrap}

    def where(_):
        import kclient
        import pyspark_kclient  # noqa: F401  (the wheel's auto-registration module)

        return (kclient.__file__, sys.executable, os.getppid())

    # both executors registered before the first job (else the first one up may take all
    # its tasks): the JVM's executor list holds the driver too
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus
    waited = time.monotonic()
    while status().size() < 3 and time.monotonic() - waited < 120:
        time.sleep(0.2)

    def where_slowly(i):
        time.sleep(1)  # a task long enough that one executor cannot take all four
        return where(i)

    report["executors"] = spark.sparkContext.parallelize(range(4), 4).map(where_slowly).collect()

    def rows(tag, n):
        return spark.createDataFrame(
            [(f"k{i % 5}", f"{tag}{i}") for i in range(n)], "key STRING, value STRING"
        ).repartition(2)

    rows("a", 1000).write.format("kclient").options(**boot, topic="c-src").mode("append").save()
    back = spark.read.format("kclient").options(**boot, subscribe="c-src").load()
    report["read"] = sorted(bytes(r.value).decode() for r in back.select("value").collect())

    def copy(dst, checkpoint, per_trigger="600", **more):
        q = (
            spark.readStream.format("kclient")
            .options(
                **boot,
                subscribe="c-src",
                startingOffsets="earliest",
                maxOffsetsPerTrigger=per_trigger,
            )
            .load()
            .select("key", "value")
            .writeStream.format("kclient")
            .options(**boot, topic=dst, **more)
            .option("checkpointLocation", f"{work}/{checkpoint}")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(240)
        return None if q.exception() is None else str(q.exception())[:2000]

    report["stream_1"] = copy("c-copy", "cp-copy")
    rows("b", 500).write.format("kclient").options(**boot, topic="c-src").mode("append").save()
    report["stream_2"] = copy("c-copy", "cp-copy")  # the restart: the new rows only

    before = time.monotonic()
    report["eos"] = copy(
        "c-eos",
        "cp-eos",
        per_trigger="100000",
        exactlyOnce="true",
        **{"exactlyOnce.failTask": "killExecutor"},
    )
    report["eos_seconds"] = time.monotonic() - before

    from kclient.spark import foreach_partition_writer

    rows("c", 800).foreachPartition(foreach_partition_writer({**boot, "topic": "c-each"}))
    spark.stop()
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
