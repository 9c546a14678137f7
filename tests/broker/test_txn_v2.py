"""Transactions v2 (KIP-890) in the mini-broker's transaction coordinator, request by request:
the finalized ``transaction.version`` feature in ApiVersions (and the broker config that turns it
back to 1), partitions added by Produce v12 and TxnOffsetCommit v5, the epoch bumped by every
EndTxn v5 and handed back in its answer, retries, zombies fenced, the epoch exhausted (a new
producer id), Produce v11's TRANSACTION_ABORTABLE, and the state kept across a restart (value
v1 records in ``__transaction_state``)."""

from __future__ import annotations

import dataclasses

import pytest

from kclient.broker import MiniBroker
from kclient.broker.txn_schema import TxnMetadata, TxnState, decode_value, encode_value
from kclient.protocol import apis
from kclient.protocol import errors as E
from kclient.protocol.apis.api_versions import finalized_features
from kclient.protocol.records import build_batch

from .test_txn_coordinator import broker  # noqa: F401  (topic "t", 2 partitions)
from .txn_support import FENCED, INVALID_TXN_STATE, TXN_CONFIG, call, fetch, init, values
from .txn_support import OLD_FENCED as OLD_EPOCH

ABORTABLE = E.TransactionAbortableError.errno
MAPPING = E.InvalidProducerIdMappingError.errno


def produce(b, tp, vals, pid, epoch, seq, tid="tx", version=12):
    """One transactional batch at Produce ``version``; the partition's answer."""
    batch = build_batch(
        vals, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True
    )
    r = call(
        b,
        apis.PRODUCE,
        version,
        {
            "transactional_id": tid,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": tp[0], "partition_data": [{"index": tp[1], "records": batch}]}],
        },
    )
    return r.responses[0].partition_responses[0]


def end(b, pid, epoch, commit, tid="tx", version=5):
    """EndTxn; (error, producer id, epoch) of its answer."""
    r = call(
        b,
        apis.END_TXN,
        version,
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit},
    )
    return r.error_code, r.producer_id, r.producer_epoch


def test_api_versions_finalize_transaction_version_from_the_broker_config(tmp_path):
    """Level 2 by default; ``transaction.version=1`` finalizes 1 (clients then speak v1) and 0
    finalizes none, as Kafka leaves a feature at level 0 out; v0-v2 carry no features."""
    seen = {}
    for level in ("2", "1", "0"):
        with MiniBroker(log_dir=tmp_path / level, config={"transaction.version": level}) as b:
            r = call(b, apis.API_VERSIONS, 3, {})
            seen[level] = finalized_features(r)
            served = {k.api_key: k.max_version for k in r.api_keys}
            assert (served[apis.PRODUCE.key], served[apis.END_TXN.key]) == (12, 5)
            assert finalized_features(call(b, apis.API_VERSIONS, 2, {})) == {}
    assert seen == {"2": {"transaction.version": 2}, "1": {"transaction.version": 1}, "0": {}}
    with pytest.raises(ValueError, match="transaction.version.*'3'"):
        MiniBroker(log_dir=tmp_path / "bad", config={"transaction.version": "3"}).start()


def test_produce_v12_adds_the_partition_and_every_end_bumps_the_epoch(broker):  # noqa: F811
    r = init(broker, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    assert produce(broker, ("t", 0), [b"a", b"b"], pid, epoch, 0).error_code == 0
    assert produce(broker, ("t", 1), [b"c"], pid, epoch, 0).error_code == 0
    meta = broker.txn_coordinator.get("tx")
    assert meta.state == TxnState.ONGOING and meta.partitions == {("t", 0), ("t", 1)}
    assert end(broker, pid, epoch, True) == (0, pid, epoch + 1)
    # the retried EndTxn (its answer lost) gets the same answer; the other outcome does not
    assert end(broker, pid, epoch, True) == (0, pid, epoch + 1)
    assert end(broker, pid, epoch, False)[0] == INVALID_TXN_STATE
    # the next transaction at the new epoch, sequences from 0 again; aborted
    assert produce(broker, ("t", 0), [b"x"], pid, epoch + 1, 0).error_code == 0
    assert end(broker, pid, epoch + 1, False) == (0, pid, epoch + 2)
    assert produce(broker, ("t", 0), [b"d"], pid, epoch + 2, 0).error_code == 0
    assert end(broker, pid, epoch + 2, True) == (0, pid, epoch + 3)
    part = fetch(broker, "t", 0)  # read_committed: x is listed as aborted
    assert values(part.records) == [b"a", b"b", b"x", b"d"]
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(pid, 3)]
    assert part.last_stable_offset == 7  # a, b, commit, x, abort, d, commit: nothing open
    assert values(fetch(broker, "t", 1).records) == [b"c"]


