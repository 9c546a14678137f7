"""Unmodified third-party clients against MiniBroker: confluent-kafka, kafka-python and kcat."""

import shutil
import subprocess
import time

import pytest

from tests.needs import missing, need_module

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 200
KCAT = shutil.which("kcat") or "/usr/bin/kcat"

confluent_kafka = need_module("confluent_kafka")
kafka = need_module("kafka")


def _expected(codec):
    return [(f"k{i}".encode(), f"{codec}-value-{i}".encode() * 3) for i in range(N)]


def _confluent_produce(bootstrap, topic, codec, records, extra=None):
    """Produce with librdkafka; returns the delivery reports (error, partition, offset)."""
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.codec": codec,
            "linger.ms": 5,
            "acks": "1",
            **(extra or {}),
        }
    )
    reports = []
    for key, value in records:
        producer.produce(
            topic,
            value=value,
            key=key,
            callback=lambda err, msg: reports.append((err, msg.partition(), msg.offset())),
        )
    assert producer.flush(30) == 0
    return reports


def _confluent_consume(bootstrap, topic, partitions, count, timeout=30.0, group=None):
    """Consume ``count`` messages (assigned partitions from the beginning, or as a group)."""
    TopicPartition = confluent_kafka.TopicPartition
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or "interop-assign",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": group is not None,
        }
    )
    if group:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, deadline = [], time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_produce_consume(mini_broker, codec):
    mini_broker.create_topic("ck", partitions=3)
    records = _expected(codec)
    reports = _confluent_produce(mini_broker.bootstrap, "ck", codec, records)
    assert len(reports) == N and all(err is None for err, _, _ in reports)
    got = _confluent_consume(mini_broker.bootstrap, "ck", 3, N)
    assert sorted((k, v) for _, _, k, v in got) == sorted(records)
    assert sorted((p, o) for _, p, o in reports) == sorted((p, o) for p, o, _, _ in got)


def test_confluent_kafka_consumer_group_and_auto_created_topic(mini_broker):
    records = _expected("group")
    reports = _confluent_produce(mini_broker.bootstrap, "auto-ck", "none", records)
    assert all(err is None for err, _, _ in reports)
    got = _confluent_consume(mini_broker.bootstrap, "auto-ck", 1, N, group="g-interop")
    assert [(k, v) for _, _, k, v in got] == records


def _kafka_python_produce(bootstrap, topic, codec, records):
    producer = kafka.KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=1,
        linger_ms=5,
        compression_type=None if codec == "none" else codec,
    )
    futures = [producer.send(topic, key=k, value=v) for k, v in records]
    producer.flush(30)
    metas = [f.get(timeout=30) for f in futures]
    producer.close()
    return metas


def _kafka_python_consume(bootstrap, topic, partitions, count, timeout=30.0):
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=1000,
    )
    consumer.assign([kafka.TopicPartition(topic, p) for p in range(partitions)])
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for msg in consumer:
            got.append((msg.partition, msg.offset, msg.key, msg.value))
            if len(got) >= count:
                break
    consumer.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_produce_consume(mini_broker, codec):
    mini_broker.create_topic("kp", partitions=2)
    records = _expected(codec)
    metas = _kafka_python_produce(mini_broker.bootstrap, "kp", codec, records)
    assert len(metas) == N
    got = _kafka_python_consume(mini_broker.bootstrap, "kp", 2, N)
    assert sorted((k, v) for _, _, k, v in got) == sorted(records)
    assert sorted((m.partition, m.offset) for m in metas) == sorted((p, o) for p, o, _, _ in got)


def test_confluent_and_kafka_python_read_each_other(mini_broker):
    mini_broker.create_topic("mixed")
    first = _expected("ck")[:50]
    second = _expected("kp")[:50]
    _confluent_produce(mini_broker.bootstrap, "mixed", "snappy", first)
    _kafka_python_produce(mini_broker.bootstrap, "mixed", "gzip", second)
    by_kp = _kafka_python_consume(mini_broker.bootstrap, "mixed", 1, 100)
    by_ck = _confluent_consume(mini_broker.bootstrap, "mixed", 1, 100)
    assert [(k, v) for _, _, k, v in by_kp] == first + second
    assert [(k, v) for _, _, k, v in by_ck] == first + second


