"""ZooKeeper registration with a real ZooKeeper: Kafka 3.x's znodes and exact JSON."""

import json
import re
import uuid

import pytest

from kclient.broker import MiniBroker, MiniCluster
from tests.needs import need_module

kazoo_client = need_module("kazoo.client")

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def zk_root(zookeeper):
    """A fresh chroot on the shared ZooKeeper and a client looking at it."""
    chroot = f"/kclient-broker-test-{uuid.uuid4().hex[:8]}"
    admin = kazoo_client.KazooClient(hosts=zookeeper.connect)
    admin.start(timeout=15)
    admin.ensure_path(chroot)
    viewer = kazoo_client.KazooClient(hosts=zookeeper.connect + chroot)
    viewer.start(timeout=15)
    yield zookeeper.connect + chroot, viewer
    viewer.stop()
    viewer.close()
    admin.delete(chroot, recursive=True)
    admin.stop()
    admin.close()


def _data(zk, path):
    return zk.get(path)[0]


def test_broker_registers_itself_and_its_topics(zk_root, tmp_path):
    connect, zk = zk_root
    with MiniBroker(log_dir=tmp_path, zookeeper_connect=connect) as broker:
        data, stat = zk.get("/brokers/ids/0")
        assert re.fullmatch(
            rb'\{"features":\{\},"listener_security_protocol_map":\{"PLAINTEXT":"PLAINTEXT"\},'
            rb'"endpoints":\["PLAINTEXT://127\.0\.0\.1:%d"\],"jmx_port":-1,"port":%d,'
            rb'"host":"127\.0\.0\.1","version":5,"timestamp":"\d{13}"\}'
            % (broker.port, broker.port),
            data,
        ), data
        assert stat.ephemeralOwner != 0
        broker.create_topic("zt", partitions=2)
        assert _data(zk, "/brokers/topics/zt") == (
            b'{"partitions":{"0":[0],"1":[0]},'
            b'"adding_replicas":{},"removing_replicas":{},'
            b'"version":3}'
        )
        for p in (0, 1):
            assert (
                _data(zk, f"/brokers/topics/zt/partitions/{p}/state")
                == b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}'
            )
        assert json.loads(_data(zk, "/config/topics/zt")) == {"version": 1, "config": {}}
        assert json.loads(_data(zk, "/controller"))["brokerid"] == 0
        for path in ("/consumers", "/brokers/ids", "/brokers/topics", "/admin/delete_topics"):
            assert zk.exists(path)
        assert broker.ensure_topic("auto-zk")
        assert zk.exists("/brokers/topics/auto-zk/partitions/0/state")
        broker.delete_topic("zt")
        assert not zk.exists("/brokers/topics/zt")


def test_ephemeral_id_disappears_on_stop_and_returns_on_start(zk_root, tmp_path):
    connect, zk = zk_root
    broker = MiniBroker(log_dir=tmp_path, broker_id=5, zookeeper_connect=connect)
    broker.start()
    try:
        broker.create_topic("stays")
        assert zk.get_children("/brokers/ids") == ["5"]
        broker.stop()
        assert zk.get_children("/brokers/ids") == []
        assert zk.exists("/brokers/topics/stays")
        broker.start()
        assert zk.get_children("/brokers/ids") == ["5"]
        assert json.loads(_data(zk, "/brokers/ids/5"))["port"] == broker.port
        broker.kill()
        assert zk.get_children("/brokers/ids") == []
    finally:
        broker.close()


def test_cluster_registers_every_broker_and_leader_moves(zk_root, tmp_path):
    connect, zk = zk_root
    with MiniCluster(num_brokers=3, log_dir=tmp_path, zookeeper_connect=connect) as cluster:
        assert sorted(zk.get_children("/brokers/ids")) == ["0", "1", "2"]
        for b in cluster.brokers:
            assert json.loads(_data(zk, f"/brokers/ids/{b.node_id}"))["port"] == b.port
        cluster.create_topic("spread", partitions=4)
        assert json.loads(_data(zk, "/brokers/topics/spread"))["partitions"] == {
            "0": [0],
            "1": [1],
            "2": [2],
            "3": [0],
        }
        assert json.loads(_data(zk, "/brokers/topics/spread/partitions/2/state"))["leader"] == 2
        cluster.stop_broker(2)
        assert sorted(zk.get_children("/brokers/ids")) == ["0", "1"]
        cluster.move_leader("spread", 2, 1)
        assert (
            _data(zk, "/brokers/topics/spread/partitions/2/state")
            == b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":1,"isr":[1]}'
        )


def test_registration_names_the_advertised_address_and_rack(zk_root, tmp_path):
    connect, zk = zk_root
    config = {"advertised.listeners": "PLAINTEXT://proxy.example:19092", "broker.rack": "r1"}
    with MiniBroker(log_dir=tmp_path, zookeeper_connect=connect, config=config):
        registration = json.loads(_data(zk, "/brokers/ids/0"))
    assert (registration["host"], registration["port"]) == ("proxy.example", 19092)
    assert registration["endpoints"] == ["PLAINTEXT://proxy.example:19092"]
    assert registration["rack"] == "r1"


@pytest.mark.parametrize(
    "ibp,version,keys",
    [
        ("0.9.0", 2, ["endpoints", "jmx_port", "port", "host", "version", "timestamp"]),
        (
            "2.6-IV0",
            4,
            [
                "listener_security_protocol_map",
                "endpoints",
                "jmx_port",
                "port",
                "host",
                "version",
                "timestamp",
            ],
        ),
    ],
)
def test_registration_version_follows_the_inter_broker_protocol(
    zk_root, tmp_path, ibp, version, keys
):
    connect, zk = zk_root
    config = {"inter.broker.protocol.version": ibp}
    with MiniBroker(log_dir=tmp_path, zookeeper_connect=connect, config=config):
        registration = json.loads(_data(zk, "/brokers/ids/0"))
    assert list(registration) == keys and registration["version"] == version
