"""Transaction coordinator on a real MiniBroker: InitProducerId, AddPartitionsToTxn, EndTxn,
fencing, CONCURRENT_TRANSACTIONS, timeouts, and state kept in __transaction_state."""

from __future__ import annotations

import time

import pytest

from kclient.broker import MiniBroker
from kclient.broker.txn_log import java_hash, partition_for
from kclient.broker.txn_schema import TxnState
from kclient.protocol import apis
from kclient.protocol import errors as E

from .txn_support import (
    CONCURRENT,
    FENCED,
    INVALID_TXN_STATE,
    OLD_FENCED,
    TXN_CONFIG,
    add_partitions,
    call,
    end_txn,
    fetch,
    init,
    produce,
    values,
)


@pytest.fixture
def broker(tmp_path):
    b = MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG).start()
    b.create_topic("t", partitions=2)
    yield b
    b.close()


def test_partition_for_is_kafkas():
    # String.hashCode() as Java 17 computes it (UTF-16 units: the emoji is a surrogate pair)
    assert java_hash("hello") == 99162322
    assert java_hash("transactional-id-\u00fc") == 1051134094
    assert java_hash("a-much-longer-transactional-id-0123456789") == -683700381
    assert java_hash("\U0001f600x") == 54959989
    assert (
        partition_for("a-much-longer-transactional-id-0123456789", 50)
        == (-683700381 & 0x7FFFFFFF) % 50
    )
    assert partition_for("hello", 50) == 99162322 % 50


def test_find_coordinator_for_a_transactional_id(broker):
    r = call(broker, apis.FIND_COORDINATOR, 3, {"key": "tx", "key_type": 1})
    assert (r.error_code, r.node_id, r.port) == (0, broker.node_id, broker.port)


def test_init_new_id_then_bump_fences_the_old_epoch(broker):
    r = init(broker, "tx")
    assert (r.error_code, r.producer_epoch) == (0, 0) and r.producer_id >= 0
    pid = r.producer_id
    r2 = init(broker, "tx")
    assert (r2.error_code, r2.producer_id, r2.producer_epoch) == (0, pid, 1)
    # the zombie (epoch 0) is fenced: PRODUCER_FENCED from v2 on, INVALID_PRODUCER_EPOCH before
    assert add_partitions(broker, "tx", pid, 0, [("t", 0)], version=2) == {("t", 0): FENCED}
    assert add_partitions(broker, "tx", pid, 0, [("t", 0)], version=1) == {("t", 0): OLD_FENCED}
    assert end_txn(broker, "tx", pid, 0, True, version=2) == FENCED
    assert end_txn(broker, "tx", pid, 0, True, version=1) == OLD_FENCED
    # InitProducerId v3+ naming a stale epoch: fenced (v3 in the old code)
    assert init(broker, "tx", version=4, producer_id=pid, epoch=7).error_code == FENCED
    assert init(broker, "tx", version=3, producer_id=pid, epoch=7).error_code == OLD_FENCED
    # a wrong producer id is no mapping of this transactional id
    assert add_partitions(broker, "tx", pid + 1, 1, [("t", 0)]) == {
        ("t", 0): E.InvalidProducerIdMappingError.errno
    }


def test_init_refuses_a_timeout_above_the_broker_maximum(broker):
    assert (
        init(broker, "tx", timeout_ms=900001).error_code == E.InvalidTransactionTimeoutError.errno
    )
    assert init(broker, "tx", timeout_ms=0).error_code == E.InvalidTransactionTimeoutError.errno
    assert init(broker, "tx", timeout_ms=900000).error_code == 0


