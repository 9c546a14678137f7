"""A local Spark session (``local[2,3]``: two cores, a failed task is retried; set up by
:func:`kclient.testing.spark.local_spark`) and a mini-broker."""

import itertools
import os
import uuid

import pytest

from tests.conftest import FAST_GROUPS
from tests.needs import missing

_names = itertools.count()


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/spark/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    from kclient.testing.spark import local_spark, spark_problem

    problem = spark_problem()
    if problem:
        missing(problem)
    with local_spark("local[2,3]", {"spark.sql.shuffle.partitions": "2"}) as session:
        yield session


class SparkBroker:
    """A MiniBroker with helpers to create topics and produce known rows."""

    def __init__(self, broker):
        self.broker = broker
        self.bootstrap = broker.bootstrap

    def topic(self, partitions=1, prefix="t", config=None):
        name = f"{prefix}-{next(_names)}-{uuid.uuid4().hex[:6]}"
        self.broker.create_topic(name, partitions, config=config)
        return name

    def produce(self, topic, values, keys=None, partition=None, headers=None):
        """Send ``values`` (sync, acks=1); returns nothing, raises on any failure."""
        from kclient import Producer, ProducerData

        with Producer({"metadata.broker.list": self.bootstrap, "producer.type": "async"}) as p:
            p.send(
                [
                    ProducerData(
                        topic,
                        v,
                        None if keys is None else keys[i],
                        partition if not callable(partition) else partition(i),
                        headers=None if headers is None else headers[i],
                    )
                    for i, v in enumerate(values)
                ]
            )
            p.flush()

    def options(self, **more):
        return {"kafka.bootstrap.servers": self.bootstrap, **more}

    def read_all_ends(self, topic):
        """{partition: log end offset} of ``topic``."""
        return {
            p: self.broker.log_manager.get_log(topic, p).log_end_offset
            for p in sorted(self.broker.cluster.partitions(topic))
        }

    def read_all(self, topic):
        """Every (partition, offset, key, value) in ``topic``, read with the SimpleConsumer."""
        from kclient.simple import SimpleConsumer

        host, port = self.bootstrap.split(":")
        out = []
        with SimpleConsumer(host, int(port)) as c:
            for p in sorted(self.broker.cluster.partitions(topic)):
                for mo in c.iter_messages(topic, p, 0):
                    out.append((p, mo.offset, mo.key, mo.value))
        return out


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    from kclient.broker import MiniBroker

    with MiniBroker(log_dir=tmp_path_factory.mktemp("spark-broker"), config=FAST_GROUPS) as broker:
        yield SparkBroker(broker)
