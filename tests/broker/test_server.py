"""MiniBroker driven by a raw kclient.protocol client: every API, bad input, faults, restarts."""

import os
import socket
import struct
import time

import pytest

from kclient.broker import MiniBroker
from kclient.protocol.apis import (
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
)
from kclient.protocol.records import RecordsReader, build_batch, build_message_set
from tests.waiting import LOAD_SLACK, wait_until


def produce(client, topic, values, version=3, partition=0, acks=1, records=None, keys=None):
    """One Produce request for one partition; returns the partition response."""
    if records is None:
        records = (
            build_batch(values, keys)
            if version >= 3
            else build_message_set(values, keys, magic=0 if version < 2 else 1)
        )
    body = {
        "acks": acks,
        "timeout_ms": 5000,
        "transactional_id": None,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        ],
    }
    resp = client.request(PRODUCE, version, body)
    return resp.responses[0].partition_responses[0]


def fetch(
    client, topic, offset, version=4, partition=0, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20
):
    """One Fetch request for one partition; returns the partition response."""
    body = {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "fetch_offset": offset,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
    }
    return client.request(FETCH, version, body).responses[0].partitions[0]


def values_of(records):
    return [r.value for r in RecordsReader(bytes(records or b""))]


def magics_of(records):
    return {b.magic for b in RecordsReader(bytes(records)).batches()}


# ------------------------------------------------------------------ ApiVersions, Metadata
def test_api_versions_lists_every_api_with_our_ranges(mini_broker, raw_client):
    c = raw_client(mini_broker.bootstrap)
    for version in (0, 1, 2, 3):
        resp = c.request(API_VERSIONS, version, {})
        assert resp.error_code == 0
        ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert set(ranges) == {
            0,
            1,
            2,
            3,
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            16,
            17,
            18,
            19,
            20,
            21,
            22,
            24,
            25,
            26,
            27,
            28,
            29,
            30,
            31,
            32,
            33,
            36,
            37,
            42,
            44,
            47,
            60,
            68,
            69,
            76,
            77,
            78,
            79,
            90,
            91,
            92,
        }
        # share groups (KIP-932): the stable versions of Kafka 4.1+
        assert (ranges[76], ranges[77], ranges[78], ranges[79]) == ((1, 1), (1, 1), (1, 2), (1, 2))
        # Produce v10-v12 (KIP-951's leader hints, KIP-890's implicit AddPartitionsToTxn)
        assert ranges[0] == (PRODUCE.min_version, 12) and PRODUCE.max_version == 12
        assert ranges[1] == (FETCH.min_version, FETCH.max_version)
        assert ranges[3] == (0, 12) and ranges[60] == (0, 1)
        # transactions; EndTxn v5 is transaction version 2's (an epoch per transaction)
        assert (ranges[24], ranges[25], ranges[26], ranges[28]) == ((0, 5), (0, 4), (0, 5), (0, 5))


def _raw_header(api_key, version, corr, client_id=b"raw"):
    return struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id


def test_unknown_api_versions_version_gets_v0_error_35_and_our_ranges(mini_broker):
    with socket.create_connection(("127.0.0.1", mini_broker.port), timeout=5) as s:
        payload = _raw_header(18, 42, 7) + b"\x00" * 8
        s.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        frame = _recv_exact(s, size)
    assert struct.unpack(">i", frame[:4])[0] == 7
    body = API_VERSIONS.decode_response(0, memoryview(frame), 4)
    assert body.error_code == 35
    assert {k.api_key for k in body.api_keys} >= {0, 1, 3, 18}


def _frame(payload):
    return struct.pack(">i", len(payload)) + payload


