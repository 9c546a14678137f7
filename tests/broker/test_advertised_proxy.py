"""Brokers behind port-forwarding proxies, advertising the proxies' addresses
(advertised.listeners): librdkafka and kclient reach the cluster only through them, end to end.

Each broker of a two-broker cluster sits behind its own forwarding port; the clients are given
only the first proxy.  Metadata and FindCoordinator must name the proxies, and the payload must
flow through them: a client that took a broker's own port after bootstrap would leave the
proxies with the bootstrap requests alone.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kclient import Producer, ProducerData, consumer
from kclient.broker import MiniBroker
from kclient.broker.cluster import ClusterView
from kclient.errors import ConsumerTimeoutError
from tests.needs import need_module

confluent_kafka = need_module("confluent_kafka")
from confluent_kafka.admin import AdminClient  # noqa: E402

N, SIZE = 100, 2000  # 200 kB each way: far beyond what bootstrap metadata needs


class ForwardingProxy:
    """Listens on a loopback port and pipes every connection to ``target`` (threads)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target: tuple[str, int] | None = None
        self.upstream_bytes = 0  # client -> broker
        self.downstream_bytes = 0  # broker -> client
        self.connections = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            assert self.target is not None
            upstream = socket.create_connection(self.target)
            with self._lock:
                self.connections += 1
                self._sockets += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
                with self._lock:
                    if up:
                        self.upstream_bytes += len(data)
                    else:
                        self.downstream_bytes += len(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()
        for s in self._sockets:
            s.close()


@pytest.fixture
def proxied(tmp_path):
    """Two brokers sharing one cluster view, each advertising its own proxy's port."""
    proxies = [ForwardingProxy(), ForwardingProxy()]
    view = ClusterView()
    brokers = [
        MiniBroker(
            log_dir=tmp_path / f"b{i}",
            broker_id=i,
            cluster=view,
            config={
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxies[i].port}",
                "group.initial.rebalance.delay.ms": "0",
            },
        )
        for i in range(2)
    ]
    for proxy, broker in zip(proxies, brokers):
        broker.start()
        proxy.target = ("127.0.0.1", broker.port)
    brokers[0].create_topic("proxied", partitions=2)  # one partition led by each broker
    yield proxies, brokers
    for broker in brokers:
        broker.close()
    for proxy in proxies:
        proxy.close()


def _values(tag: str) -> list[bytes]:
    return [f"{tag}-{i:04d}-".encode().ljust(SIZE, b"x") for i in range(N)]


def _assert_through(proxies, payload: int) -> None:
    assert all(p.connections for p in proxies), "a broker was never reached through its proxy"
    assert sum(p.upstream_bytes for p in proxies) > payload
    assert sum(p.downstream_bytes for p in proxies) > payload


def test_confluent_kafka_only_through_the_proxies(proxied):
    proxies, brokers = proxied
    bootstrap = f"127.0.0.1:{proxies[0].port}"
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15)
    assert {(b.id, b.port) for b in metadata.brokers.values()} == {
        (i, p.port) for i, p in enumerate(proxies)
    }
    values = _values("rdk")
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce("proxied", value, partition=i % 2)
    assert producer.flush(30) == 0
    consumer_ = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "px", "auto.offset.reset": "earliest"}
    )
    consumer_.subscribe(["proxied"])  # FindCoordinator must name a proxy too
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < N and time.monotonic() < deadline:
            msg = consumer_.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer_.commit(asynchronous=False)
    finally:
        consumer_.close()
    assert sorted(got) == sorted(values)
    assert brokers[0].coordinator.fetch_offsets("px") or brokers[1].coordinator.fetch_offsets("px")
    _assert_through(proxies, N * SIZE)


def test_kclient_only_through_the_proxies(proxied):
    proxies, _ = proxied
    bootstrap = f"127.0.0.1:{proxies[0].port}"
    values = _values("kc")
    with Producer({"metadata.broker.list": bootstrap, "request.required.acks": 1}) as producer:
        producer.send(
            [ProducerData("proxied", v, key=str(i).encode()) for i, v in enumerate(values)]
        )
    conn = consumer.create(
        {
            "metadata.broker.list": bootstrap,
            "group.id": "px-kc",
            "consumer.timeout.ms": 500,
            "auto.offset.reset": "smallest",
            "session.timeout.ms": 6000,
        }
    )
    got: list[bytes] = []
    try:
        stream = conn.create_message_streams({"proxied": 1})["proxied"][0]
        deadline = time.monotonic() + 60
        while len(got) < N and time.monotonic() < deadline:
            try:
                got.append(next(stream).message)
            except ConsumerTimeoutError:
                pass
    finally:
        conn.shutdown()
    assert sorted(got) == sorted(values)
    _assert_through(proxies, N * SIZE)
