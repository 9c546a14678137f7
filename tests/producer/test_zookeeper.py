"""Broker discovery through ZooKeeper's broker registry (/brokers/ids)."""

from __future__ import annotations

import json

import pytest

from kclient.producer import Producer, ProducerData
from kclient.zkutils import parse_broker
from tests.needs import need_module

from .conftest import assert_reports_match_log


@pytest.mark.zookeeper
def test_discovery_through_zookeeper(zookeeper, tmp_path):
    from kclient.broker import MiniCluster

    with MiniCluster(num_brokers=2, log_dir=tmp_path, zookeeper_connect=zookeeper.connect) as c:
        c.create_topic("zk-topic", 4)
        reports = []
        with Producer(
            {"zookeeper.connect": zookeeper.connect, "producer.type": "async"},
            on_report=reports.append,
        ) as p:
            assert sorted(p.context.cluster.bootstrap) == sorted(
                (b.host, b.port) for b in c.brokers
            )
            p.send([ProducerData("zk-topic", b"%d" % i, key=b"%d" % i) for i in range(200)])
            p.flush()
        assert {r.partition for r in reports} == {0, 1, 2, 3}
        assert assert_reports_match_log(c.bootstrap, reports) == 200


@pytest.mark.zookeeper
@pytest.mark.filterwarnings("ignore:No chroot path exists")
def test_zk_alias_and_empty_registry(zookeeper):
    from kclient.errors import NoBrokersAvailableError

    with pytest.raises(NoBrokersAvailableError, match="no broker registered"):
        Producer({"zk.connect": zookeeper.connect + "/empty-chroot"})


def test_registration_formats():
    assert parse_broker(json.dumps({"host": "h", "port": 9092}).encode()) == ("h", 9092)
    reg = {"host": None, "port": -1, "endpoints": ["SSL://s:9093", "PLAINTEXT://p:9092"]}
    assert parse_broker(json.dumps(reg).encode()) == ("p", 9092)
    with pytest.raises(ValueError):
        parse_broker(b"not json")


@pytest.mark.zookeeper
def test_discovery_through_zookeeper_of_a_secured_listener(zookeeper, tmp_path):
    """With security.protocol=SSL the producer takes each broker's SSL endpoint from its
    registration (a broker registers every listener), not the PLAINTEXT one."""
    need_module("cryptography")
    from kclient.broker import MiniBroker
    from kclient.simple import FetchRequest, SimpleConsumer
    from kclient.testing.certs import make_certificates

    certs = make_certificates(tmp_path / "certs")
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.server_pem),
    }
    keys = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca)}
    with MiniBroker(
        log_dir=tmp_path / "b", broker_id=9, zookeeper_connect=zookeeper.connect, config=config
    ) as broker:
        broker.create_topic("zk-ssl")
        host, port = broker.bootstrap_of("SSL").rsplit(":", 1)
        with Producer({"zookeeper.connect": zookeeper.connect, **keys}) as p:
            assert (host, int(port)) in p.context.cluster.bootstrap
            assert (broker.host, broker.port) not in p.context.cluster.bootstrap
            p.send(ProducerData("zk-ssl", b"over-tls"))
        with SimpleConsumer(host, int(port), security=keys) as c:
            assert [m.message.value for m in c.fetch(FetchRequest("zk-ssl", 0, 0, 1 << 16))] == [
                b"over-tls"
            ]
