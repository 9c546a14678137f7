"""shutdown() and close() finish within their timeouts whatever is in flight, and Ctrl-C needs
one press: a JoinGroup the coordinator holds, a produce request nobody answers, a fetch."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from kclient import Producer, ProducerData
from kclient.cluster import Cluster
from kclient.connection import BrokerConnection
from kclient.consumer import create as create_consumer
from kclient.consumer.group_connector import encode_subscription
from kclient.errors import FailedToSendMessageError, KafkaError, KafkaTimeoutError
from kclient.protocol.apis import FETCH, JOIN_GROUP, PRODUCE, SYNC_GROUP
from kclient.simple import FetchRequest, SimpleConsumer

from .hostile import hostile_pair
from .waiting import LOAD_SLACK, wait_until

GROUP = "stuck"


def _silent_member(broker) -> BrokerConnection:
    """Join GROUP as a member that then never heartbeats nor rejoins (30 s session): whoever
    joins next waits in JoinGroup until the coordinator gives up on it."""
    conn = BrokerConnection(broker.host, broker.port, client_id="silent").connect()
    body = {
        "group_id": GROUP,
        "session_timeout_ms": 30000,
        "rebalance_timeout_ms": 30000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": encode_subscription(["t"], b"")}],
    }
    resp = conn.request(JOIN_GROUP, body)
    if resp.error_code:  # MEMBER_ID_REQUIRED (v4+)
        resp = conn.request(JOIN_GROUP, {**body, "member_id": resp.member_id})
    assert resp.error_code == 0
    sync = conn.request(
        SYNC_GROUP,
        {
            "group_id": GROUP,
            "generation_id": resp.generation_id,
            "member_id": resp.member_id,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
    )
    assert sync.error_code == 0
    return conn


def _joiner(broker):
    return create_consumer(
        {
            "metadata.broker.list": broker.bootstrap,
            "group.id": GROUP,
            "session.timeout.ms": 30000,
            "auto.commit.enable": False,
        }
    )


@pytest.fixture
def stuck_group(mini_broker):
    with Cluster(mini_broker.bootstrap) as cluster:
        cluster.create_topic("t")
    member = _silent_member(mini_broker)
    yield mini_broker
    member.close()


def test_ctrl_c_while_joining_needs_one_press(stuck_group):
    conn = _joiner(stuck_group)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            conn.create_message_streams({"t": 1})
    finally:
        timer.cancel()
        start = time.monotonic()
        conn.shutdown()  # LeaveGroup must not queue behind the JoinGroup
        took = time.monotonic() - start
    assert took < LOAD_SLACK, took  # the held join ends only with its 30 s session


def test_shutdown_from_another_thread_while_joining(stuck_group):
    conn = _joiner(stuck_group)
    outcome: list[BaseException | None] = []

    def join() -> None:
        try:
            conn.create_message_streams({"t": 1})
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome.append(exc)

    t = threading.Thread(target=join, daemon=True)
    t.start()
    wait_until(
        lambda: stuck_group.coordinator.group_state(GROUP) == "PreparingRebalance" and t.is_alive(),
        20,
        "the coordinator holding the new member's JoinGroup",
    )
    start = time.monotonic()
    conn.shutdown()
    took = time.monotonic() - start
    t.join(5)
    assert took < LOAD_SLACK, took  # the held join ends only with its 30 s session
    assert not t.is_alive()


def test_producer_close_timeout_bounds_a_request_in_flight(tmp_path):
    with hostile_pair(tmp_path / "b") as (proxy, _broker):
        with Cluster(proxy.bootstrap) as cluster:
            cluster.create_topic("t")
        proxy.arm("silent", {PRODUCE.key})
        p = Producer(
            {
                "metadata.broker.list": proxy.bootstrap,
                "producer.type": "async",
                "request.timeout.ms": 30000,
            }
        )
        p.send(ProducerData("t", b"x"))
        wait_until(lambda: proxy.mangled >= 1, 20, "the produce answer withheld by the proxy")
        start = time.monotonic()
        with pytest.raises(FailedToSendMessageError) as info:
            p.close(timeout=1)
        took = time.monotonic() - start
    assert took < 1 + LOAD_SLACK, took  # close(timeout=1), not the 30 s request timeout
    assert isinstance(info.value.failed[0][1], KafkaTimeoutError)


def test_simple_consumer_close_does_not_wait_for_a_fetch(tmp_path):
    with hostile_pair(tmp_path / "b") as (proxy, _broker):
        with Cluster(proxy.bootstrap) as cluster:
            cluster.create_topic("t")
        c = SimpleConsumer("127.0.0.1", proxy.port, so_timeout=30000)
        c.get_offsets_before("t", 0, -1)  # connected
        proxy.arm("silent", {FETCH.key})
        failed: list[BaseException] = []

        def fetch() -> None:
            try:
                c.fetch(FetchRequest("t", 0, 0, 1 << 16))
            except KafkaError as exc:
                failed.append(exc)

        t = threading.Thread(target=fetch, daemon=True)
        t.start()
        wait_until(lambda: proxy.mangled >= 1, 20, "the fetch answer withheld by the proxy")
        start = time.monotonic()
        c.close()
        took = time.monotonic() - start
        t.join(5)
    assert took < LOAD_SLACK, took  # not the 30 s so_timeout
    assert not t.is_alive() and failed


def test_group_shutdown_does_not_wait_for_a_fetch(tmp_path):
    with hostile_pair(tmp_path / "b") as (proxy, _broker):
        with Cluster(proxy.bootstrap) as cluster:
            cluster.create_topic("t")
        with Producer({"metadata.broker.list": proxy.bootstrap}) as p:
            p.send(ProducerData("t", b"first"))
        conn = create_consumer(
            {
                "metadata.broker.list": proxy.bootstrap,
                "group.id": "fetching",
                "socket.timeout.ms": 20000,
                "auto.offset.reset": "smallest",
                "auto.commit.enable": False,
                "consumer.timeout.ms": 10000,
            }
        )
        try:
            stream = conn.create_message_streams({"t": 1})["t"][0]
            assert next(iter(stream)).message == b"first"
            withheld = proxy.mangled
            proxy.arm("silent", {FETCH.key})
            wait_until(
                lambda: proxy.mangled > withheld,
                20,  # the fetcher waits on it
                "a fetch answer withheld by the proxy",
            )
        finally:
            start = time.monotonic()
            conn.shutdown()
            took = time.monotonic() - start
    assert took < LOAD_SLACK, took  # not the 20 s socket timeout