# ------------------------------------------------------------------ kcat
LEGACY = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.8.2"]


def _kcat(args, stdin=None, timeout=60):
    if not shutil.which(KCAT):
        missing("kcat not installed (apt-get install kcat)")
    proc = subprocess.run([KCAT, *args], input=stdin, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout


def _kcat_roundtrip(broker, topic, extra, codec):
    lines = [f"key{i}:value-{i}-{codec}" for i in range(100)]
    produce_args = ["-b", broker.bootstrap, "-t", topic, "-P", "-K:", *extra]
    if codec != "none":
        produce_args += ["-z", codec]
    _kcat(produce_args, stdin=("\n".join(lines) + "\n").encode())
    out = _kcat(
        [
            "-b",
            broker.bootstrap,
            "-t",
            topic,
            "-C",
            "-e",
            "-o",
            "beginning",
            "-f",
            "%k:%s:%o\\n",
            *extra,
        ]
    )
    rows = out.decode().splitlines()
    assert [r.rsplit(":", 1)[0] for r in rows] == lines
    assert [int(r.rsplit(":", 1)[1]) for r in rows] == list(range(100))


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_and_consume(mini_broker, codec):
    mini_broker.create_topic("kc")
    _kcat_roundtrip(mini_broker, "kc", [], codec)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_kcat_old_protocol_message_sets(mini_broker, codec, monkeypatch):
    """Produce v0 / Fetch v0 / ListOffsets v0 / Metadata v0, as a 0.8.2 broker would see."""
    mini_broker.create_topic("legacy")
    seen = []
    real = mini_broker.dispatch

    def spy(request):
        seen.append((request.header.api_key, request.header.api_version))
        return real(request)

    monkeypatch.setattr(mini_broker._server, "handler", spy)
    _kcat_roundtrip(mini_broker, "legacy", LEGACY, codec)
    assert (0, 0) in seen and (1, 0) in seen
    assert 18 not in {key for key, _ in seen}
    assert all(version == 0 for key, version in seen if key in (0, 1, 2, 3))


def test_kcat_reads_modern_data_down_converted(mini_broker):
    mini_broker.create_topic("down")
    records = _expected("down")[:20]
    _confluent_produce(mini_broker.bootstrap, "down", "gzip", records)
    out = _kcat(
        [
            "-b",
            mini_broker.bootstrap,
            "-t",
            "down",
            "-C",
            "-e",
            "-o",
            "beginning",
            "-f",
            "%k=%s\\n",
            *LEGACY,
        ]
    )
    assert out.decode().splitlines() == [f"{k.decode()}={v.decode()}" for k, v in records]


def test_kcat_metadata_listing(mini_broker):
    mini_broker.create_topic("listed", partitions=3)
    out = _kcat(["-b", mini_broker.bootstrap, "-L"]).decode()
    assert 'topic "listed" with 3 partitions' in out
    assert "broker 0 at 127.0.0.1:" in out


def test_confluent_kafka_retries_through_injected_not_leader_errors(mini_broker):
    mini_broker.create_topic("retry")
    mini_broker.faults.inject(0, error=6, count=3)
    reports = _confluent_produce(
        mini_broker.bootstrap,
        "retry",
        "none",
        [(b"k", b"survives three NOT_LEADER answers")],
        extra={"retry.backoff.ms": 10, "linger.ms": 0},
    )
    assert reports == [(None, 0, 0)]
    assert mini_broker.faults.pending(0) == 0
    assert [k for k, kind in mini_broker.faults.fired] == [0, 0, 0]


def test_kafka_python_consumer_group(mini_broker):
    mini_broker.create_topic("kp-group", partitions=2)
    records = _expected("kpg")[:50]
    _kafka_python_produce(mini_broker.bootstrap, "kp-group", "none", records)
    consumer = kafka.KafkaConsumer(
        "kp-group",
        bootstrap_servers=mini_broker.bootstrap,
        group_id="kp-g",
        auto_offset_reset="earliest",
        consumer_timeout_ms=2000,
    )
    got, deadline = [], time.monotonic() + 30
    while len(got) < len(records) and time.monotonic() < deadline:
        got.extend((m.key, m.value) for m in consumer)
    consumer.commit()
    consumer.close()
    assert sorted(got) == sorted(records)
