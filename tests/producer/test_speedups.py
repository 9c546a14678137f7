"""The producer's C speed-ups (kclient/producer/_speedups.pyx) against their Python twins: the
same ProducerData behaviour and the same async send(), message for message."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from kclient.errors import IllegalStateError, MessageSizeTooLargeError
from kclient.producer import Producer, data, producer, send_path
from kclient.producer.data import _PyProducerData
from tests.needs import c_twin

from .conftest import read_partition

C = data.speedups.ProducerData if data.speedups is not None else None
#: The C half of a twin test; test_the_speedups_are_built_here fails when a normal run lacks it.
needs_c = c_twin(C)
BOTH = [pytest.param(_PyProducerData, id="python"), pytest.param(C, id="c", marks=needs_c)]


def test_the_speedups_are_built_here():
    # the benchmarks and docs assume them; a build without a compiler falls back silently
    from kclient.protocol.records import v2_walk

    if os.environ.get("KCLIENT_PURE_PYTHON") == "1":
        assert data.speedups is None and data.ProducerData is _PyProducerData
        assert v2_walk._walk_plain is None  # the record walker's Python twin too
    else:
        assert data.speedups is not None, (
            "kclient/producer/_speedups.pyx is not built: run scripts/setup (pip install -e .)"
        )
        assert data.ProducerData is C
        assert v2_walk._walk_plain is not None, "kclient/protocol/records/_walk.pyx is not built"


@pytest.mark.parametrize("cls", BOTH)
def test_fields_and_optional_fields(cls):
    d = cls("t", b"v")
    assert (d.topic, d.value, d.key, d.partition, d.timestamp, d.headers, d._extra) == (
        "t",
        b"v",
        None,
        None,
        None,
        None,
        None,
    )
    d = cls("t", b"v", b"k", 3, 17, [("h", b"x")])
    assert d._extra == (b"k", 3, 17, [("h", b"x")])
    d.key = None
    d.partition = d.timestamp = d.headers = None
    assert d._extra is None, "all four None again packs to None (the send fast path's test)"
    d.timestamp = 5
    assert d._extra == (None, None, 5, None)
    with pytest.raises(AttributeError):
        d.other = 1  # slots only, no per-message dict


@pytest.mark.parametrize("cls", BOTH)
def test_repr_equality_hash(cls):
    d = cls("t", b"x" * 50, key=b"k")
    assert repr(d) == "ProducerData('t', b'" + "x" * 37 + "...', key=b'k')"
    assert repr(cls("t", "s", partition=2)) == "ProducerData('t', 's', partition=2)"
    assert d == cls("t", b"x" * 50, key=b"k") and d != cls("t", b"x" * 50)
    assert (d == 1) is False
    with pytest.raises(TypeError):
        hash(d)


@pytest.mark.parametrize("dump", BOTH)
@pytest.mark.parametrize("load_pure", [False, True])
def test_pickles_load_in_either_build(dump, load_pure, monkeypatch):
    if load_pure:
        monkeypatch.setattr(data, "ProducerData", _PyProducerData)
    blob = pickle.dumps(dump("t", b"v", key=b"k", headers=[("a", None)]))
    back = pickle.loads(blob)
    assert type(back) is data.ProducerData
    assert (back.topic, back.value, back._extra) == ("t", b"v", (b"k", None, None, [("a", None)]))


def _send_mix(bootstrap: str, topic: str, pure: bool, monkeypatch) -> list:
    """Send one of each kind of message with one send() each; the stored (key, value) pairs."""
    monkeypatch.setattr(producer, "speedups", None if pure else data.speedups)
    monkeypatch.setattr(send_path, "speedups", None if pure else data.speedups)
    cls = _PyProducerData if pure else C
    monkeypatch.setattr(producer, "ProducerData", cls)
    monkeypatch.setattr(send_path, "ProducerData", cls)
    p = Producer(
        {
            "metadata.broker.list": bootstrap,
            "producer.type": "async",
            "message.max.bytes": 1000,
            "batch.num.messages": 7,
        }
    )
    assert (type(p.send).__name__ == "FastSend") is not pure
    for i in range(30):
        p.send(cls(topic, b"plain-%d" % i))
        p.send(cls(topic, b"keyed-%d" % i, key=b"k%d" % i))
        p.send(
            cls(
                topic, b"pinned-%d" % i, partition=0, timestamp=1000 + i, headers=[("h", b"%d" % i)]
            )
        )
    p.send([cls(topic, b"list-%d" % i) for i in range(5)])
    with pytest.raises(MessageSizeTooLargeError):
        p.send(cls(topic, b"x" * 1001))
    with pytest.raises(MessageSizeTooLargeError):
        p.send(cls(topic, b"x" * 600, key=b"y" * 600))
    p.flush()
    assert p.stats == {"acknowledged": 95, "failed": 0, "batches": p.stats["batches"]}
    p.close()
    with pytest.raises(IllegalStateError):
        p.send(cls(topic, b"after close"))
    return [
        (r.key, r.value, r.timestamp if r.value.startswith(b"pinned") else None, r.headers)
        for r in read_partition(bootstrap, topic, 0)
    ]


@needs_c
def test_fast_send_matches_its_python_twin(mini_broker, monkeypatch):
    assert C is not None, "speed-ups not built: run scripts/setup (pip install -e .)"
    mini_broker.create_topic("sp-c", 1)
    mini_broker.create_topic("sp-py", 1)
    with_c = _send_mix(mini_broker.bootstrap, "sp-c", False, monkeypatch)
    with_py = _send_mix(mini_broker.bootstrap, "sp-py", True, monkeypatch)
    assert len(with_c) == 95
    assert with_c == with_py


@needs_c
def test_c_fields_read_like_slots():
    # member descriptors, as __slots__ makes them: CPython specialises their reads, which
    # Cython's default properties would make twice as slow for Python code reading messages
    for name in ("topic", "value", "_extra"):
        assert type(C.__dict__[name]) is type(_PyProducerData.__dict__[name])
    d = C("t", b"v")
    del d.value
    with pytest.raises(AttributeError, match="value"):
        _ = d.value


def test_pure_python_switch():
    code = (
        "from kclient.producer import data, producer, ProducerData as P; "
        "print(data.speedups, P.__module__, producer.speedups)"
    )
    env = dict(os.environ, KCLIENT_PURE_PYTHON="1")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["None", "kclient.producer.data", "None"]


@needs_c
def test_c_messages_stay_out_of_the_cycle_collector():
    # building lists of tracked messages ran the collector every 700 of them, over all of them
    import gc

    assert gc.is_tracked(_PyProducerData("t", b"v"))
    assert not gc.is_tracked(C("t", b"v", key=b"k", headers=[("h", b"x")]))
