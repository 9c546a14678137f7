"""The kclient data source through Spark Connect: PySpark's Connect server
(sbin/start-connect-server.sh) with its Python workers in the wheel venv, and a Connect client
that registers the data source, reads a topic and runs a streaming query."""

import json
from pathlib import Path

import pytest

from kclient.simple import SimpleConsumer
from tests.needs import need_module


@pytest.fixture(scope="module")
def connect(tmp_path_factory):
    need_module("grpc")
    need_module("pandas")
    from kclient.broker import MiniBroker
    from kclient.testing.spark_cluster import SparkConnectServer
    from tests.conftest import FAST_GROUPS

    work = tmp_path_factory.mktemp("spark-connect")
    with MiniBroker(log_dir=work / "broker", config=FAST_GROUPS) as broker:
        for topic in ("x-src", "x-out"):
            broker.create_topic(topic, 2)
        from kclient import Producer, ProducerData

        with Producer({"metadata.broker.list": broker.bootstrap, "producer.type": "async"}) as p:
            p.send([ProducerData("x-src", f"v{i}".encode(), partition=i % 2) for i in range(300)])
            p.flush()
        with SparkConnectServer(work / "server") as server:
            yield broker, server, work


def test_connect_client_reads_and_streams(connect):
    broker, server, work = connect
    done = server.run_client(
        Path(__file__).with_name("connect_app.py"), broker.bootstrap, str(work / "cp")
    )
    assert done.returncode == 0, done.stderr[-5000:] + "\n" + server.log.read_text()[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["session"].startswith("pyspark.sql.connect")
    expected = sorted(f"v{i}" for i in range(300))
    assert report["read"] == expected
    assert report["stream"] is None
    host, port = broker.bootstrap.split(":")
    with SimpleConsumer(host, int(port)) as c:
        out = sorted(mo.value.decode() for p in (0, 1) for mo in c.iter_messages("x-out", p, 0))
    assert out == expected
