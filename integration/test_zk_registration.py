"""The mini-broker's ZooKeeper znodes against a real Kafka 3.x broker's in ZooKeeper mode: the same
keys in the same order and the same values once host, port, ids and timestamps are normalised."""

from __future__ import annotations

import json
import uuid

import pytest
from kazoo.client import KazooClient

from kclient.broker import MiniBroker
from kclient.protocol.zookeeper import broker_path, partition_state_path, topic_path

from .helpers import new_topic


@pytest.fixture
def zk(kafka3):
    client = KazooClient(hosts=kafka3.zookeeper_connect)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def _normalised(data: bytes, host: str, port: int) -> list[tuple[str, object]]:
    """Key/value pairs in written order, this broker's address and the timestamp blanked."""
    text = data.decode().replace(f"{host}:{port}", "HOST:PORT")
    out = []
    for key, value in json.loads(text).items():
        if key == "host" and value == host or key == "port" and value == port or key == "timestamp":
            value = key.upper()
        out.append((key, value))
    return out


def _leader_blanked(data: bytes, leader: int) -> bytes:
    return data.replace(b'"leader":%d' % leader, b'"leader":X').replace(b"[%d]" % leader, b"[X]")


def test_znodes_match_kafkas(kafka3, zk, tmp_path):
    node = kafka3.nodes[0]
    real_topic = new_topic(kafka3, prefix="zkcmp")
    real = {
        "registration": zk.get(broker_path(node.node_id))[0],
        "state": zk.get(partition_state_path(real_topic, 0))[0],
        "topic": json.loads(zk.get(topic_path(real_topic))[0]),
    }
    chroot = f"/mini-{uuid.uuid4().hex[:8]}"
    zk.ensure_path(chroot)
    with MiniBroker(log_dir=tmp_path, zookeeper_connect=kafka3.zookeeper_connect + chroot) as b:
        b.create_topic("zkcmp", partitions=1)
        mine = {
            "registration": zk.get(chroot + broker_path(0))[0],
            "state": zk.get(chroot + partition_state_path("zkcmp", 0))[0],
            "topic": json.loads(zk.get(chroot + topic_path("zkcmp"))[0]),
        }
        host, port = b.host, b.port
    zk.delete(chroot, recursive=True)
    assert _normalised(mine["registration"], host, port) == _normalised(
        real["registration"], "127.0.0.1", node.port
    )
    assert _leader_blanked(mine["state"], 0) == _leader_blanked(real["state"], node.node_id)
    real["topic"].pop("topic_id")  # the mini-broker has no topic ids (readers: absent)
    assert list(mine["topic"]) == list(real["topic"])
    assert mine["topic"]["version"] == real["topic"]["version"]