def test_commit_and_abort_write_markers_and_move_the_lso(broker):
    r = init(broker, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    log0 = broker.log_manager.get_log("t", 0)
    assert add_partitions(broker, "tx", pid, epoch, [("t", 0), ("t", 1)]) == {
        ("t", 0): 0,
        ("t", 1): 0,
    }
    assert broker.txn_coordinator.get("tx").state == TxnState.ONGOING
    assert (
        produce(broker, "t", 0, [b"a", b"b"], pid=pid, epoch=epoch, seq=0, tid="tx").error_code == 0
    )
    produce(broker, "t", 0, [b"plain"])  # non-transactional, after the txn start
    assert (log0.last_stable_offset, log0.log_end_offset) == (0, 3)
    f = fetch(broker, "t", 0)
    assert (f.high_watermark, f.last_stable_offset, values(f.records)) == (3, 0, [])
    assert values(fetch(broker, "t", 0, isolation=0).records) == [b"a", b"b", b"plain"]
    assert end_txn(broker, "tx", pid, epoch, True) == 0
    assert broker.txn_coordinator.get("tx").state == TxnState.COMPLETE_COMMIT
    # a marker in both partitions (t-1 had no data: the marker is written all the same)
    assert (log0.log_end_offset, log0.last_stable_offset) == (4, 4)
    assert broker.log_manager.get_log("t", 1).log_end_offset == 1
    f = fetch(broker, "t", 0)
    assert (f.last_stable_offset, values(f.records), list(f.aborted_transactions)) == (
        4,
        [b"a", b"b", b"plain"],
        [],
    )
    assert end_txn(broker, "tx", pid, epoch, True) == 0  # a retried commit
    assert end_txn(broker, "tx", pid, epoch, False) == INVALID_TXN_STATE
    # second transaction: aborted
    assert add_partitions(broker, "tx", pid, epoch, [("t", 0)]) == {("t", 0): 0}
    produce(broker, "t", 0, [b"x", b"y"], pid=pid, epoch=epoch, seq=2, tid="tx")
    assert end_txn(broker, "tx", pid, epoch, False) == 0
    f = fetch(broker, "t", 0)
    assert f.last_stable_offset == 7
    assert [(a.producer_id, a.first_offset) for a in f.aborted_transactions] == [(pid, 4)]
    assert fetch(broker, "t", 0, isolation=0).aborted_transactions is None
    assert end_txn(broker, "tx", pid, epoch, False) == 0  # a retried abort
    assert end_txn(broker, "tx", pid, epoch, True) == INVALID_TXN_STATE


def test_end_txn_without_a_transaction_is_invalid(broker):
    r = init(broker, "tx")
    assert end_txn(broker, "tx", r.producer_id, r.producer_epoch, True) == INVALID_TXN_STATE


def test_produce_to_a_partition_not_in_the_transaction_is_refused(broker):
    r = init(broker, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    assert (
        produce(broker, "t", 0, [b"a"], pid=pid, epoch=epoch, seq=0, tid="tx").error_code
        == INVALID_TXN_STATE
    )
    add_partitions(broker, "tx", pid, epoch, [("t", 1)])
    assert (
        produce(broker, "t", 0, [b"a"], pid=pid, epoch=epoch, seq=0, tid="tx").error_code
        == INVALID_TXN_STATE
    )
    assert produce(broker, "t", 1, [b"a"], pid=pid, epoch=epoch, seq=0, tid="tx").error_code == 0
    assert broker.log_manager.get_log("t", 0).log_end_offset == 0


def test_add_partitions_of_an_unknown_topic(broker):
    r = init(broker, "tx")
    assert add_partitions(broker, "tx", r.producer_id, 0, [("t", 0), ("nope", 0), ("t", 9)]) == {
        ("t", 0): E.OperationNotAttemptedError.errno,
        ("nope", 0): E.UnknownTopicOrPartitionError.errno,
        ("t", 9): E.UnknownTopicOrPartitionError.errno,
    }


def test_init_with_an_ongoing_transaction_aborts_it_fencing_the_producer(broker):
    r = init(broker, "tx")
    pid = r.producer_id
    add_partitions(broker, "tx", pid, 0, [("t", 0)])
    produce(broker, "t", 0, [b"zombie"], pid=pid, epoch=0, seq=0, tid="tx")
    assert init(broker, "tx").error_code == CONCURRENT  # aborting; the client retries
    meta = broker.txn_coordinator.get("tx")
    assert (meta.state, meta.producer_epoch) == (TxnState.COMPLETE_ABORT, 1)
    r = init(broker, "tx")
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, 2)
    f = fetch(broker, "t", 0)
    assert (f.last_stable_offset, values(f.records)) == (2, [b"zombie"])
    assert [a.first_offset for a in f.aborted_transactions] == [0]
    # the zombie's late write is refused by the partition (its epoch is below the marker's)
    assert (
        produce(broker, "t", 0, [b"late"], pid=pid, epoch=0, seq=1, tid="tx").error_code
        == OLD_FENCED
    )


def test_end_txn_while_a_marker_cannot_be_written_answers_concurrent_transactions(tmp_path):
    from kclient.broker import MiniCluster

    with MiniCluster(2, log_dir=tmp_path / "c", config=TXN_CONFIG) as cluster:
        b0, b1 = cluster.brokers
        cluster.brokers[0].create_topic("t", 2)  # t-0 on broker 0, t-1 on broker 1
        tid = next(f"tx{i}" for i in range(100) if b0.coordinator_for(f"tx{i}")[0] == 0)
        r = init(b0, tid)
        pid = r.producer_id
        assert add_partitions(b0, tid, pid, 0, [("t", 0), ("t", 1)]) == {("t", 0): 0, ("t", 1): 0}
        assert produce(b1, "t", 1, [b"remote"], pid=pid, epoch=0, seq=0, tid=tid).error_code == 0
        log1 = b1.log_manager.get_log("t", 1)
        assert log1.last_stable_offset == 0
        b1.stop()
        b0.cluster.live.pop(1, None)
        assert end_txn(b0, tid, pid, 0, True) == CONCURRENT
        assert b0.txn_coordinator.get(tid).state == TxnState.PREPARE_COMMIT
        assert add_partitions(b0, tid, pid, 0, [("t", 0)]) == {("t", 0): CONCURRENT}
        b1.start()
        deadline = time.time() + 10  # the timer retries the marker
        while b0.txn_coordinator.get(tid).state != TxnState.COMPLETE_COMMIT:
            assert time.time() < deadline
            time.sleep(0.05)
        log1 = b1.log_manager.get_log("t", 1)
        assert (log1.log_end_offset, log1.last_stable_offset) == (2, 2)


def test_timed_out_transaction_is_aborted_and_its_producer_fenced(broker):
    r = init(broker, "tx", timeout_ms=300)
    pid = r.producer_id
    add_partitions(broker, "tx", pid, 0, [("t", 0)])
    produce(broker, "t", 0, [b"hung"], pid=pid, epoch=0, seq=0, tid="tx")
    deadline = time.time() + 10
    while broker.txn_coordinator.get("tx").state != TxnState.COMPLETE_ABORT:
        assert time.time() < deadline
        time.sleep(0.05)
    assert broker.txn_coordinator.get("tx").producer_epoch == 1
    f = fetch(broker, "t", 0)
    assert (f.last_stable_offset, [a.producer_id for a in f.aborted_transactions]) == (2, [pid])
    assert end_txn(broker, "tx", pid, 0, True) == FENCED
    assert (
        produce(broker, "t", 0, [b"late"], pid=pid, epoch=0, seq=1, tid="tx").error_code
        == OLD_FENCED
    )


def test_state_survives_a_restart(tmp_path):
    b = MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG).start()
    try:
        b.create_topic("t", 1)
        r = init(b, "tx")
        pid = r.producer_id
        add_partitions(b, "tx", pid, 0, [("t", 0)])
        produce(b, "t", 0, [b"before"], pid=pid, epoch=0, seq=0, tid="tx")
        done = init(b, "done")
        b.stop()
        state_dir = tmp_path / "b" / "__transaction_coordinator"
        assert {p.name for p in state_dir.iterdir() if p.is_dir()} == {
            f"__transaction_state-{partition_for(t, 3)}" for t in ("tx", "done")
        }
        b.start()
        meta = b.txn_coordinator.get("tx")
        assert (meta.state, meta.producer_id, meta.partitions) == (
            TxnState.ONGOING,
            pid,
            {("t", 0)},
        )
        assert b.log_manager.get_log("t", 0).last_stable_offset == 0
        assert end_txn(b, "tx", pid, 0, True) == 0
        assert b.log_manager.get_log("t", 0).last_stable_offset == 2
        r2 = init(b, "done")  # epoch bumps from the stored one
        assert (r2.producer_id, r2.producer_epoch) == (done.producer_id, 1)
        b.kill()
        b.start()
        assert b.txn_coordinator.get("tx").state == TxnState.COMPLETE_COMMIT
        assert values(fetch(b, "t", 0).records) == [b"before"]
        # ids handed out after a restart are new ones
        assert init(b, "fresh").producer_id not in (pid, done.producer_id)
    finally:
        b.close()