def test_a_zombie_of_the_last_transaction_is_fenced(broker):  # noqa: F811
    """Its epoch is the one EndTxn bumped away from: Produce v12 gets INVALID_PRODUCER_EPOCH
    (nothing stored), EndTxn v5 PRODUCER_FENCED (v1 INVALID_PRODUCER_EPOCH)."""
    r = init(broker, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    assert produce(broker, ("t", 0), [b"a"], pid, epoch, 0).error_code == 0
    assert end(broker, pid, epoch, True)[0] == 0
    zombie = produce(broker, ("t", 0), [b"late"], pid, epoch, 1)
    assert zombie.error_code == OLD_EPOCH
    assert end(broker, pid, epoch + 5, True)[0] == FENCED
    assert end(broker, pid, epoch + 1, True)[0] == INVALID_TXN_STATE  # current, nothing open
    assert end(broker, pid + 1, epoch + 1, True)[0] == MAPPING
    assert values(fetch(broker, "t", 0).records) == [b"a"]


def test_abort_with_nothing_open_bumps_commit_is_refused(broker):  # noqa: F811
    r = init(broker, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    assert end(broker, pid, epoch, True)[0] == INVALID_TXN_STATE
    assert end(broker, pid, epoch, False) == (0, pid, epoch + 1)
    assert end(broker, pid, epoch, False) == (0, pid, epoch + 1)  # retried
    assert broker.txn_coordinator.get("tx").state == TxnState.COMPLETE_ABORT


def test_an_exhausted_epoch_moves_the_producer_to_a_new_id(broker):  # noqa: F811
    """At epoch 32766 EndTxn v5 writes the markers under the old id at 32767 and answers a new
    producer id at epoch 0; a retry with the old id and epoch gets that answer again."""
    r = init(broker, "tx")
    pid = r.producer_id
    coordinator = broker.txn_coordinator
    with coordinator._lock:
        meta = coordinator.store.get("tx")
        coordinator.store.write(dataclasses.replace(meta, producer_epoch=32766))
    assert produce(broker, ("t", 0), [b"a"], pid, 32766, 0).error_code == 0
    code, new_pid, new_epoch = end(broker, pid, 32766, True)
    assert (code, new_epoch) == (0, 0) and new_pid not in (pid, -1)
    assert end(broker, pid, 32766, True) == (0, new_pid, 0)
    assert produce(broker, ("t", 0), [b"b"], new_pid, 0, 0).error_code == 0
    assert end(broker, new_pid, 0, True) == (0, new_pid, 1)
    assert values(fetch(broker, "t", 0).records) == [b"a", b"b"]


def test_produce_below_v12_is_verified_with_kip_890_codes(broker):  # noqa: F811
    """v11 knows TRANSACTION_ABORTABLE, v10 gets INVALID_TXN_STATE; neither adds the partition."""
    r = init(broker, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    assert produce(broker, ("t", 0), [b"a"], pid, epoch, 0, version=11).error_code == ABORTABLE
    assert (
        produce(broker, ("t", 0), [b"a"], pid, epoch, 0, version=10).error_code == INVALID_TXN_STATE
    )
    assert broker.txn_coordinator.get("tx").partitions == set()
    assert produce(broker, ("t", 0), [b"a"], pid, epoch, 0).error_code == 0
    assert produce(broker, ("t", 0), [b"b"], pid, epoch, 1, version=11).error_code == 0


def test_txn_offset_commit_v5_adds_the_offsets_partition(broker):  # noqa: F811
    r = init(broker, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    body = {
        "transactional_id": "tx",
        "group_id": "g",
        "producer_id": pid,
        "producer_epoch": epoch,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 7}]}],
    }
    old = call(broker, apis.TXN_OFFSET_COMMIT, 4, body)
    assert old.topics[0].partitions[0].error_code == ABORTABLE
    assert call(broker, apis.TXN_OFFSET_COMMIT, 5, body).topics[0].partitions[0].error_code == 0
    assert end(broker, pid, epoch, True) == (0, pid, epoch + 1)
    r = call(
        broker,
        apis.OFFSET_FETCH,
        1,
        {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]},
    )
    assert r.topics[0].partitions[0].committed_offset == 7


def test_state_survives_a_restart_in_value_v1_records(tmp_path):
    b = MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG).start()
    try:
        b.create_topic("t", partitions=1)
        r = init(b, "tx")
        pid, epoch = r.producer_id, r.producer_epoch
        assert produce(b, ("t", 0), [b"a"], pid, epoch, 0).error_code == 0
        assert end(b, pid, epoch, True)[0] == 0
    finally:
        b.close()
    b = MiniBroker(log_dir=tmp_path / "b", config=TXN_CONFIG).start()
    try:
        meta = b.txn_coordinator.get("tx")
        assert (meta.state, meta.producer_id, meta.producer_epoch, meta.client_version) == (
            TxnState.COMPLETE_COMMIT,
            pid,
            epoch + 1,
            2,
        )
        assert end(b, pid, epoch, True) == (0, pid, epoch + 1)  # a retry, after it
    finally:
        b.close()


def test_value_v1_round_trips_its_tagged_fields():
    meta = TxnMetadata(
        "tx",
        42,
        32767,
        60000,
        TxnState.PREPARE_COMMIT,
        {("a", 0), ("a", 3), ("b", 1)},
        5,
        4,
        previous_producer_id=41,
        next_producer_id=43,
        client_version=2,
    )
    raw = encode_value(meta, 1)
    assert raw[:2] == b"\x00\x01"
    back = decode_value("tx", raw)
    assert dataclasses.replace(back, last_epoch=-1) == dataclasses.replace(meta, last_epoch=-1)
    plain = dataclasses.replace(
        meta, previous_producer_id=-1, next_producer_id=-1, client_version=0
    )
    assert decode_value("tx", encode_value(plain, 1)) == plain
    assert decode_value("tx", encode_value(plain, 0)) == plain
