"""The connection layer against tansu, a Kafka-compatible broker kclient did not write."""

import socket
import threading

import pytest

from kclient.cluster import Cluster, parse_bootstrap
from kclient.connection import BrokerConnection
from kclient.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    NoBrokersAvailableError,
    TopicAlreadyExistsError,
)
from kclient.protocol.apis import FETCH, LIST_OFFSETS, METADATA, PRODUCE
from kclient.protocol.produce_one import OneProduce
from kclient.protocol.records import GZIP, RecordsReader, build_batch
from kclient.testing import free_port
from tests.old_broker import serve_like_0_9

pytestmark = pytest.mark.tansu


def test_negotiates_versions_with_tansu(tansu):
    host, port = parse_bootstrap(tansu.bootstrap)[0]
    with BrokerConnection(host, port, client_id="t") as conn:
        assert PRODUCE.key in conn.versions and FETCH.key in conn.versions
        lo, hi = conn.versions[FETCH.key]
        assert conn.version(FETCH) == min(hi, FETCH.max_version)
        assert conn.version(FETCH, highest=4) == 4


def test_create_produce_fetch_round_trip_on_tansu(tansu):
    with Cluster(tansu.bootstrap, client_id="kclient-test") as cluster:
        cluster.create_topic("conn-roundtrip", partitions=2)
        with pytest.raises(TopicAlreadyExistsError, match="conn-roundtrip"):
            cluster.create_topic("conn-roundtrip", partitions=2)
        assert cluster.partitions_for("conn-roundtrip") == [0, 1]
        leader = cluster.leader_for("conn-roundtrip", 1)
        conn = cluster.connection(leader.node_id)
        values = [f"value-{i}".encode() for i in range(50)]
        keys = [f"k{i}".encode() if i % 3 else None for i in range(50)]
        batch = build_batch(values, keys, codec=GZIP)
        resp = conn.request(
            PRODUCE,
            {
                "acks": 1,
                "timeout_ms": 5000,
                "topic_data": [
                    {"name": "conn-roundtrip", "partition_data": [{"index": 1, "records": batch}]}
                ],
            },
        )
        part = resp.responses[0].partition_responses[0]
        assert (part.index, part.error_code, part.base_offset) == (1, 0, 0)
        fetched = conn.request(
            FETCH,
            {
                "max_wait_ms": 100,
                "min_bytes": 1,
                "topics": [
                    {
                        "topic": "conn-roundtrip",
                        "partitions": [
                            {"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
            },
        )
        p = fetched.responses[0].partitions[0]
        assert p.error_code == 0 and p.high_watermark == 50
        got = list(RecordsReader(p.records))
        assert [r.value for r in got] == values
        assert [r.key for r in got] == keys
        assert [r.offset for r in got] == list(range(50))
        # earliest only: tansu 0.6 answers "latest" with the last batch's base offset + 1 and
        # omits v0's offset array (both tansu bugs; the mini-broker's tests cover them)
        offsets = conn.request(
            LIST_OFFSETS,
            {
                "topics": [
                    {
                        "name": "conn-roundtrip",
                        "partitions": [{"partition_index": 1, "timestamp": -2}],
                    }
                ]
            },
        )
        assert offsets.topics[0].partitions[0].offset == 0


def test_pipelined_requests_are_matched_by_correlation_id(tansu):
    host, port = parse_bootstrap(tansu.bootstrap)[0]
    with BrokerConnection(host, port) as conn:
        corrs = [conn.send(METADATA, {"topics": []}) for _ in range(10)]
        assert conn.in_flight == 10
        # collect out of order: later ids first; earlier responses are kept for their waiters
        results = {c: conn.receive(c) for c in reversed(corrs)}
        assert sorted(results) == sorted(corrs) and conn.in_flight == 0
        assert all(r.brokers for r in results.values())


def test_concurrent_threads_share_one_connection(tansu):
    host, port = parse_bootstrap(tansu.bootstrap)[0]
    errors, seen = [], []
    with BrokerConnection(host, port) as conn:

        def worker():
            try:
                for _ in range(20):
                    seen.append(conn.request(METADATA, {"topics": []}).brokers[0].port)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors and len(seen) == 80 and set(seen) == {port}


def _produce_one(conn: BrokerConnection, topic: str, value: bytes, way: str) -> int:
    """One record as the sync producer sends it, by :meth:`BrokerConnection.exchange` or by
    :meth:`~BrokerConnection.round_trip` of a prepared frame: its offset."""
    enc = OneProduce(conn.version(PRODUCE), conn.client_id, None, 1, 5000, topic, 0)
    if way == "round_trip":
        resp = conn.round_trip(PRODUCE, enc.version, enc.stamped(value, 1)[0], enc.read)
    else:
        records = build_batch([value])
        resp = conn.exchange(PRODUCE, enc.version, lambda corr: enc.frame(corr, records), enc.read)
    if type(resp) is tuple:  # the common answer, read by OneProduce
        return resp[0]
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == 0, part
    return part.base_offset


@pytest.mark.parametrize("way", ["exchange", "round_trip"])
def test_exchange_keeps_answers_of_requests_in_flight_and_shares_the_connection(tansu, way):
    topic = f"conn-{way}"
    with Cluster(tansu.bootstrap) as cluster:
        cluster.create_topic(topic, partitions=1)
        conn = cluster.connection(cluster.leader_for(topic, 0).node_id)
        pipelined = [conn.send(METADATA, {"topics": []}) for _ in range(3)]
        first = _produce_one(conn, topic, b"first", way)  # reads past their answers
        assert conn.in_flight == 0
        assert all(conn.receive(c).brokers for c in pipelined)  # kept for their waiters
        st = conn.stats
        before = (st.requests, st.responses, sum(st.latency["Produce"][:-1]), st.bytes_in)
        assert _produce_one(conn, topic, b"alone", way) == first + 1
        after = (st.requests, st.responses, sum(st.latency["Produce"][:-1]), st.bytes_in)
        assert after[:3] == (before[0] + 1, before[1] + 1, before[2] + 1)  # counted alike
        assert after[3] > before[3] and not st.sent_at
        errors, offsets, seen = [], [], []

        def exchanging():
            try:
                offsets.extend(_produce_one(conn, topic, b"x", way) for _ in range(15))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        def requesting():
            try:
                seen.extend(conn.request(METADATA, {"topics": []}).brokers for _ in range(15))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=f) for f in (exchanging, requesting) * 2]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors and len(seen) == 30 and all(seen)
    assert sorted(offsets) == list(range(first + 2, first + 32))  # each answer to its sender


def test_refused_connection_names_the_address():
    port = free_port()
    with pytest.raises(KafkaConnectionError, match=f"127.0.0.1:{port}"):
        BrokerConnection("127.0.0.1", port, connect_timeout_ms=500).connect()
    with pytest.raises(NoBrokersAvailableError, match=str(port)):
        Cluster(f"127.0.0.1:{port}", connect_timeout_ms=500).refresh()


def _fake_broker(behaviour):
    """A socket server that accepts one connection and then does ``behaviour(conn)``."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def run():
        conn, _ = srv.accept()
        behaviour(conn)
        srv.close()

    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1]


def test_disconnect_fails_the_request_in_flight_clearly():
    port = _fake_broker(lambda c: (c.recv(100), c.close()))
    conn = BrokerConnection("127.0.0.1", port, api_version_request=False)
    conn.connect()
    with pytest.raises(KafkaConnectionError, match="closed by the broker"):
        conn.request(METADATA, {"topics": []})
    with pytest.raises(KafkaConnectionError, match="closed by the broker"):
        conn.send(METADATA, {"topics": []})  # later use names the original reason


def test_silent_broker_times_out_naming_the_request():
    done = threading.Event()
    port = _fake_broker(lambda c: (done.wait(5), c.close()))
    conn = BrokerConnection("127.0.0.1", port, api_version_request=False, request_timeout_ms=300)
    conn.connect()
    with pytest.raises(KafkaTimeoutError, match="correlation id 0"):
        conn.request(METADATA, {"topics": []})
    done.set()


def test_old_broker_fallback_uses_old_versions_without_asking():
    port = _fake_broker(lambda c: (c.recv(100), c.close()))
    conn = BrokerConnection(
        "127.0.0.1", port, api_version_request=False, broker_version_fallback="0.8.2"
    )
    conn.connect()
    assert conn.version(PRODUCE) == 0 and conn.version(FETCH) == 0 and conn.version(METADATA) == 0
    with pytest.raises(ValueError, match="0.7.0"):
        BrokerConnection(
            "127.0.0.1", port, api_version_request=False, broker_version_fallback="0.7.0"
        ).connect()
    conn.close()


def test_broker_closing_on_api_versions_falls_back():
    # a pre-0.10 broker closes the connection on an unknown API key, every time: the client
    # asks once more on a new connection (one close may be a broker going away), probes with
    # Metadata v0 (answered) and ApiVersions (closed) on a third, then reconnects with the
    # fallback versions
    accepted = []
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def run():
        for _ in range(4):
            c, _ = srv.accept()
            accepted.append(c)
            if len(accepted) <= 3:
                serve_like_0_9(c)

    threading.Thread(target=run, daemon=True).start()
    conn = BrokerConnection("127.0.0.1", srv.getsockname()[1], broker_version_fallback="0.8.2")
    conn.connect()
    assert conn.connected and conn.versions[PRODUCE.key] == (0, 0)
    conn.close()
    srv.close()


def test_connection_settings_follow_the_loaded_config():
    from kclient.config import load_config
    from kclient.producer.context import connection_settings

    settings = connection_settings(
        load_config(
            "producer",
            {
                "client.id": "svc",
                "socket.timeout.ms": 1234,
                "api.version.request": "false",
                "broker.version.fallback": "0.8.2",
                "socket.send.buffer.bytes": 4096,
            },
        )
    )
    assert settings.client_id == "svc" and settings.request_timeout_ms == 1234
    assert settings.api_version_request is False and settings.broker_version_fallback == "0.8.2"
    assert settings.send_buffer_bytes == 4096
    conn = BrokerConnection("127.0.0.1", 1, settings)
    assert conn.client_id == "svc" and conn.request_timeout == 1.234
    assert BrokerConnection("127.0.0.1", 1, settings, client_id="x").client_id == "x"


def test_consumer_settings_keep_both_socket_buffers_and_room_for_long_polls():
    from kclient.config import load_config
    from kclient.consumer.connector import connection_settings

    settings = connection_settings(
        load_config(
            "consumer",
            {
                "group.id": "g",
                "socket.send.buffer.bytes": 8192,
                "socket.receive.buffer.bytes": 16384,
                "socket.timeout.ms": 1000,
                "fetch.wait.max.ms": 3000,
            },
        )
    )
    assert (settings.send_buffer_bytes, settings.receive_buffer_bytes) == (8192, 16384)
    assert settings.client_id == "g" and settings.request_timeout_ms == 8000


def test_one_broker_version_fallback_default_everywhere():
    import inspect

    from kclient.config import load_config
    from kclient.protocol.versions import DEFAULT_BROKER_VERSION_FALLBACK
    from kclient.simple import SimpleConsumer

    default = inspect.signature(SimpleConsumer).parameters["broker_version_fallback"].default
    assert default == DEFAULT_BROKER_VERSION_FALLBACK
    assert BrokerConnection("127.0.0.1", 1).broker_version_fallback == default
    for kind in ("producer", "consumer"):
        conf = load_config(kind, {"group.id": "g"} if kind == "consumer" else {})
        assert str(conf["broker.version.fallback"]) == default
