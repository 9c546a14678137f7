"""Failures name their cause: the broker or ZooKeeper tried, what was tried, the error chained.

No reachable broker is NoBrokersAvailableError (or KafkaConnectionError), never an unknown
topic; kazoo's errors come wrapped in ZooKeeperError naming the connect string.
"""

from __future__ import annotations

import time

import pytest

from kclient import Producer, ProducerData
from kclient.cluster import Cluster
from kclient.consumer import create as create_consumer
from kclient.errors import (
    ConsumerRebalanceFailedError,
    FailedToSendMessageError,
    KafkaConnectionError,
    NoBrokersAvailableError,
    UnknownTopicOrPartitionError,
    ZooKeeperError,
)
from kclient.protocol.apis import API_VERSIONS, METADATA
from kclient.testing import free_port
from kclient.zkutils import make_client

from .hostile import hostile_pair
from .waiting import LOAD_SLACK


def _chain(exc: BaseException | None) -> list[BaseException]:
    out = []
    while exc is not None:
        out.append(exc)
        exc = exc.__cause__
    return out


def _send_error(bootstrap: str) -> BaseException:
    with Producer(
        {
            "metadata.broker.list": bootstrap,
            "message.send.max.retries": 0,
            "request.timeout.ms": 1000,
            "connect.timeout.ms": 1000,
        }
    ) as p:
        with pytest.raises(FailedToSendMessageError) as info:
            p.send(ProducerData("t", b"x"))
    return info.value.failed[0][1]


def test_refused_connection_is_no_brokers_not_unknown_topic():
    address = f"127.0.0.1:{free_port()}"
    err = _send_error(address)
    assert isinstance(err, NoBrokersAvailableError), repr(err)
    assert not isinstance(err, UnknownTopicOrPartitionError)
    assert address in str(err) and "Connection refused" in str(err)
    chain = _chain(err)
    assert any(
        isinstance(e, KafkaConnectionError) and f"{e.host}:{e.port}" == address for e in chain
    )
    assert isinstance(chain[-1], ConnectionRefusedError)


def test_cluster_names_every_broker_tried():
    ports = [free_port(), free_port()]
    with Cluster([f"127.0.0.1:{p}" for p in ports], connect_timeout_ms=1000) as cluster:
        with pytest.raises(NoBrokersAvailableError) as info:
            cluster.refresh(["t"])
    err = info.value
    assert err.brokers == tuple(("127.0.0.1", p) for p in ports)
    for p in ports:
        assert f"127.0.0.1:{p}" in str(err)
    assert "metadata of t" in str(err)
    assert isinstance(err.__cause__, KafkaConnectionError)


@pytest.mark.parametrize("api", [METADATA, API_VERSIONS], ids=["metadata", "api_versions"])
def test_broken_answer_is_named_and_chained(tmp_path, api):
    with hostile_pair(tmp_path / "b") as (proxy, _broker):
        proxy.arm("garbage", {api.key})
        err = _send_error(proxy.bootstrap)
    assert isinstance(err, NoBrokersAvailableError), repr(err)
    assert proxy.bootstrap in str(err) and "bad response" in str(err)
    if api is API_VERSIONS:
        assert "ApiVersions" in str(err)
    assert any(isinstance(e, KafkaConnectionError) for e in _chain(err))


def test_group_consumer_without_brokers_chains_the_cause():
    address = f"127.0.0.1:{free_port()}"
    conn = create_consumer(
        {
            "metadata.broker.list": address,
            "group.id": "g",
            "rebalance.max.retries": 1,
            "connect.timeout.ms": 1000,
            "offsets.commit.max.retries": 0,
            "offsets.channel.backoff.ms": 10,
        }
    )
    try:
        with pytest.raises(ConsumerRebalanceFailedError) as info:
            conn.create_message_streams({"t": 1})
    finally:
        conn.shutdown()
    chain = _chain(info.value)
    assert any(isinstance(e, NoBrokersAvailableError) for e in chain), chain
    assert address in str(info.value)


def test_zookeeper_unreachable_names_the_connect_string():
    connect = f"127.0.0.1:{free_port()}/chroot"
    start = time.monotonic()
    with pytest.raises(ZooKeeperError) as info:
        make_client(connect, 2000, 1000)
    assert time.monotonic() - start < 1 + LOAD_SLACK  # the 1 s connection timeout
    assert info.value.connect == connect and connect in str(info.value)
    assert type(info.value.__cause__).__name__ == "KazooTimeoutError"


def test_producer_and_zk_consumer_wrap_zookeeper_errors():
    connect = f"127.0.0.1:{free_port()}"
    with pytest.raises(ZooKeeperError, match=connect):
        Producer({"zookeeper.connect": connect, "zookeeper.connection.timeout.ms": 1000})
    with pytest.raises(ZooKeeperError, match=connect):
        create_consumer(
            {"zookeeper.connect": connect, "group.id": "g", "zookeeper.connection.timeout.ms": 1000}
        )


class _ExpiredSession:
    """A kazoo client whose session has just expired: every call raises kazoo's own
    SessionExpiredError (as a real client does between the expiry and its new session; the
    soak met it in a commit)."""

    hosts = "127.0.0.1:2181/kc"

    def _expired(self, *args, **kwargs):
        from kazoo.exceptions import SessionExpiredError

        raise SessionExpiredError()

    get = set = create = exists = ensure_path = _expired


def test_zookeeper_offset_commit_and_fetch_wrap_an_expired_session():
    from kclient.consumer.offsets import ZkOffsetStore

    store = ZkOffsetStore(_ExpiredSession(), "g", "127.0.0.1:2181/kc")
    with pytest.raises(ZooKeeperError, match="committing offsets of group g") as info:
        store.commit({("t", 0): 5})
    assert info.value.connect == "127.0.0.1:2181/kc"
    assert type(info.value.__cause__).__name__ == "SessionExpiredError"
    with pytest.raises(ZooKeeperError, match="fetching offsets of group g"):
        store.fetch([("t", 0)])