def _recv_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _closed(s, timeout=5.0):
    """True if the peer closed the socket (EOF or reset) within the timeout."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_other_unsupported_version_closes_the_connection(mini_broker):
    with socket.create_connection(("127.0.0.1", mini_broker.port), timeout=5) as s:
        payload = _raw_header(0, 99, 1) + b"\x00" * 16
        s.sendall(struct.pack(">i", len(payload)) + payload)
        assert _closed(s)


def test_metadata_describes_broker_and_auto_creates(mini_broker, raw_client):
    c = raw_client(mini_broker.bootstrap)
    resp = c.request(METADATA, 1, {"topics": [{"name": "auto"}]})
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [
        (0, "127.0.0.1", mini_broker.port)
    ]
    assert resp.controller_id == 0
    (topic,) = resp.topics
    assert topic.error_code == 0 and [p.leader_id for p in topic.partitions] == [0]
    everything = c.request(METADATA, 0, {"topics": []})
    assert "auto" in [t.name for t in everything.topics]
    bad = c.request(METADATA, 1, {"topics": [{"name": "no/slash"}]})
    assert bad.topics[0].error_code == 17


def test_metadata_without_auto_create(tmp_path, raw_client):
    with MiniBroker(log_dir=tmp_path, config={"auto.create.topics.enable": "false"}) as b:
        c = raw_client(b.bootstrap)
        resp = c.request(
            METADATA, 4, {"topics": [{"name": "nope"}], "allow_auto_topic_creation": True}
        )
        assert resp.topics[0].error_code == 3
        assert produce(c, "nope", [b"x"]).error_code == 3


# ------------------------------------------------------------------ Produce / Fetch
def test_produce_and_fetch_record_batches(mini_broker, raw_client):
    mini_broker.create_topic("t", partitions=2)
    c = raw_client(mini_broker.bootstrap)
    first = produce(c, "t", [b"a", b"b", b"c"])
    second = produce(c, "t", [b"d"], version=7)
    assert (first.error_code, first.base_offset) == (0, 0)
    assert (second.error_code, second.base_offset) == (0, 3)
    part = fetch(c, "t", 0)
    assert part.error_code == 0 and part.high_watermark == 4
    assert values_of(part.records) == [b"a", b"b", b"c", b"d"]
    assert [r.offset for r in RecordsReader(bytes(fetch(c, "t", 3).records))] == [3]
    assert fetch(c, "t", 4).records in (b"", None) or len(fetch(c, "t", 4).records) == 0


def test_fetch_uses_sendfile(mini_broker, raw_client, monkeypatch):
    mini_broker.create_topic("sf")
    c = raw_client(mini_broker.bootstrap)
    produce(c, "sf", [b"x" * 1000] * 10)
    calls = []
    real = os.sendfile

    def counting(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(os, "sendfile", counting)
    assert len(values_of(fetch(c, "sf", 0).records)) == 10
    assert calls, "file regions must go out with os.sendfile"


def test_old_format_produce_is_converted_and_old_fetch_down_converted(mini_broker, raw_client):
    mini_broker.create_topic("old")
    c = raw_client(mini_broker.bootstrap)
    assert produce(c, "old", [b"v0-a", b"v0-b"], version=0).error_code == 0
    assert produce(c, "old", [b"v2-c"], version=3).error_code == 0
    modern = fetch(c, "old", 0, version=4)
    assert magics_of(modern.records) == {2}
    assert values_of(modern.records) == [b"v0-a", b"v0-b", b"v2-c"]
    for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
        part = fetch(c, "old", 0, version=version)
        assert magics_of(part.records) == {magic}, version
        assert values_of(part.records) == [b"v0-a", b"v0-b", b"v2-c"]


def test_topic_with_message_format_0_stores_message_sets(mini_broker, raw_client):
    mini_broker.create_topic("fmt0", config={"message.format.version": "0"})
    c = raw_client(mini_broker.bootstrap)
    assert produce(c, "fmt0", [b"new"], version=3).error_code == 0
    assert magics_of(fetch(c, "fmt0", 0, version=0).records) == {0}
    assert magics_of(fetch(c, "fmt0", 0, version=4).records) == {0}


def test_produce_rejects_bad_crc_and_oversized_entries(tmp_path, raw_client):
    with MiniBroker(log_dir=tmp_path, config={"message.max.bytes": "2000"}) as b:
        b.create_topic("v")
        c = raw_client(b.bootstrap)
        batch = bytearray(build_batch([b"payload"]))
        batch[-1] ^= 0xFF
        assert produce(c, "v", None, records=bytes(batch)).error_code == 2
        assert produce(c, "v", None, records=build_batch([b"x"])[:-3]).error_code == 2
        assert produce(c, "v", [b"y" * 5000]).error_code == 10
        assert produce(c, "v", [b"ok"]).base_offset == 0


def test_acks_zero_gets_no_response(mini_broker, raw_client):
    mini_broker.create_topic("a0")
    c = raw_client(mini_broker.bootstrap)
    body = {
        "acks": 0,
        "timeout_ms": 1000,
        "topic_data": [
            {
                "name": "a0",
                "partition_data": [{"index": 0, "records": build_batch([b"fire-and-forget"])}],
            }
        ],
    }
    c.send(PRODUCE, 3, body, expect_response=False)
    corr = c.send(METADATA, 1, {"topics": None})
    assert c.receive()[0] == corr
    assert values_of(fetch(c, "a0", 0).records) == [b"fire-and-forget"]


def test_fetch_out_of_range_and_unknown_partition(mini_broker, raw_client):
    mini_broker.create_topic("r")
    c = raw_client(mini_broker.bootstrap)
    produce(c, "r", [b"1"])
    assert fetch(c, "r", 5).error_code == 1
    assert fetch(c, "r", 0, partition=3).error_code == 3
    assert fetch(c, "missing", 0).error_code == 3


def test_fetch_waits_for_data_and_is_woken_by_an_append(mini_broker, raw_client):
    mini_broker.create_topic("w")
    waiter, writer = raw_client(mini_broker.bootstrap), raw_client(mini_broker.bootstrap)
    body = {
        "max_wait_ms": 10000,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": "w",
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
    }
    start = time.monotonic()
    corr = waiter.send(FETCH, 4, body)
    wait_until(lambda: mini_broker.watchers.count() == 1, 10, "the fetch parked on 'w'")
    produce(writer, "w", [b"wake up"])
    got, resp = waiter.receive()
    elapsed = time.monotonic() - start
    assert got == corr and elapsed < LOAD_SLACK  # woken by the append, not the 10 s wait
    assert values_of(resp.responses[0].partitions[0].records) == [b"wake up"]


def test_fetch_returns_empty_after_max_wait(mini_broker, raw_client):
    mini_broker.create_topic("idle")
    c = raw_client(mini_broker.bootstrap)
    start = time.monotonic()
    part = fetch(c, "idle", 0, max_wait_ms=400)
    assert 0.35 < time.monotonic() - start < 0.4 + LOAD_SLACK
    assert part.error_code == 0 and not part.records


def test_requests_are_answered_in_order_behind_a_delayed_fetch(mini_broker, raw_client):
    mini_broker.create_topic("order")
    c = raw_client(mini_broker.bootstrap)
    body = {
        "max_wait_ms": 300,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": "order",
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}],
            }
        ],
    }
    first = c.send(FETCH, 4, body)
    second = c.send(METADATA, 1, {"topics": None})
    assert [c.receive()[0], c.receive()[0]] == [first, second]


def test_fetch_max_bytes_still_returns_a_whole_first_batch(mini_broker, raw_client):
    mini_broker.create_topic("big")
    c = raw_client(mini_broker.bootstrap)
    produce(c, "big", [b"z" * 5000])
    part = fetch(c, "big", 0, version=4, max_bytes=100)
    assert values_of(part.records) == [b"z" * 5000]


# ------------------------------------------------------------------ ListOffsets
def test_list_offsets_v0_and_v1(mini_broker, raw_client):
    mini_broker.create_topic("lo")
    c = raw_client(mini_broker.bootstrap)
    produce(c, "lo", [b"a", b"b"])

    def v0(ts, n):
        body = {
            "replica_id": -1,
            "topics": [
                {
                    "name": "lo",
                    "partitions": [{"partition_index": 0, "timestamp": ts, "max_num_offsets": n}],
                }
            ],
        }
        return c.request(LIST_OFFSETS, 0, body).topics[0].partitions[0]

    def v1(ts):
        body = {
            "replica_id": -1,
            "topics": [{"name": "lo", "partitions": [{"partition_index": 0, "timestamp": ts}]}],
        }
        return c.request(LIST_OFFSETS, 1, body).topics[0].partitions[0]

    assert v0(-1, 1).old_style_offsets == [2]
    assert v0(-1, 10).old_style_offsets == [2, 0]
    assert v0(-2, 10).old_style_offsets == [0]
    assert (v1(-1).offset, v1(-2).offset) == (2, 0)
    assert v1(0).offset == 0
    assert v1(int(time.time() * 1000) + 3600_000).offset == -1
    # a partition named twice: v1+ answers it once with INVALID_REQUEST, v0 answers each
    twice = {
        "replica_id": -1,
        "topics": [
            {
                "name": "lo",
                "partitions": [{"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}] * 2,
            }
        ],
    }
    parts = c.request(LIST_OFFSETS, 1, twice).topics[0].partitions
    assert [(p.partition_index, p.error_code) for p in parts] == [(0, 42)]
    parts = c.request(LIST_OFFSETS, 0, twice).topics[0].partitions
    assert [p.old_style_offsets for p in parts] == [[2], [2]]


# ------------------------------------------------------------------ CreateTopics / DeleteTopics
def test_create_and_delete_topics_with_per_topic_errors(mini_broker, raw_client):
    c = raw_client(mini_broker.bootstrap)

    def create(name, n=1, configs=(), rf=1):
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": n,
                    "replication_factor": rf,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in configs],
                }
            ],
            "timeout_ms": 1000,
        }
        return c.request(CREATE_TOPICS, 1, body).topics[0].error_code

    assert create("made", 3) == 0
    assert create("made", 3) == 36
    assert create("zero", 0) == 37
    assert create("badcfg", 1, [("retention.ms", "soon")]) == 40
    assert create("unknowncfg", 1, [("retention.msx", "1")]) == 40
    assert create("bad name") == 17
    assert create("rf", 1, rf=3) == 38
    assert create("defaulted", -1, rf=-1) == 0
    assert sorted(mini_broker.cluster.partitions("made")) == [0, 1, 2]
    deleted = c.request(DELETE_TOPICS, 1, {"topic_names": ["made", "ghost"], "timeout_ms": 1000})
    assert [(r.name, r.error_code) for r in deleted.responses] == [("made", 0), ("ghost", 3)]
    assert mini_broker.cluster.partitions("made") is None
    assert "made" not in mini_broker.log_manager.topics()


# ------------------------------------------------------------------ bad input
def test_malformed_frames_close_only_their_connection(mini_broker, raw_client, caplog):
    mini_broker.create_topic("safe")
    good = raw_client(mini_broker.bootstrap)
    produce(good, "safe", [b"before"])
    attacks = [
        _frame(b"\x00\x03\x00\x01\x00\x00"),  # too short for a header
        struct.pack(">i", 200 * 1024 * 1024),  # larger than socket.request.max.bytes
        struct.pack(">i", -5),  # negative length
        _frame(_raw_header(3, 1, 1) + struct.pack(">i", 1_000_000) + b"\0" * 9),  # lying count
        _frame(_raw_header(0, 3, 1) + b"\xff" * 14),  # lying inner lengths
        _frame(_raw_header(3, 1, 1) + struct.pack(">ih", 1, 300) + b"abc"),  # string past the end
    ]
    for attack in attacks:
        with socket.create_connection(("127.0.0.1", mini_broker.port), timeout=5) as s:
            s.sendall(attack)
            assert _closed(s), attack
        assert produce(good, "safe", [b"still here"]).error_code == 0
    assert values_of(fetch(good, "safe", 0).records)[0] == b"before"
    reasons = [r.getMessage() for r in caplog.records if r.name == "kclient.broker.network"]
    assert len([m for m in reasons if "closing connection" in m]) >= len(attacks)


def test_oversized_request_limit_is_configurable(tmp_path, raw_client):
    with MiniBroker(log_dir=tmp_path, config={"socket.request.max.bytes": "1000"}) as b:
        b.create_topic("small")
        c = raw_client(b.bootstrap)
        assert produce(c, "small", [b"tiny"]).error_code == 0
        with pytest.raises((ConnectionError, OSError)):
            produce(c, "small", [b"q" * 5000])
        assert produce(raw_client(b.bootstrap), "small", [b"again"]).error_code == 0


# ------------------------------------------------------------------ fault injection
def test_injected_errors_then_success(mini_broker, raw_client):
    mini_broker.create_topic("flaky")
    mini_broker.faults.inject(0, error=6, count=3)
    c = raw_client(mini_broker.bootstrap)
    codes = [produce(c, "flaky", [b"m"]).error_code for _ in range(4)]
    assert codes == [6, 6, 6, 0]
    assert values_of(fetch(c, "flaky", 0).records) == [b"m"]
    mini_broker.faults.inject(3, error=5, count=1)
    meta = c.request(METADATA, 1, {"topics": [{"name": "flaky"}]})
    assert meta.topics[0].error_code == 5
    assert c.request(METADATA, 1, {"topics": [{"name": "flaky"}]}).topics[0].error_code == 0


def test_injected_delay_and_dropped_connection(mini_broker, raw_client):
    mini_broker.create_topic("slow")
    c = raw_client(mini_broker.bootstrap)
    mini_broker.faults.delay(3, ms=400, count=1)
    start = time.monotonic()
    c.request(METADATA, 1, {"topics": None})
    assert time.monotonic() - start >= 0.38
    mini_broker.faults.drop_connection(0, count=1)
    with pytest.raises((ConnectionError, OSError)):
        produce(c, "slow", [b"lost"])
    assert produce(raw_client(mini_broker.bootstrap), "slow", [b"kept"]).base_offset == 0
    assert mini_broker.faults.pending(0) == 0


# ------------------------------------------------------------------ life cycle, config
def test_stop_start_keeps_port_and_data(tmp_path, raw_client):
    b = MiniBroker(log_dir=tmp_path)
    b.start()
    try:
        b.create_topic("keep", partitions=2, config={"retention.ms": "86400000"})
        produce(raw_client(b.bootstrap), "keep", [b"one", b"two"], partition=1)
        port = b.port
        b.stop()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1)
        b.start()
        assert b.port == port
        c = raw_client(b.bootstrap)
        assert values_of(fetch(c, "keep", 0, partition=1).records) == [b"one", b"two"]
        assert produce(c, "keep", [b"three"], partition=1).base_offset == 2
        assert b.topic_config("keep").retention_ms == 86400000
        b.kill()
        b.start()
        assert fetch(raw_client(b.bootstrap), "keep", 0, partition=1).high_watermark == 3
    finally:
        b.close()


def test_temp_log_dir_is_removed_on_exit():
    with MiniBroker() as b:
        path = b.log_dir
        assert path.exists() and b.bootstrap == f"127.0.0.1:{b.port}"
    assert not path.exists()


def test_unknown_config_key_names_the_closest_one(tmp_path):
    with pytest.raises(ValueError, match="log.segment.bytes"):
        MiniBroker(log_dir=tmp_path, config={"log.segment.byte": "1024"})
    with pytest.raises(ValueError, match="num.partitions"):
        MiniBroker(log_dir=tmp_path, config={"num.partitions": "many"})


def test_broker_config_reaches_logs_and_topics(tmp_path, raw_client):
    config = {"num.partitions": "4", "log.segment.bytes": "1024", "broker.id": "7"}
    with MiniBroker(log_dir=tmp_path, config=config) as b:
        assert b.node_id == 7
        c = raw_client(b.bootstrap)
        assert len(c.request(METADATA, 1, {"topics": [{"name": "four"}]}).topics[0].partitions) == 4
        for _ in range(10):
            produce(c, "four", [b"s" * 300])
        assert len(b.log_manager.get_log("four", 0).segments) > 1


def test_coordinator_for_is_the_broker_itself(mini_broker):
    assert mini_broker.coordinator_for("any-group") == (0, "127.0.0.1", mini_broker.port)
    assert mini_broker.coordinator is not None


def test_failed_start_cleans_up_and_frees_the_port(tmp_path):
    from kclient.testing import free_port

    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen(1)
        broker = MiniBroker(log_dir=tmp_path, port=port)
        with pytest.raises(OSError):
            broker.start()
        assert not broker.running
    broker.start()
    try:
        assert broker.port == port
    finally:
        broker.close()


def test_random_frames_never_hurt_the_broker(mini_broker, raw_client):
    import random

    rng = random.Random(1234)
    mini_broker.create_topic("fuzz")
    good = raw_client(mini_broker.bootstrap)
    for i in range(150):
        api_key = rng.choice(
            [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 20, rng.randrange(-5, 100)]
        )
        version = rng.randrange(0, 13)
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60)))
        payload = _raw_header(api_key, version, i) + body
        with socket.create_connection(("127.0.0.1", mini_broker.port), timeout=5) as s:
            s.sendall(_frame(payload))
            s.settimeout(2)
            try:
                s.recv(65536)  # an answer (a lucky valid request) or a close
            except (TimeoutError, ConnectionResetError):
                pass
    assert produce(good, "fuzz", [b"alive"]).error_code == 0
    assert values_of(fetch(good, "fuzz", 0).records) == [b"alive"]
