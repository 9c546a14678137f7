"""Fetch of transactional data: read_committed at every version that has it, and the old
formats (down-conversion leaves markers and nothing else out)."""

from __future__ import annotations

import pytest

from kclient.broker import MiniBroker
from kclient.protocol import apis
from kclient.protocol.records import RecordsReader

from .txn_support import TXN_CONFIG, call, committed_aborted_open, fetch, values


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """t-0: c0 c1 (committed) marker, a0 (aborted) marker, plain, o0 (open)."""
    b = MiniBroker(log_dir=tmp_path_factory.mktemp("txn-fetch"), config=TXN_CONFIG).start()
    b.create_topic("t", 1)
    b.pid = committed_aborted_open(b, "t", "tx")
    yield b
    b.close()


@pytest.mark.parametrize("version", [4, 5, 7, 11, 12])
def test_read_committed_every_version(broker, version):
    f = fetch(broker, "t", 0, version=version)
    assert (f.high_watermark, f.last_stable_offset) == (7, 6)
    assert values(f.records) == [b"c0", b"c1", b"a0", b"plain"]  # a0 dropped by consumers
    assert [(a.producer_id, a.first_offset) for a in f.aborted_transactions] == [(broker.pid, 3)]
    batches = list(RecordsReader(bytes(f.records)).batches())
    assert [(b.base_offset, b.is_control) for b in batches] == [
        (0, False),
        (2, True),
        (3, False),
        (4, True),
        (5, False),
    ]
    assert fetch(broker, "t", 0, offset=5, version=version).aborted_transactions == []
    assert values(fetch(broker, "t", 0, offset=6, version=version).records) == []


@pytest.mark.parametrize("version", [4, 11])
def test_read_uncommitted_reports_the_lso_too(broker, version):
    f = fetch(broker, "t", 0, version=version, isolation=0)
    assert (f.high_watermark, f.last_stable_offset, f.aborted_transactions) == (7, 6, None)
    assert values(f.records) == [b"c0", b"c1", b"a0", b"plain", b"o0"]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_old_versions_get_messages_without_markers(broker, version):
    f = fetch(broker, "t", 0, version=version, isolation=0)
    entries = list(RecordsReader(bytes(f.records)).batches())
    assert {e.magic for e in entries} == ({0} if version < 2 else {1})
    assert [(r.offset, r.value) for r in RecordsReader(bytes(f.records))] == [
        (0, b"c0"),
        (1, b"c1"),
        (3, b"a0"),
        (5, b"plain"),
        (6, b"o0"),
    ]
    # at a marker's offset an old client gets the messages after it, never the marker
    assert [
        r.offset
        for r in RecordsReader(bytes(fetch(broker, "t", 0, offset=2, version=version).records))
    ] == [3, 5, 6]


@pytest.mark.parametrize("version", [2, 5])
def test_list_offsets_read_committed_latest_is_the_lso(broker, version):
    def latest(isolation, timestamp=-1):
        r = call(
            broker,
            apis.LIST_OFFSETS,
            version,
            {
                "replica_id": -1,
                "isolation_level": isolation,
                "topics": [
                    {"name": "t", "partitions": [{"partition_index": 0, "timestamp": timestamp}]}
                ],
            },
        )
        return r.topics[0].partitions[0].offset

    assert (latest(1), latest(0), latest(1, -2)) == (6, 7, 0)
