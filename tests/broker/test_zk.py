"""ZooKeeper registration with a real ZooKeeper: Kafka 0.8.2's znodes and exact JSON."""
import json
import re
import uuid

import pytest

from kclient.broker import MiniBroker, MiniCluster

kazoo_client = pytest.importorskip("kazoo.client")

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
        assert re.fullmatch(rb'\{"jmx_port":-1,"timestamp":"\d{13}","host":"127\.0\.0\.1",'
                            rb'"version":1,"port":%d\}' % broker.port, data), data
        assert stat.ephemeralOwner != 0
        broker.create_topic("zt", partitions=2)
        assert _data(zk, "/brokers/topics/zt") == b'{"version":1,"partitions":{"0":[0],"1":[0]}}'
        for p in (0, 1):
            assert _data(zk, f"/brokers/topics/zt/partitions/{p}/state") == \
                b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}'
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
        assert _data(zk, "/brokers/topics/spread") == \
            b'{"version":1,"partitions":{"0":[0],"1":[1],"2":[2],"3":[0]}}'
        assert json.loads(_data(zk, "/brokers/topics/spread/partitions/2/state"))["leader"] == 2
        cluster.stop_broker(2)
        assert sorted(zk.get_children("/brokers/ids")) == ["0", "1"]
        cluster.move_leader("spread", 2, 1)
        assert _data(zk, "/brokers/topics/spread/partitions/2/state") == \
            b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":1,"isr":[1]}'
