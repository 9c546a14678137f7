"""Every client call against a malicious broker ends within its deadline with a kclient error.

The broker (tests/hostile.py) is a proxy in front of a real MiniBroker that answers the armed
API by trickling the response a byte every half second, lying about its length, using another
correlation id, sending garbage, or not answering.  Timeouts are per request, not per read.
"""

from __future__ import annotations

import time

import pytest

from kclient import Producer, ProducerData
from kclient.cluster import Cluster
from kclient.consumer import create as create_consumer
from kclient.errors import (
    ConsumerTimeoutError,
    FailedToSendMessageError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from kclient.protocol.apis import FETCH, JOIN_GROUP, LIST_OFFSETS, METADATA, PRODUCE
from kclient.simple import FetchRequest, SimpleConsumer

from .hostile import hostile_pair
from .waiting import LOAD_SLACK

BAD = ("trickle", "long", "short", "wrong_corr", "garbage", "silent")
TIMEOUT_MS = 1000


@pytest.fixture
def hostile(tmp_path):
    with hostile_pair(tmp_path / "broker") as (proxy, broker):
        with Cluster(proxy.bootstrap) as cluster:
            cluster.create_topic("t", partitions=1)
        with Producer({"metadata.broker.list": proxy.bootstrap}) as p:
            p.send([ProducerData("t", f"m{i}".encode()) for i in range(20)])
        yield proxy


def _kclient_error(exc: BaseException, mode: str) -> None:
    """The failure is a kclient error of the kind the misbehaviour calls for."""
    assert isinstance(exc, KafkaError)
    if isinstance(exc, FailedToSendMessageError):
        exc = exc.failed[0][1]
    kinds: tuple[type, ...] = (
        (KafkaTimeoutError,)
        if mode in ("trickle", "long", "silent")
        else (KafkaConnectionError, KafkaError)
    )
    chain = []
    cause: BaseException | None = exc
    while cause is not None:  # NoBrokersAvailableError chains each broker's failure
        chain.append(cause)
        cause = cause.__cause__
    assert any(isinstance(e, kinds) for e in chain), repr(chain)


@pytest.mark.parametrize("mode", BAD)
def test_sync_producer(hostile, mode):
    hostile.arm(mode, {PRODUCE.key})
    with Producer(
        {
            "metadata.broker.list": hostile.bootstrap,
            "request.timeout.ms": TIMEOUT_MS,
            "message.send.max.retries": 1,
            "retry.backoff.ms": 50,
        }
    ) as p:
        start = time.monotonic()
        with pytest.raises(FailedToSendMessageError) as info:
            p.send(ProducerData("t", b"x"))
        took = time.monotonic() - start
        hostile.arm("pass")
    _kclient_error(info.value, mode)
    # two attempts, each bounded by request.timeout.ms + 1 s (the broker's ack time)
    assert took < 2 * (TIMEOUT_MS / 1000 + 1) + LOAD_SLACK, took


@pytest.mark.parametrize("mode", BAD)
def test_async_producer(hostile, mode):
    hostile.arm(mode, {PRODUCE.key})
    p = Producer(
        {
            "metadata.broker.list": hostile.bootstrap,
            "producer.type": "async",
            "request.timeout.ms": TIMEOUT_MS,
            "message.send.max.retries": 1,
            "retry.backoff.ms": 50,
        }
    )
    try:
        start = time.monotonic()
        p.send(ProducerData("t", b"x"))
        with pytest.raises(FailedToSendMessageError) as info:
            p.flush(timeout=30)
        took = time.monotonic() - start
        hostile.arm("pass")
    finally:
        p.close(timeout=5)
    _kclient_error(info.value, mode)
    assert took < 2 * (TIMEOUT_MS / 1000 + 1) + LOAD_SLACK, took


@pytest.mark.parametrize("mode", BAD)
def test_simple_consumer_fetch(hostile, mode):
    with SimpleConsumer("127.0.0.1", hostile.port, so_timeout=TIMEOUT_MS) as c:
        assert len(list(c.fetch(FetchRequest("t", 0, 0, 1 << 16)))) == 20
        hostile.arm(mode, {FETCH.key})
        start = time.monotonic()
        with pytest.raises(KafkaError) as info:
            c.fetch(FetchRequest("t", 0, 0, 1 << 16))
        took = time.monotonic() - start
    _kclient_error(info.value, mode)
    # one reconnect and retry on a broken connection, as 0.8's SimpleConsumer did
    assert took < 2 * TIMEOUT_MS / 1000 + LOAD_SLACK, took


@pytest.mark.parametrize("mode", ["trickle", "long", "garbage", "wrong_corr"])
def test_simple_consumer_offsets(hostile, mode):
    hostile.arm(mode, {LIST_OFFSETS.key})
    with SimpleConsumer("127.0.0.1", hostile.port, so_timeout=TIMEOUT_MS) as c:
        start = time.monotonic()
        with pytest.raises(KafkaError) as info:
            c.get_offsets_before("t", 0, -1)
        took = time.monotonic() - start
    _kclient_error(info.value, mode)
    assert took < 2 * TIMEOUT_MS / 1000 + LOAD_SLACK, took


@pytest.mark.parametrize("mode", BAD)
def test_cluster_metadata(hostile, mode):
    hostile.arm(mode, {METADATA.key})
    with Cluster(hostile.bootstrap, request_timeout_ms=TIMEOUT_MS) as cluster:
        start = time.monotonic()
        with pytest.raises(KafkaError) as info:
            cluster.refresh(["t"])
        took = time.monotonic() - start
    _kclient_error(info.value, mode)
    assert took < TIMEOUT_MS / 1000 + LOAD_SLACK, took


@pytest.mark.parametrize("mode", BAD)
def test_connect_when_every_answer_is_bad(hostile, mode):
    """ApiVersions itself mangled: the connection fails (no silent fallback to 0.10)."""
    hostile.arm(mode)
    with Cluster(hostile.bootstrap, request_timeout_ms=TIMEOUT_MS) as cluster:
        start = time.monotonic()
        with pytest.raises(KafkaError) as info:
            cluster.refresh(["t"])
        took = time.monotonic() - start
    assert took < TIMEOUT_MS / 1000 + LOAD_SLACK, took
    cause = info.value.__cause__ if info.value.__cause__ is not None else info.value
    assert hostile.bootstrap in str(info.value) + str(cause)


@pytest.fixture
def hostile_short_sessions(tmp_path):
    """A hostile pair whose broker takes 2 s sessions (Kafka's minimum is 6 s): JoinGroup's
    deadline, two sessions plus 5 s, is 9 s instead of 17 s for the answers that never end."""
    with hostile_pair(tmp_path / "broker", **{"group.min.session.timeout.ms": 1000}) as pair:
        proxy = pair[0]
        with Cluster(proxy.bootstrap) as cluster:
            cluster.create_topic("t", partitions=1)
        yield proxy


@pytest.mark.parametrize("mode", ["trickle", "long", "short", "wrong_corr", "garbage"])
def test_group_connector(hostile_short_sessions, mode):
    hostile = hostile_short_sessions
    hostile.arm(mode, {JOIN_GROUP.key})
    conn = create_consumer(
        {
            "metadata.broker.list": hostile.bootstrap,
            "group.id": "g",
            "socket.timeout.ms": TIMEOUT_MS,
            "fetch.wait.max.ms": 100,
            "session.timeout.ms": 2000,
            "heartbeat.interval.ms": 500,
            "rebalance.max.retries": 1,
            "offsets.commit.max.retries": 0,
            "retry.backoff.ms": 50,
            "offsets.channel.backoff.ms": 50,
        }
    )
    start = time.monotonic()
    try:
        with pytest.raises(KafkaError):
            conn.create_message_streams({"t": 1})
        took = time.monotonic() - start
    finally:
        conn.shutdown()
    # JoinGroup's deadline: two sessions plus 5 s (the coordinator may hold it that long)
    assert took < 2 * 2 + 5 + LOAD_SLACK, took
    assert time.monotonic() - start - took < LOAD_SLACK


def _consume_under_bad_fetches(hostile, mode: str, config: dict) -> None:
    """Streams read what is there; then every Fetch answer is bad and five more records wait:
    iteration ends with ConsumerTimeoutError within consumer.timeout.ms (nothing bogus is
    delivered), and shutdown within its bound."""
    conn = create_consumer(
        {
            "socket.timeout.ms": TIMEOUT_MS,
            "fetch.wait.max.ms": 100,
            "consumer.timeout.ms": 3000,
            "auto.offset.reset": "smallest",
            "auto.commit.enable": False,
            "refresh.leader.backoff.ms": 50,
            "retry.backoff.ms": 50,
            **config,
        }
    )
    try:
        [stream] = conn.create_message_streams({"t": 1})["t"]
        assert len([m for _, m in zip(range(20), stream)]) == 20
        hostile.arm(mode, {FETCH.key})
        with Producer({"metadata.broker.list": hostile.bootstrap}) as p:
            p.send([ProducerData("t", b"unreachable") for _ in range(5)])
        start = time.monotonic()
        with pytest.raises(ConsumerTimeoutError):
            next(iter(stream))
        assert time.monotonic() - start < 3 + LOAD_SLACK
        assert hostile.mangled > 0, "no Fetch answer was mangled"
    finally:
        start = time.monotonic()
        conn.shutdown()
        hostile.arm("pass")
    assert time.monotonic() - start < 2 * TIMEOUT_MS / 1000 + LOAD_SLACK


@pytest.mark.parametrize("mode", BAD)
def test_group_connector_fetch(hostile, mode):
    _consume_under_bad_fetches(
        hostile,
        mode,
        {
            "metadata.broker.list": hostile.bootstrap,
            "group.id": f"gf-{mode}",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        },
    )


@pytest.fixture
def hostile_zk(tmp_path, zookeeper):
    """A hostile broker registered in ZooKeeper (its advertised address is the proxy's)."""
    with hostile_pair(tmp_path / "broker", **{"zookeeper.connect": zookeeper.connect}) as (
        proxy,
        broker,
    ):
        broker.create_topic("t", 1)
        with Producer({"metadata.broker.list": proxy.bootstrap}) as p:
            p.send([ProducerData("t", f"m{i}".encode()) for i in range(20)])
        yield proxy


@pytest.mark.zookeeper
@pytest.mark.parametrize("mode", BAD)
def test_zookeeper_connector_fetch(hostile_zk, zookeeper, mode):
    _consume_under_bad_fetches(
        hostile_zk,
        mode,
        {
            "zookeeper.connect": zookeeper.connect,
            "group.id": f"gz-{mode}",
            "zookeeper.session.timeout.ms": 4000,
            "rebalance.backoff.ms": 300,
            "rebalance.max.retries": 4,
        },
    )
