"""AddOffsetsToTxn and TxnOffsetCommit: staged offsets are visible only once the transaction
commits, dropped when it aborts, and survive a restart in either state."""

from __future__ import annotations

import pytest

from kclient.broker import MiniBroker
from kclient.protocol import apis
from kclient.protocol import errors as E

from .txn_support import TXN_CONFIG, call, end_txn, init


@pytest.fixture
def broker(tmp_path):
    b = MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG).start()
    b.create_topic("in", 2)
    yield b
    b.close()


def add_offsets(broker, pid, epoch, group="g", version=3, tid="tx"):
    return call(
        broker,
        apis.ADD_OFFSETS_TO_TXN,
        version,
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group},
    ).error_code


def txn_commit(broker, pid, epoch, offsets, group="g", version=3, tid="tx", **extra):
    r = call(
        broker,
        apis.TXN_OFFSET_COMMIT,
        version,
        {
            "transactional_id": tid,
            "group_id": group,
            "producer_id": pid,
            "producer_epoch": epoch,
            **extra,
            "topics": [
                {
                    "name": "in",
                    "partitions": [
                        {"partition_index": p, "committed_offset": o, "committed_metadata": "m"}
                        for p, o in offsets.items()
                    ],
                }
            ],
        },
    )
    return {p.partition_index: p.error_code for t in r.topics for p in t.partitions}


def committed(broker, group="g"):
    return {tp[1]: e.offset for tp, e in broker.coordinator.fetch_offsets(group).items()}


def offset_fetch(broker, group="g"):
    r = call(broker, apis.OFFSET_FETCH, 5, {"group_id": group, "topics": None})
    return {p.partition_index: p.committed_offset for t in r.topics for p in t.partitions}


def test_offsets_visible_on_commit_only(broker):
    pid = init(broker, "tx").producer_id
    assert add_offsets(broker, pid, 0) == 0
    assert txn_commit(broker, pid, 0, {0: 10, 1: 20}) == {0: 0, 1: 0}
    assert committed(broker) == {} and offset_fetch(broker) == {}
    assert end_txn(broker, "tx", pid, 0, True) == 0
    assert committed(broker) == {0: 10, 1: 20} and offset_fetch(broker) == {0: 10, 1: 20}
    # an aborted transaction's offsets are dropped
    assert add_offsets(broker, pid, 0) == 0
    assert txn_commit(broker, pid, 0, {0: 99}) == {0: 0}
    assert end_txn(broker, "tx", pid, 0, False) == 0
    assert committed(broker) == {0: 10, 1: 20}


def test_txn_offset_commit_needs_add_offsets_and_the_current_epoch(broker):
    pid = init(broker, "tx").producer_id
    assert txn_commit(broker, pid, 0, {0: 1}) == {0: E.InvalidTxnStateError.errno}
    assert add_offsets(broker, pid, 0) == 0
    assert txn_commit(broker, pid, 0, {0: 1}, group="other") == {0: E.InvalidTxnStateError.errno}
    init(broker, "tx")  # aborts the open transaction, bumps the epoch
    init(broker, "tx")
    assert txn_commit(broker, pid, 0, {0: 1}, version=3) == {0: E.ProducerFencedError.errno}
    assert txn_commit(broker, pid, 0, {0: 1}, version=2) == {0: E.InvalidProducerEpochError.errno}
    assert add_offsets(broker, pid, 0, version=2) == E.ProducerFencedError.errno
    assert add_offsets(broker, pid, 0, version=1) == E.InvalidProducerEpochError.errno
    assert committed(broker) == {}


def test_txn_offset_commit_checks_a_given_member(broker):
    pid = init(broker, "tx").producer_id
    add_offsets(broker, pid, 0)
    got = txn_commit(broker, pid, 0, {0: 1}, member_id="nobody", generation_id=1)
    assert got == {0: 0}  # no such group yet: Kafka accepts (and creates it)
    assert end_txn(broker, "tx", pid, 0, True) == 0 and committed(broker) == {0: 1}


def test_pending_and_committed_offsets_survive_restarts(tmp_path):
    b = MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG).start()
    try:
        b.create_topic("in", 2)
        pid = init(b, "tx").producer_id
        add_offsets(b, pid, 0)
        txn_commit(b, pid, 0, {0: 5})
        end_txn(b, "tx", pid, 0, True)
        add_offsets(b, pid, 0)
        txn_commit(b, pid, 0, {0: 7, 1: 3})  # staged, still open
        b.kill()
        b.start()
        assert committed(b) == {0: 5}
        pending = b.coordinator.offsets.pending(pid)
        assert {tp: e.offset for tp, e in pending["g"].items()} == {("in", 0): 7, ("in", 1): 3}
        assert end_txn(b, "tx", pid, 0, True) == 0
        assert committed(b) == {0: 7, 1: 3}
        b.stop()
        b.start()
        assert committed(b) == {0: 7, 1: 3} and b.coordinator.offsets.pending(pid) == {}
    finally:
        b.close()


def test_compaction_drops_aborted_offsets_and_keeps_the_committed_ones(tmp_path):
    """An aborted TxnOffsetCommit is the latest record of its key: the cleaner must not let it
    shadow the committed one (Kafka's cleaner removes aborted transactions first)."""
    from kclient.broker.offsets import OffsetEntry, OffsetManager

    m = OffsetManager(tmp_path, {"log.cleaner.enable": "true", "log.cleaner.backoff.ms": "60000"})
    m.start()
    try:
        m.txn_commit("g", 7, 0, {("in", 0): OffsetEntry(5)})
        m.end_txn(7, 0, commit=True)
        m.txn_commit("g", 7, 0, {("in", 0): OffsetEntry(9)})
        m.end_txn(7, 0, commit=False)
        m.txn_commit("g", 8, 0, {("in", 1): OffsetEntry(3)})  # still open: not cleanable
        m.commit("g", {("in", 2): OffsetEntry(1)})
        m.compact()
        assert {tp: e.offset for tp, e in m.fetch("g").items()} == {("in", 0): 5, ("in", 2): 1}
        values = [r.value for r in _records(m.log)]
        assert OffsetEntry(9).to_value() not in values  # the aborted one is gone
        assert OffsetEntry(3).to_value() in values  # the open one is not
    finally:
        m.close()
    m = OffsetManager(tmp_path, {"log.cleaner.enable": "false"})
    m.start()
    try:
        assert {tp: e.offset for tp, e in m.fetch("g").items()} == {("in", 0): 5, ("in", 2): 1}
        m.end_txn(8, 0, commit=True)
        assert m.fetch("g")[("in", 1)].offset == 3
    finally:
        m.close()


def _records(log):
    from kclient.broker.state_log import read_batches

    return [r for b in read_batches(log) if not b.is_control for r in b.records]
