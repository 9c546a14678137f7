"""The kclient data source on a Spark standalone cluster (a master and two workers on 127.0.0.1,
executors running a venv where kclient is installed from a built wheel): batch write and read,
a streaming copy restarted from its checkpoint, the exactly-once sink with an executor JVM
SIGKILLed mid-batch, and foreach_partition_writer.  One application runs every scenario
(tests/spark/cluster_app.py); the tests check the topics it wrote."""

import json
import re
from pathlib import Path

import pytest

from kclient.simple import SimpleConsumer

TOPICS = ("c-src", "c-copy", "c-eos", "c-each")
#: one application with five JVMs on a shared 2-core machine: minutes under load
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The mini-broker, the cluster, and the report of one run of the driver program."""
    from kclient.broker import MiniBroker
    from kclient.testing.spark_cluster import SparkCluster
    from tests.conftest import FAST_GROUPS

    work = tmp_path_factory.mktemp("spark-cluster")
    with MiniBroker(log_dir=work / "broker", config=FAST_GROUPS) as broker:
        for topic in TOPICS:
            broker.create_topic(topic, 2)
        with SparkCluster(workers=2, cores=1, work_dir=work / "cluster") as cluster:
            done = cluster.run_driver(
                Path(__file__).with_name("cluster_app.py"),
                broker.bootstrap,
                str(work / "app"),
                timeout=400,
            )
            assert done.returncode == 0, done.stderr[-5000:] + "\n" + cluster.tails()
            report = json.loads(done.stdout.strip().splitlines()[-1])
            worker_logs = "\n".join(
                p.read_text(errors="replace") for p in (work / "cluster").glob("worker-*.log")
            )
            yield broker, cluster, report, worker_logs


def values(broker, topic, level="read_committed"):
    host, port = broker.bootstrap.split(":")
    out = []
    with SimpleConsumer(host, int(port), isolation_level=level) as c:
        for p in (0, 1):
            out.extend(mo.value.decode() for mo in c.iter_messages(topic, p, 0))
    return sorted(out)


def expected(tag, n):
    return sorted(f"{tag}{i}" for i in range(n))


def test_executors_run_kclient_from_the_wheel_venv(run):
    _, cluster, report, _ = run
    venv = str(cluster.python.parent.parent)
    files = {f for f, _, _ in report["executors"]}
    assert files and all(f.startswith(venv) for f in files), files
    assert {exe for _, exe, _ in report["executors"]} == {str(cluster.python)}
    assert len({parent for _, _, parent in report["executors"]}) == 2  # two executors


def test_batch_write_and_read(run):
    broker, _, report, _ = run
    assert report["read"] == expected("a", 1000)
    assert values(broker, "c-src") == sorted(expected("a", 1000) + expected("b", 500))


def test_streaming_copy_restarted_from_its_checkpoint(run):
    broker, _, report, _ = run
    assert report["stream_1"] is None and report["stream_2"] is None
    assert values(broker, "c-copy") == values(broker, "c-src")  # no row twice


def test_exactly_once_sink_survives_a_killed_executor(run):
    broker, _, report, worker_logs = run
    assert report["eos"] is None
    assert re.search(
        r"finished with state EXITED message Command exited with code 137", worker_logs
    ), worker_logs[-3000:]  # SIGKILLed mid-batch
    assert values(broker, "c-eos") == values(broker, "c-src")


def test_foreach_partition_writer(run):
    broker, _, _, _ = run
    assert values(broker, "c-each") == expected("c", 800)