def test_prepared_transaction_is_completed_at_start(tmp_path):
    b = MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG).start()
    try:
        b.create_topic("t", 1)
        r = init(b, "tx")
        pid = r.producer_id
        add_partitions(b, "tx", pid, 0, [("t", 0)])
        produce(b, "t", 0, [b"v"], pid=pid, epoch=0, seq=0, tid="tx")
        coordinator = b.txn_coordinator
        meta = coordinator.get("tx")
        meta.state = TxnState.PREPARE_COMMIT  # as if the broker died before the markers
        coordinator.store.write(meta)
        b.kill()
        b.start()
        assert b.txn_coordinator.get("tx").state == TxnState.COMPLETE_COMMIT
        assert b.log_manager.get_log("t", 0).last_stable_offset == 2
        assert values(fetch(b, "t", 0).records) == [b"v"]
    finally:
        b.close()


def test_write_txn_markers_ends_a_hanging_transaction(broker):
    """As kafka-transactions.sh abort does: a marker sent straight to the partition leader."""
    r = init(broker, "tx")
    pid = r.producer_id
    add_partitions(broker, "tx", pid, 0, [("t", 0)])
    produce(broker, "t", 0, [b"hanging"], pid=pid, epoch=0, seq=0, tid="tx")

    def markers(epoch, topics):
        r = call(
            broker,
            apis.WRITE_TXN_MARKERS,
            1,
            {
                "markers": [
                    {
                        "producer_id": pid,
                        "producer_epoch": epoch,
                        "transaction_result": False,
                        "topics": topics,
                        "coordinator_epoch": 0,
                    }
                ]
            },
        )
        return {
            (t.name, p.partition_index): p.error_code
            for t in r.markers[0].topics
            for p in t.partitions
        }

    assert markers(
        0, [{"name": "t", "partition_indexes": [0, 7]}, {"name": "nope", "partition_indexes": [0]}]
    ) == {
        ("t", 0): 0,
        ("t", 7): E.UnknownTopicOrPartitionError.errno,
        ("nope", 0): E.UnknownTopicOrPartitionError.errno,
    }
    f = fetch(broker, "t", 0)
    assert (f.last_stable_offset, [a.first_offset for a in f.aborted_transactions]) == (2, [0])
    init(broker, "tx")  # the transaction is Ongoing at the coordinator:
    init(broker, "tx")  # it aborts it (epoch 1), then bumps to 2
    assert markers(0, [{"name": "t", "partition_indexes": [0]}]) == {
        ("t", 0): E.InvalidProducerEpochError.errno
    }  # older than the partition's epoch
