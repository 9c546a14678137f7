"""bytearray and memoryview values (Spark's BinaryType) go through the producer as they are:
send_values, send and produce, sync and async, every codec, read back byte-exact; a value changed
after its batch was encoded never reaches a retry; wrong types are refused by name."""

from __future__ import annotations

import time
from array import array

import pytest

from kclient import Producer
from kclient.errors import FailedToSendMessageError
from kclient.producer import producer, send_path
from kclient.producer.batches import PartitionBatch, n_uniform
from kclient.producer.buffers import is_plain, plain_lengths
from kclient.producer.data import _PyProducerData
from kclient.protocol import compression
from kclient.protocol.records import RecordsReader

from .conftest import read_partition

NOT_LEADER = 6
PRODUCE = 0  # api key


def _values(n: int, size: int | None = None) -> list[bytes]:
    """``n`` distinct values, all ``size`` bytes long when given (the uniform path)."""
    if size is None:
        return [b"v%d-" % i + b"x" * (i % 7) for i in range(n)]
    return [(b"%08d" % i).ljust(size, b"-") for i in range(n)]


def _log(bootstrap: str, topic: str) -> list[bytes]:
    return [bytes(r.value) for r in read_partition(bootstrap, topic, 0)]


MODES = ["sync", "async-c", "async-python"]
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _mode(name: str, monkeypatch) -> str:
    """Producer mode; async-python runs the Python twins of the C speed-ups."""
    if name == "async-python":
        monkeypatch.setattr(producer, "speedups", None)
        monkeypatch.setattr(send_path, "speedups", None)
        monkeypatch.setattr(producer, "ProducerData", _PyProducerData)
        monkeypatch.setattr(send_path, "ProducerData", _PyProducerData)
    return name.split("-")[0]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    return _mode(request.param, monkeypatch)


def test_plain_lengths_takes_bytes_likes_and_refuses_the_rest():
    assert plain_lengths([b"ab", bytearray(b"abc"), memoryview(b"abcd")]) == [2, 3, 4]
    assert plain_lengths([memoryview(b"abcdef")[1:4]]) == [3]
    assert plain_lengths([memoryview(array("i", [1, 2]))]) is None  # 2 items, 8 bytes
    assert plain_lengths([memoryview(b"abcdef")[::2]]) is None  # strided
    assert plain_lengths([memoryview(array("i", [1, 2])).cast("B")]) == [8]
    assert plain_lengths([b"a", None]) is None
    assert plain_lengths([b"a", "text"]) is None
    assert is_plain([None, bytearray(b"x"), b"y"]) and not is_plain([None, 3])


def test_uniform_path_takes_bytearray_and_measures_it_again():
    vals = [bytearray(b"abcd"), b"efgh"]
    assert n_uniform(vals, [4, 4])
    vals[0].extend(b"!")  # resized after the caller measured it
    assert not n_uniform(vals, [4, 4])


# sync covers the codecs' shared path with two of them: keeps the run short
@pytest.mark.parametrize(
    "mode_name,codec",
    [(m, c) for m in MODES for c in CODECS if m != "sync" or c in ("none", "lz4")],
)
@pytest.mark.parametrize("uniform", [True, False])
def test_send_values_bytearray_and_memoryview_read_back(
    mini_broker, monkeypatch, mode_name, codec, uniform
):
    mode = _mode(mode_name, monkeypatch)
    topic = f"ba-{mode}-{codec}-{uniform}"
    mini_broker.create_topic(topic, 1)
    want = _values(3000, 100 if uniform else None)
    sent = [bytearray(v) if i % 3 else memoryview(v) for i, v in enumerate(want)]
    reports: list = []
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": mode,
            "compression.codec": codec,
            "batch.num.messages": 1000,
        },
        on_report=reports.append,
    ) as p:
        p.send_values(topic, sent)
        p.flush()
        parts = p.metrics()["partitions"]
    assert _log(mini_broker.bootstrap, topic) == want
    assert sum(len(r) for r in reports if r.ok) == 3000
    assert [bytes(m.value) for r in reports for m in r.messages] == want
    assert parts[f"{topic}/0"]["messages"] == 3000
    if codec == "none":  # record bytes counted: at least the values themselves
        assert parts[f"{topic}/0"]["bytes"] >= sum(map(len, want))


def test_send_and_produce_take_bytearray_values_and_keys(mini_broker, mode):
    topic = f"ba-one-{mode}"
    mini_broker.create_topic(topic, 3)
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": mode,
            "compression.codec": "gzip",
        }
    ) as p:
        p.send(
            [
                producer.ProducerData(topic, bytearray(b"a%d" % i), key=bytearray(b"k%d" % i))
                for i in range(20)
            ]
        )
        p.send(producer.ProducerData(topic, memoryview(b"single"), key=b"k0"))
        futs = [
            p.produce(topic, bytearray(b"f%d" % i), key=memoryview(b"k%d" % i)) for i in range(20)
        ]
        p.flush()
        mds = [f.result(timeout=10) for f in futs]
        by_key = {i: p.partition_for(topic, b"k%d" % i) for i in range(20)}
    logs = {
        part: {r.offset: r for r in read_partition(mini_broker.bootstrap, topic, part)}
        for part in range(3)
    }
    for i, md in enumerate(mds):  # RecordMetadata names where each landed
        rec = logs[md.partition][md.offset]
        assert (bytes(rec.key), bytes(rec.value)) == (b"k%d" % i, b"f%d" % i)
        assert md.partition == by_key[i]  # keys hashed as their bytes
    records = [r for log in logs.values() for r in log.values()]
    assert sorted(bytes(r.value) for r in records if bytes(r.value).startswith(b"a")) == sorted(
        b"a%d" % i for i in range(20)
    )
    assert any(bytes(r.value) == b"single" for r in logs[by_key[0]].values())


