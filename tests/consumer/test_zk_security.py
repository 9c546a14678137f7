"""zookeeper.digest and zookeeper.set.acl: a ZooKeeper consumer authenticates with ZooKeeper's
digest scheme and creates its znodes with Kafka's secure ACLs (creator all, world read), so a
client without the credentials reads its offsets but cannot overwrite them."""

import pytest
from kazoo.exceptions import NoAuthError
from kazoo.security import Permissions

from kclient import consumer
from kclient.errors import InvalidConfigError
from kclient.zkutils import kazoo_options, make_client
from tests.needs import missing, need_module

from .conftest import zk_config
from .helpers import drain, produce_spread, znode

pytestmark = pytest.mark.zookeeper

SECURE = {"zookeeper.digest": "kclient:s3cret", "zookeeper.set.acl": True}


def test_offsets_are_secured_by_the_digest_identity(zookeeper, zk_cluster, zk, unique):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=1)
    produce_spread(zk_cluster.bootstrap, t, 1, 3)
    c = consumer.create({**zk_config(zookeeper, g), **SECURE})
    try:
        stream = c.create_message_streams({t: 1})[t][0]
        assert len(drain(stream, 3)) == 3
        c.commit_offsets()
    finally:
        c.shutdown()
    path = f"/consumers/{g}/offsets/{t}/0"
    assert znode(zk, path) == "3"  # anyone may read
    acls, _ = zk.get_acls(path)
    assert {(a.id.scheme, a.perms) for a in acls} == {
        ("digest", Permissions.ALL),
        ("world", Permissions.READ),
    }
    assert next(a.id.id for a in acls if a.id.scheme == "digest").startswith("kclient:")
    with pytest.raises(NoAuthError):  # but not overwrite
        zk.set(path, b"0")
    same = make_client(zookeeper.connect, 4000, 10000, kazoo_options(SECURE))
    try:
        same.set(path, b"1")  # the identity that created it may
    finally:
        same.stop()
        same.close()
    assert znode(zk, path) == "1"


def test_kazoo_options_from_kafkas_keys(tmp_path):
    assert kazoo_options({}) == {}
    tls = kazoo_options(
        {
            "zookeeper.ssl.client.enable": True,
            "zookeeper.ssl.truststore.location": "/ca.pem",
            "zookeeper.ssl.keystore.location": "/client.pem",
            "zookeeper.ssl.keystore.password": "pw",
            "zookeeper.ssl.endpoint.identification.algorithm": "none",
        }
    )
    assert tls == {
        "use_ssl": True,
        "ca": "/ca.pem",
        "certfile": "/client.pem",
        "keyfile": "/client.pem",
        "keyfile_password": "pw",
        "verify_certs": True,
        "check_hostname": False,
    }
    with pytest.raises(InvalidConfigError, match="identity"):
        kazoo_options({"zookeeper.set.acl": True})
    with pytest.raises(InvalidConfigError, match="user:password"):
        kazoo_options({"zookeeper.digest": "nopassword"})


@pytest.fixture(scope="module")
def tls_zookeeper(tmp_path_factory):
    """A ZooKeeper serving TLS (test CA) next to its plaintext port."""
    need_module("cryptography")
    from kclient.testing import ZooKeeperServer, zookeeper_available
    from kclient.testing.certs import make_certificates

    if not zookeeper_available():
        missing("ZooKeeper not installed")
    certs = make_certificates(tmp_path_factory.mktemp("zk-certs"))
    with ZooKeeperServer(tls=(str(certs.server_pem), str(certs.ca))) as zk:
        zk.certs = certs
        yield zk


def test_a_consumer_over_tls_to_zookeeper(tls_zookeeper, tmp_path):
    from kclient.broker import MiniBroker
    from kclient.errors import ZooKeeperError

    zk, certs = tls_zookeeper, tls_zookeeper.certs
    tls = {"zookeeper.ssl.client.enable": True, "zookeeper.ssl.truststore.location": str(certs.ca)}
    with MiniBroker(
        log_dir=tmp_path / "b",
        zookeeper_connect=zk.connect,
        config={"group.initial.rebalance.delay.ms": "0"},
    ) as broker:
        broker.create_topic("t")
        produce_spread(broker.bootstrap, "t", 1, 2)
        c = consumer.create(
            {**zk_config(zk, "g-tls"), **tls, "zookeeper.connect": zk.secure_connect}
        )
        try:
            assert len(drain(c.create_message_streams({"t": 1})["t"][0], 2)) == 2
            c.commit_offsets()
        finally:
            c.shutdown()
    plain = make_client(zk.connect, 4000, 10000)
    try:
        assert znode(plain, "/consumers/g-tls/offsets/t/0") == "2"
    finally:
        plain.stop()
        plain.close()
    foreign = {**tls, "zookeeper.ssl.truststore.location": str(certs.other_ca)}
    with pytest.raises(ZooKeeperError, match=zk.secure_connect):
        make_client(zk.secure_connect, 4000, 2000, kazoo_options(foreign))


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_a_zookeeper_consumer_fetches_from_a_secured_listener(
    zookeeper, tmp_path, unique, protocol
):
    """The broker registers every listener; the connector picks the one of its
    security.protocol and its fetchers and offset requests use the security keys."""
    need_module("cryptography")
    from kazoo.client import KazooClient

    from kclient.broker import MiniBroker
    from kclient.protocol.zookeeper import parse_broker
    from kclient.testing.certs import make_certificates

    certs = make_certificates(tmp_path / "certs")
    config = {
        "group.initial.rebalance.delay.ms": "0",
        "listeners": f"PLAINTEXT://127.0.0.1:0,{protocol}://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.server_pem),
    }
    keys = {"security.protocol": protocol, "ssl.ca.location": str(certs.ca)}
    if protocol == "SASL_SSL":
        keys.update(
            {
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
            }
        )
    t = unique("t")
    with MiniBroker(
        log_dir=tmp_path / "b",
        broker_id=7,
        zookeeper_connect=zookeeper.connect,
        config=config,
        sasl_users={"alice": "alice-secret"},
    ) as broker:
        zk = KazooClient(hosts=zookeeper.connect)
        zk.start()
        try:
            data, _ = zk.get(f"/brokers/ids/{broker.node_id}")
        finally:
            zk.stop()
            zk.close()
        secured = broker.bootstrap_of(protocol)
        assert "{}:{}".format(*parse_broker(data, protocol)) == secured
        broker.create_topic(t)
        produce_spread(broker.bootstrap, t, 1, 3)
        c = consumer.create(
            {**zk_config(zookeeper, f"g-{protocol}"), **keys, "offsets.storage": "kafka"}
        )
        try:
            got = drain(c.create_message_streams({t: 1})[t][0], 3)
            assert sorted(m.message for m in got) == [b"m-0-0", b"m-0-1", b"m-0-2"]
            host, port = secured.rsplit(":", 1)
            assert c.cluster.bootstrap == [(host, int(port))]
            c.commit_offsets()
        finally:
            c.shutdown()
