"""Partition batch encoding: each message format, caching, size splits."""

from __future__ import annotations

import pytest

from kclient.producer import DeliveryReport, ProducerData
from kclient.producer.batches import (
    MAX_BATCH_BYTES,
    PartitionBatch,
    split_by_size,
)
from kclient.protocol.records import RecordsReader, build_message_set


def test_partition_batch_encodes_each_format_and_caches():
    msgs = [ProducerData("t", b"v%d" % i, key=b"k") for i in range(3)]
    b = PartitionBatch("t", 0, msgs, [m.value for m in msgs], [b"k"] * 3, None, None, 0)
    v2 = b.encode(2)
    assert b.encode(2) is v2
    assert b.encode(1) == build_message_set(
        [m.value for m in msgs], [b"k"] * 3, magic=1, timestamp=b.created
    )
    assert b.encode(0) == build_message_set([m.value for m in msgs], [b"k"] * 3, magic=0)
    recs = list(RecordsReader(v2))
    assert [(bytes(r.key), bytes(r.value)) for r in recs] == [(b"k", m.value) for m in msgs]


def test_headers_refused_for_old_formats():
    from kclient.errors import UnsupportedVersionError

    m = ProducerData("t", b"v", headers=[("h", b"1")])
    b = PartitionBatch("t", 0, [m], [b"v"], None, None, [[("h", b"1")]], 0)
    assert b.encode(2)
    with pytest.raises(UnsupportedVersionError, match="headers"):
        b.encode(1)


def test_split_by_size():
    assert split_by_size([10] * 10, 1000) == []
    cuts = split_by_size([400_000] * 5, MAX_BATCH_BYTES)
    assert cuts == [2, 4]


def test_delivery_report_views():
    msgs = [ProducerData("t", b"a"), ProducerData("t", b"b")]
    ok = DeliveryReport("t", 1, msgs, 10)
    assert ok.ok and len(ok) == 2 and list(ok.offsets) == [10, 11] and ok.failed == []
    bad = DeliveryReport("t", 1, msgs, -1, RuntimeError("x"))
    assert not bad.ok and list(bad) == [(msgs[0], -1), (msgs[1], -1)]
    assert [m for m, _ in bad.failed] == msgs and bad.metadata() == []
    assert "error=RuntimeError" in repr(bad)


def test_producer_data_basics():
    import pickle

    d = ProducerData("t", b"x" * 100, key=b"k", partition=2)
    assert pickle.loads(pickle.dumps(d)) == d
    assert "..." in repr(d) and "partition=2" in repr(d)
    assert d != ProducerData("t", b"y")
