"""Migration traps from kafka-python and confluent-kafka (issue 15): batch.size is bytes, plain
callables serialize, and a kafka-python style send() call says what to write instead."""

from __future__ import annotations

import json

import pytest

from kclient import Producer, ProducerData
from kclient.producer import data, producer, send_path
from kclient.producer.data import _PyProducerData
from tests.needs import need_c

from .conftest import read_partition


def _reports(bootstrap: str, **cfg):
    got: list = []
    p = Producer(
        {
            "metadata.broker.list": bootstrap,
            "producer.type": "async",
            "queue.buffering.max.ms": 1000,
            **cfg,
        },
        on_report=got.append,
    )
    return p, got


def test_batch_size_is_bytes_per_partition_batch(mini_broker):
    mini_broker.create_topic("bytes", partitions=1)
    p, got = _reports(mini_broker.bootstrap, **{"batch.size": 16384})
    p.send([ProducerData("bytes", b"x" * 1000) for _ in range(100)])
    p.flush()
    p.close()
    sizes = [len(r) for r in got]
    assert sum(sizes) == 100 and all(r.ok for r in got)
    # 16384 // (1000 + 12 bytes of record overhead) = 16 records per batch at most
    assert max(sizes) == 16 and len(sizes) == 7, sizes
    assert len(read_partition(mini_broker.bootstrap, "bytes", 0)) == 100


def test_batch_num_messages_still_caps_the_count(mini_broker):
    mini_broker.create_topic("count", partitions=1)
    p, got = _reports(mini_broker.bootstrap, **{"batch.size": 1 << 20, "batch.num.messages": 10})
    for i in range(35):
        p.send(ProducerData("count", b"%d" % i))
    p.flush()
    p.close()
    assert sum(map(len, got)) == 35 and max(map(len, got)) <= 10


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_plain_callables_serialize_keys_and_values(mini_broker, mode):
    mini_broker.create_topic("calls", partitions=3)
    with Producer(
        {"metadata.broker.list": mini_broker.bootstrap, "producer.type": mode},
        value_serializer=lambda v: json.dumps(v).encode(),
        key_serializer=str.encode,
    ) as p:
        p.send([ProducerData("calls", {"n": i}, key=f"user-{i}") for i in range(6)])
        p.flush()
        want = {f"user-{i}": p.partition_for("calls", f"user-{i}") for i in range(6)}
    seen = {}
    for part in range(3):
        for rec in read_partition(mini_broker.bootstrap, "calls", part):
            seen[bytes(rec.key).decode()] = (part, json.loads(bytes(rec.value)))
    assert seen == {k: (want[k], {"n": int(k[5:])}) for k in want}


WRONG = [
    (
        ("t", b"v"),
        {},
        "not send('t', b'v'): write p.send(ProducerData('t', b'v')), or p.produce('t', b'v')",
    ),
    (("t",), {"value": b"v", "key": b"k"}, "ProducerData('t', b'v', key=b'k')"),
    ((("t", b"v"),), {}, "p.send(ProducerData('t', b'v'))"),
    (
        ("t", b"v"),
        {"on_delivery": print},
        "write p.send(ProducerData('t', b'v')), or p.produce('t', b'v', on_delivery=",
    ),
]


@pytest.mark.parametrize("args,kwargs,shown", WRONG)
@pytest.mark.parametrize("mode", ["sync", "async-c", "async-python"])
def test_a_wrong_send_call_shows_the_right_one(mini_broker, monkeypatch, mode, args, kwargs, shown):
    if mode == "async-python":
        monkeypatch.setattr(producer, "speedups", None)
        monkeypatch.setattr(send_path, "speedups", None)
        monkeypatch.setattr(producer, "ProducerData", _PyProducerData)
        monkeypatch.setattr(send_path, "ProducerData", _PyProducerData)
    elif mode == "async-c":
        need_c(data.speedups)
    with Producer(
        {"metadata.broker.list": mini_broker.bootstrap, "producer.type": mode.split("-")[0]}
    ) as p:
        with pytest.raises(TypeError) as info:
            p.send(*args, **kwargs)
        text = str(info.value)
        assert shown in text, text
        assert "_send" not in text and "FastSend" not in text and "__call__" not in text


def test_a_tuple_in_a_list_shows_the_right_call(mini_broker):
    with Producer({"metadata.broker.list": mini_broker.bootstrap, "producer.type": "async"}) as p:
        with pytest.raises(
            TypeError,
            match=r"not the tuple \('t', b'v'\): write "
            r"ProducerData\('t', b'v'\)",
        ):
            p.send([ProducerData("t", b"a"), ("t", b"v")])
