"""build_records through the C row builder (``_walk.build_rows``, when built) gives the records
its Python twin gives: every field, type, shared empty headers, decoders, one-record and
several-record slices, untracked when flat; and build_rows refuses what it cannot build."""

from __future__ import annotations

import gc
import sys

import pytest

import kclient.core.consumer_records as consumer_records
from kclient.core.consumer_records import NO_HEADERS, build_records
from kclient.core.message_set import ByteBufferMessageSet
from kclient.protocol.records import build_batch
from kclient.protocol.speedups import load_speedup
from kclient.structs import ConsumerRecord, ShareConsumerRecord, TopicPartition
from tests.needs import need_c

TP = TopicPartition("t", 3)
_walk = load_speedup("kclient.protocol.records._walk")


def _columns(keyed: bool):
    values = [b"v%d" % i for i in range(7)]
    extra = dict(keys=[b"k0", None, b"k2"] + [None] * 4) if keyed else {}
    if keyed:
        extra["headers"] = [[("h", b"1")], None, [("a", None), ("b", b"")]] + [None] * 4
    data = build_batch(values, base_offset=10, **extra) + build_batch([b"w"], base_offset=17)
    return ByteBufferMessageSet(data, 10, topic=TP.topic, partition=TP.partition).columns()


def _both(monkeypatch, *args):
    fast = build_records(*args)
    with monkeypatch.context() as m:
        m.setattr(consumer_records, "_build_rows", None)
        slow = build_records(*args)
    return fast, slow


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize(
    "kind", [(ConsumerRecord, (), False), (ShareConsumerRecord, (2,), True)], ids=["plain", "share"]
)
@pytest.mark.parametrize("decode", [False, True])
def test_the_c_rows_are_the_python_rows(monkeypatch, keyed, kind, decode):
    need_c(_walk, "the C row builder")
    cls, tail, empty_lists = kind
    cols = _columns(keyed)
    key = (lambda k: None if k is None else k.decode()) if decode else None
    value = bytes.upper if decode else None
    for i, j in ((0, 8), (2, 5), (4, 5)):
        fast, slow = _both(monkeypatch, TP, cols, i, j, key, value, empty_lists, cls, tail)
        assert fast == slow and [type(r) for r in fast] == [cls] * (j - i)
        assert [[type(f) for f in r] for r in fast] == [[type(f) for f in r] for r in slow]
        for f, s in zip(fast, slow):
            assert (f.headers is NO_HEADERS) == (s.headers is NO_HEADERS)
            assert gc.is_tracked(f) == gc.is_tracked(s)


def test_build_rows_refuses_what_it_cannot_build():
    need_c(_walk, "the C row builder")
    assert _walk is not None
    with pytest.raises(TypeError, match="builds tuples, not <class 'list'>"):
        _walk.build_rows(list, 1, (1,))
    assert _walk.build_rows(tuple, 2, ([1, 2], "x")) == [(1, "x"), (2, "x")]
    with pytest.raises(ValueError, match="field 2 has 1 values, not 2"):
        _walk.build_rows(ConsumerRecord, 2, ("t", 0, [1], [1, 2], [0, 0], None, [b"", b""], ()))
    with pytest.raises(ValueError, match="rows of 40 fields"):
        _walk.build_rows(ConsumerRecord, 1, (0,) * 40)
    value = b"held by the rows %d" % id(TP)
    before = sys.getrefcount(value)
    rows = _walk.build_rows(
        ConsumerRecord, 3, ("t", 0, [1, 2, 3], [0] * 3, [0] * 3, None, [value] * 3, ())
    )
    assert sys.getrefcount(value) == before + 3 and rows[2] == ("t", 0, 3, 0, 0, None, value, ())
    del rows
    assert sys.getrefcount(value) == before
