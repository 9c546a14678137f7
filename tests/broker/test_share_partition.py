"""The share-partition state machine (KIP-932): locks, expiry, delivery limit, archive, release
to another member, and its persisted snapshot surviving a reopen of the state store."""

from __future__ import annotations

import pytest

from kclient.broker.share.partition import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    REJECT,
    RELEASE,
    RENEW,
    InvalidRecordState,
    SharePartition,
)
from kclient.broker.share.store import PartitionSnapshot, ShareStateStore


def batches(*spans: tuple[int, int]):
    """A log reader listing the given (first, last) batches from SPEO on."""

    def read(start: int):
        return [(a, b, True) for a, b in spans if b >= start]

    return read


def test_acquire_locks_whole_batches_and_counts_a_delivery():
    sp = SharePartition(0, lock_ms=1000)
    got = sp.acquire("a", 0.0, 3, batches((0, 1), (2, 4), (5, 9)))
    assert got == [(0, 4, 1)]  # the second batch is taken whole (batch alignment)
    assert (sp.start, sp.end) == (0, 5)
    assert sp.acquire("b", 0.1, 10, batches((0, 1), (2, 4), (5, 9))) == [(5, 9, 1)]
    assert sp.counts()["acquired"] == 10


def test_accept_moves_the_start_offset_and_others_cannot_ack():
    sp = SharePartition(0)
    sp.acquire("a", 0.0, 10, batches((0, 4)))
    with pytest.raises(InvalidRecordState):
        sp.acknowledge("b", [(0, 0, [ACCEPT])], 0.1)
    sp.acknowledge("a", [(0, 2, [ACCEPT])], 0.1)
    assert (sp.start, sp.end) == (3, 5)
    with pytest.raises(InvalidRecordState):  # already done
        sp.acknowledge("a", [(2, 3, [ACCEPT])], 0.1)
    assert sp.records[3].state == ACQUIRED  # all or nothing: 3 untouched


def test_release_goes_to_another_member_with_a_higher_delivery_count():
    sp = SharePartition(0)
    sp.acquire("a", 0.0, 10, batches((0, 2)))
    sp.acknowledge("a", [(0, 2, [ACCEPT, RELEASE, ACCEPT])], 0.1)
    assert sp.start == 1 and sp.records[1].state == AVAILABLE
    assert sp.acquire("b", 0.2, 10, batches((0, 2))) == [(1, 1, 2)]
    sp.acknowledge("b", [(1, 1, [ACCEPT])], 0.3)
    assert (sp.start, sp.end, sp.records) == (3, 3, {})


def test_expired_lock_makes_records_available_and_the_late_ack_fails():
    sp = SharePartition(0, lock_ms=500)
    sp.acquire("a", 10.0, 10, batches((0, 1)))
    assert sp.expire(10.4) == 0
    assert sp.acquire("b", 10.6, 10, batches((0, 1))) == [(0, 1, 2)]
    with pytest.raises(InvalidRecordState):
        sp.acknowledge("a", [(0, 1, [ACCEPT])], 10.7)


def test_renew_extends_the_lock():
    sp = SharePartition(0, lock_ms=500)
    sp.acquire("a", 0.0, 10, batches((0, 0)))
    sp.acknowledge("a", [(0, 0, [RENEW])], 0.4)
    assert sp.expire(0.8) == 0 and sp.records[0].state == ACQUIRED
    assert sp.expire(0.95) == 1


def test_delivery_limit_archives_and_the_record_is_never_delivered_again():
    sp = SharePartition(0, lock_ms=100, delivery_limit=3)
    read = batches((0, 0), (1, 1))
    now = 0.0
    for attempt in (1, 2, 3):
        assert sp.acquire("a", now, 1, read)[0] == (0, 0, attempt)
        now += 0.2  # the lock expires
    assert sp.acquire("a", now, 1, read) == [(1, 1, 1)]
    assert sp.start == 1  # offset 0 archived, out of the window


