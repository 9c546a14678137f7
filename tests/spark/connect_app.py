"""A Spark Connect client for tests/spark/test_connect.py, run with the wheel venv's python:
``connect_app.py URL BOOTSTRAP CHECKPOINT``.  Registers the kclient data source through the
Connect session, runs a batch read and an availableNow streaming copy, prints a JSON report."""

import json
import sys


def main(url, bootstrap, checkpoint):
    from pyspark.sql import SparkSession

    from kclient.spark import register

    spark = SparkSession.builder.remote(url).getOrCreate()
    report = {"session": type(spark).__module__}
    register(spark)
    boot = {"kafka.bootstrap.servers": bootstrap}
    df = spark.read.format("kclient").options(**boot, subscribe="x-src").load()
    report["read"] = sorted(bytes(r.value).decode() for r in df.select("value").collect())
    q = (
        spark.readStream.format("kclient")
        .options(**boot, subscribe="x-src", startingOffsets="earliest")
        .load()
        .select("key", "value")
        .writeStream.format("kclient")
        .options(**boot, topic="x-out")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(180)
    report["stream"] = None if q.exception() is None else str(q.exception())[:2000]
    spark.stop()
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
