"""Consumer fixtures: a 3-broker MiniCluster registered in a real ZooKeeper."""

import itertools

import pytest

from kclient import consumer
from tests.conftest import FAST_GROUPS

from .helpers import zk_client

_names = itertools.count()


@pytest.fixture(scope="module")
def zk_cluster(zookeeper):
    """Three MiniBrokers registered in the session's ZooKeeper (ids 0-2)."""
    from kclient.broker import MiniCluster

    with MiniCluster(
        num_brokers=3, zookeeper_connect=zookeeper.connect, config=FAST_GROUPS
    ) as cluster:
        yield cluster


@pytest.fixture
def zk(zookeeper):
    """A kazoo client to read znodes back."""
    client = zk_client(zookeeper.connect)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def unique():
    """unique("t") -> "t7": names that do not collide within the module's cluster."""
    return lambda prefix: f"{prefix}{next(_names)}"


@pytest.fixture
def connectors():
    """Factory of connectors that are all shut down after the test."""
    made = []

    def make(config, **overrides):
        c = consumer.create(config, **overrides)
        made.append(c)
        return c

    yield make
    failed = []
    for c in made:  # shut every one down, then report what failed
        try:
            c.shutdown()
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the others
            failed.append(exc)
    if failed:
        raise failed[0]


def zk_config(zookeeper, group, **extra):
    conf = {
        "zookeeper.connect": zookeeper.connect,
        "group.id": group,
        "zookeeper.session.timeout.ms": 4000,
        "zookeeper.connection.timeout.ms": 20000,
        "consumer.timeout.ms": 300,
        "auto.offset.reset": "smallest",
        "auto.commit.enable": False,
        "rebalance.backoff.ms": 300,
        "rebalance.max.retries": 10,
        "refresh.leader.backoff.ms": 50,
        "zookeeper.sync.time.ms": 200,
    }
    conf.update({k.replace("_", "."): v for k, v in extra.items()})
    return conf