@pytest.mark.parametrize("idempotent", [False, True])
def test_mutation_after_encoding_never_reaches_a_retry(mini_broker, idempotent):
    topic = f"ba-mutate-{idempotent}"
    mini_broker.create_topic(topic, 1)
    want = _values(500, 100)
    sent = [bytearray(v) for v in want]
    mini_broker.faults.inject(PRODUCE, error=NOT_LEADER, count=1)
    reports: list = []
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "retry.backoff.ms": 1500,
            "enable.idempotence": idempotent,
            "acks": "all",
        },
        on_report=reports.append,
    ) as p:
        p.send_values(topic, sent)
        deadline = time.monotonic() + 10
        while mini_broker.faults.pending(PRODUCE) and time.monotonic() < deadline:
            time.sleep(0.005)  # the first attempt was refused: the retry waits 1.5 s
        assert not mini_broker.faults.pending(PRODUCE)
        for b in sent:  # the caller reuses its buffers (one even grows)
            b[:] = b"X" * 100
        sent[7].extend(b"more")
        p.flush()
    assert reports and all(r.ok for r in reports) and reports[0].attempts == 2
    assert _log(mini_broker.bootstrap, topic) == want


def test_retry_to_another_format_encodes_the_first_encoding_again():
    vals = [bytearray(b"value-%d" % i) for i in range(10)]
    keys = [bytearray(b"k%d" % i) for i in range(10)]
    b = PartitionBatch("t", 0, None, vals, keys, codec=compression.GZIP)
    first = bytes(b.encode(2))
    for v in vals:
        v[:] = b"changed"
    b.set_sequence(5, 1, 0)  # idempotence stamped after the first encoding
    stamped = b.encode(2)
    assert [bytes(r.value) for r in RecordsReader(bytes(stamped))] == [
        b"value-%d" % i for i in range(10)
    ]
    b.set_sequence(-1, -1, -1)
    assert bytes(b.encode(2)) == first  # the stamp comes off: the first encoding again
    legacy = b.encode(1)  # a broker of the old format: decoded, then encoded
    assert [(bytes(r.key), bytes(r.value)) for r in RecordsReader(bytes(legacy))] == [
        (b"k%d" % i, b"value-%d" % i) for i in range(10)
    ]


def test_wrong_value_types_are_refused_by_name(mini_broker, mode):
    topic = f"ba-wrong-{mode}"
    mini_broker.create_topic(topic, 1)
    with Producer({"metadata.broker.list": mini_broker.bootstrap, "producer.type": mode}) as p:
        with pytest.raises(FailedToSendMessageError) as err:
            p.send_values(topic, [b"ok", bytearray(b"ok"), 42, "text"])
            p.flush()
        text = str(err.value) + " ".join(str(e) for _, e in err.value.failed)
        assert "int" in text and "str" in text and "DefaultEncoder" in text
        assert sorted(repr(m.value) for m, _ in err.value.failed) == ["'text'", "42"]
    assert sorted(_log(mini_broker.bootstrap, topic)) == [b"ok", b"ok"]


@pytest.mark.parametrize("mode_name", ["async-c", "async-python"])  # the async producer's
def test_single_bytearray_sends_take_the_fast_path(mini_broker, monkeypatch, mode_name):
    """send() and produce() of one bytearray value queue it without the size check's Python
    call (C speed-ups and their Python twins alike); other bytes-likes are checked."""
    _mode(mode_name, monkeypatch)
    checked: list = []
    real = Producer._check_size
    monkeypatch.setattr(
        Producer, "_check_size", lambda self, d: (checked.append(type(d.value)), real(self, d))[1]
    )
    topic = "ba-fast"
    mini_broker.create_topic(topic, 1)
    with Producer({"metadata.broker.list": mini_broker.bootstrap, "producer.type": "async"}) as p:
        p.send(producer.ProducerData(topic, bytearray(b"one")))
        f = p.produce(topic, bytearray(b"two"))
        p.send(producer.ProducerData(topic, memoryview(b"three")))
        p.flush()
        assert f.result(timeout=10).offset == 1
    assert checked == [memoryview]
    assert _log(mini_broker.bootstrap, topic) == [b"one", b"two", b"three"]


@pytest.mark.parametrize(
    "magic,codec",
    [  # zstd needs message format v2
        (m, c)
        for m in (0, 1, 2)
        for c in (
            compression.NONE,
            compression.GZIP,
            compression.SNAPPY,
            compression.LZ4,
            compression.ZSTD,
        )
        if c != compression.ZSTD or m == 2
    ],
)
def test_every_format_and_codec_encodes_bytes_likes_as_their_bytes(magic, codec):
    for want in (_values(200), _values(200, 64)):  # mixed lengths and the uniform path
        sent = [memoryview(v) if i % 2 else bytearray(v) for i, v in enumerate(want)]
        batch = PartitionBatch("t", 0, None, sent, codec=codec, lengths=list(map(len, sent)))
        got = list(RecordsReader(bytes(batch.encode(magic))))
        assert [bytes(r.value) for r in got] == want
