"""SimpleConsumer reads what other clients wrote: confluent-kafka, kafka-python, kcat.

Every codec each client offers; kcat also through the 0.8.2 protocol (Produce v0, message
format v0 with old-style compressed wrappers), read back both by a modern SimpleConsumer and by
one that speaks the old protocol itself.
"""

import shutil
import subprocess

import pytest

from kclient.simple import FetchRequest, OffsetRequest, SimpleConsumer
from tests.needs import missing, need_module

confluent_kafka = need_module("confluent_kafka")
kafka = need_module("kafka")

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 300
LEGACY = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.8.2"]


def records(tag):
    return [
        (b"k%d" % (i % 17) if i % 5 else None, (b"%s-%d-" % (tag.encode(), i)) * (i % 9 + 1))
        for i in range(N)
    ]


def read_all(host, port, topic, partition=0, **kw):
    out = []
    with SimpleConsumer(
        host, port, so_timeout=10000, buffer_size=None, client_id="interop", **kw
    ) as c:
        end = c.get_offsets_before(topic, partition, OffsetRequest.LATEST_TIME)[0]
        offset = 0
        while offset < end:
            ms = c.fetch(FetchRequest(topic, partition, offset, 4096))
            got = list(ms)
            assert got, f"no progress at offset {offset}"
            out += got
            offset = got[-1].next_offset
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_reads_what_confluent_kafka_wrote(target, codec):
    topic = target.topic()
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": target.bootstrap,
            "linger.ms": 20,
            "compression.codec": codec,
            "batch.num.messages": 64,
        }
    )
    data = records(f"ck-{codec}")
    reports = []
    for key, value in data:
        producer.produce(
            topic,
            value,
            key,
            partition=0,
            on_delivery=lambda err, msg: reports.append((err, msg.offset())),
        )
    assert producer.flush(30) == 0 and all(err is None for err, _ in reports)
    got = read_all(target.host, target.port, topic)
    assert [(m.key, m.value) for m in got] == data
    assert [m.offset for m in got] == sorted(o for _, o in reports)
    if target.kind == "mini":  # tansu keeps no compressed batches: it recompresses nothing
        assert {m.message.compression_codec for m in got} == {CODECS.index(codec)}


@pytest.mark.parametrize("codec", CODECS)
def test_reads_what_kafka_python_wrote(target, codec):
    topic = target.topic()
    producer = kafka.KafkaProducer(
        bootstrap_servers=target.bootstrap,
        acks=1,
        linger_ms=20,
        batch_size=4096,
        compression_type=None if codec == "none" else codec,
    )
    data = records(f"kp-{codec}")
    futures = [producer.send(topic, key=k, value=v, partition=0) for k, v in data]
    producer.flush(30)
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    got = read_all(target.host, target.port, topic)
    assert [(m.key, m.value) for m in got] == data and [m.offset for m in got] == offsets


def kcat(args, stdin=None):
    if not shutil.which("kcat"):
        missing("kcat not installed (apt-get install kcat)")
    proc = subprocess.run(["kcat", *args], input=stdin, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("old_reader", [False, True], ids=["modern-reader", "old-reader"])
def test_reads_what_kcat_wrote_through_the_old_protocol(mini, codec, old_reader):
    topic = mini.topic(config={"message.format.version": "0"})
    lines = [f"key{i}:value-{i}-{codec}" * (1 + i % 3) for i in range(N)]
    args = ["-b", mini.bootstrap, "-t", topic, "-p", "0", "-P", "-K:", *LEGACY]
    if codec != "none":
        args += ["-z", codec]
    kcat(args, stdin=("\n".join(lines) + "\n").encode())
    kw = dict(api_version_request=False, broker_version_fallback="0.8.2") if old_reader else {}
    got = read_all(mini.host, mini.port, topic, **kw)
    expected = [line.split(":", 1) for line in lines]
    assert [(m.key.decode(), m.value.decode()) for m in got] == [(k, v) for k, v in expected]
    assert [m.offset for m in got] == list(range(N))
    assert {m.message.magic for m in got} == {0}
    if codec != "none":
        assert {m.message.compression_codec for m in got} == {
            ["none", "gzip", "snappy", "lz4"].index(codec)
        }


def test_read_committed_reads_confluent_kafka_transactions_on_the_mini_broker(mini):
    """confluent-kafka's transactional producer writes (commit, abort, commit); a
    read_committed SimpleConsumer sees the committed messages only, and reads past the
    markers to the log end."""
    topic = mini.topic()
    p = confluent_kafka.Producer(
        {"bootstrap.servers": mini.bootstrap, "transactional.id": f"ck-{topic}", "linger.ms": 5}
    )
    p.init_transactions(30)
    for tag, commit in (("c", True), ("a", False), ("d", True)):
        p.begin_transaction()
        for i in range(20):
            p.produce(topic, b"%s%d" % (tag.encode(), i), partition=0)
        p.flush(30)  # written before an abort (librdkafka drops unsent ones)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    with SimpleConsumer(
        mini.host, mini.port, so_timeout=10000, isolation_level="read_committed"
    ) as c:
        got = [m.message.value for m in c.iter_messages(topic, 0)]
        end = c.get_offsets_before(topic, 0, OffsetRequest.LATEST_TIME)[0]
        last = c.fetch(FetchRequest(topic, 0, end - 1, 4096))  # the last commit marker
    assert got == [b"c%d" % i for i in range(20)] + [b"d%d" % i for i in range(20)]
    assert list(last) == [] and last.next_offset == end == 63  # 60 records, 3 markers