def test_reject_and_gap_archive():
    sp = SharePartition(0)
    sp.acquire("a", 0.0, 10, batches((0, 2)))
    sp.acknowledge("a", [(0, 0, [REJECT]), (1, 1, [GAP])], 0.0)
    assert sp.start == 2
    sp.release_member("a")
    assert sp.records[2].state == AVAILABLE


def test_undeliverable_batches_and_holes_are_archived_unseen():
    sp = SharePartition(0)
    read = lambda start: [(0, 1, True), (2, 2, False), (5, 6, True)]  # noqa: E731
    assert sp.acquire("a", 0.0, 10, read) == [(0, 1, 1), (5, 6, 1)]
    sp.acknowledge("a", [(0, 1, [ACCEPT])], 0.0)
    assert sp.start == 5  # 2 (marker) and 3-4 (hole) archived


def test_max_locks_bounds_the_window():
    sp = SharePartition(0, max_locks=4)
    read = batches(*[(i, i) for i in range(20)])
    assert sp.acquire("a", 0.0, 100, read) == [(0, 3, 1)]
    assert sp.acquire("b", 0.0, 100, read) == []
    sp.acknowledge("a", [(0, 1, [ACCEPT])], 0.0)
    assert sp.acquire("b", 0.0, 100, read) == [(4, 5, 1)]


def test_member_leaving_releases_its_records_only():
    sp = SharePartition(0)
    sp.acquire("a", 0.0, 2, batches((0, 1), (2, 3)))
    sp.acquire("b", 0.0, 2, batches((0, 1), (2, 3)))
    assert sp.release_member("a") == 2
    assert [sp.records[o].state for o in range(4)] == [AVAILABLE, AVAILABLE, ACQUIRED, ACQUIRED]


def test_snapshot_round_trip_takes_locks_away_and_keeps_counts(tmp_path):
    sp = SharePartition(0, delivery_limit=2)
    sp.acquire("a", 0.0, 10, batches((0, 3)))
    sp.acknowledge("a", [(1, 1, [ACCEPT]), (2, 2, [RELEASE])], 0.0)
    snap = PartitionSnapshot(b"\x01" * 16, 3, sp.start, tuple(sp.state_batches()))
    store = ShareStateStore(tmp_path)
    store.start()
    store.write({("g", "t", 0): snap}, {"g": 7}, {"g": {"share.auto.offset.reset": "earliest"}})
    store.close()
    again = ShareStateStore(tmp_path)
    again.start()
    try:
        assert again.partitions[("g", "t", 0)] == snap
        assert again.groups == {"g": 7}
        assert again.configs["g"]["share.auto.offset.reset"] == "earliest"
        restored = SharePartition(0, delivery_limit=2)
        restored.restore(snap.start, snap.batches, snap.state_epoch)
        states = {o: (r.state, r.delivery_count) for o, r in restored.records.items()}
        assert states == {
            0: (AVAILABLE, 1),
            1: (ACKNOWLEDGED, 1),
            2: (AVAILABLE, 1),
            3: (AVAILABLE, 1),
        }
        assert restored.acquire("b", 0.0, 10, batches((0, 3))) == [(0, 0, 2), (2, 3, 2)]
        again.delete_group("g")
        assert not again.partitions and not again.groups and not again.configs
    finally:
        again.close()


def test_restored_record_at_the_delivery_limit_is_archived():
    sp = SharePartition(0, delivery_limit=2)
    sp.restore(0, [(0, 0, AVAILABLE, 2), (1, 1, ACQUIRED, 1)])
    assert sp.start == 1 and sp.records[1].state == AVAILABLE
    assert ARCHIVED not in {r.state for r in sp.records.values()}


def test_a_session_starts_each_fetch_one_partition_further():
    from kclient.broker.share.sessions import ShareSessions

    sessions = ShareSessions()
    code, session, _ = sessions.update("g", "m", 0, [("t", 0), ("t", 1), ("u", 0)], [])
    assert code == 0 and session is not None
    orders = [session.fetch_order() for _ in range(4)]
    assert [o[0] for o in orders] == [("t", 0), ("t", 1), ("u", 0), ("t", 0)]
    assert all(sorted(o) == sorted(session.partitions) for o in orders)
