"""Differential case "transactions v2" (see test_differential.py): KIP-890's transactions v2 on
Kafka 4.x and a mini-broker alike, both finalizing ``transaction.version`` 2: Produce v12 adding
partitions, EndTxn v5 bumping the epoch with every commit and abort (and with an abort of
nothing), its retries, a zombie of the previous epoch, Produce v11 verification and
TxnOffsetCommit v5, with read_committed Fetch and OffsetFetch after each step."""

from __future__ import annotations

import time

from kclient.protocol.apis import (
    API_VERSIONS,
    END_TXN,
    INIT_PRODUCER_ID,
    OFFSET_FETCH,
    PRODUCE,
    TXN_OFFSET_COMMIT,
)
from kclient.protocol.apis.api_versions import finalized_features
from kclient.protocol.records import build_batch

from .differential import Twin
from .differential_support import (  # noqa: F401
    T0,
    _txn_fetch,
    check,
    create,
    produce_body,
    wait_coordinator,
    warm_transactional_id,
)

CASE = "transactions v2"
TID, TOPIC, GROUP = "diff-tx-v2", "txn2", "g-txn-v2"
SIDES = ("real", "mini")
CONCURRENT_TRANSACTIONS = 51


def _produce(
    twin: Twin,
    pid: dict[str, int],
    epoch: int,
    partition: int,
    seq: int,
    label: str,
    version: int = 12,
) -> None:
    """A transactional batch of two records at Produce ``version`` (v12: it adds the partition)."""
    start = 10 * epoch + 2 * seq + partition * 100
    records = {
        s: build_batch(
            [b"v%d" % (start + i) for i in range(2)],
            None,
            [T0 + i for i in range(2)],
            producer_id=pid[s],
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=True,
        )
        for s in SIDES
    }
    twin.request(
        PRODUCE,
        version,
        lambda s: dict(
            produce_body(TOPIC, records[s], acks=-1, partition=partition), transactional_id=TID
        ),
        label,
    )


def _end(twin: Twin, pid: dict[str, int], epoch: int, commit: bool, label: str) -> None:
    """EndTxn v5; then until Kafka has written its markers (it answers once the Prepare state is
    written; the mini-broker once the markers are), its retry answering CONCURRENT_TRANSACTIONS."""
    body = {
        s: {
            "transactional_id": TID,
            "producer_id": pid[s],
            "producer_epoch": epoch,
            "committed": commit,
        }
        for s in SIDES
    }
    twin.request(END_TXN, 5, body.__getitem__, label)
    if twin.last["real"].error_code:
        return
    deadline = time.monotonic() + 30
    while twin.real.request(END_TXN, body["real"], 5).error_code == CONCURRENT_TRANSACTIONS:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _stage(
    twin: Twin, pid: dict[str, int], epoch: int, partition: int, offset: int, label: str
) -> None:
    """TxnOffsetCommit v5 of one offset for the group (it adds the offsets partition)."""
    twin.request(
        TXN_OFFSET_COMMIT,
        5,
        lambda s: {
            "transactional_id": TID,
            "group_id": GROUP,
            "producer_id": pid[s],
            "producer_epoch": epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": partition,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
        label,
    )


def _offsets(twin: Twin, label: str) -> None:
    twin.request(
        OFFSET_FETCH,
        7,
        {
            "group_id": GROUP,
            "require_stable": True,
            "topics": [{"name": TOPIC, "partition_indexes": [0, 1]}],
        },
        label,
    )


def test_transactions_v2(twin4):
    twin = twin4
    twin.case = CASE
    create(twin, TOPIC, partitions=2)
    warm_transactional_id(twin, TID)
    wait_coordinator(twin, GROUP)
    features = {s: finalized_features(getattr(twin, s).request(API_VERSIONS, {}, 3)) for s in SIDES}
    assert features["real"].get("transaction.version") == 2, features
    assert features["mini"] == {"transaction.version": 2}
    twin.request(
        INIT_PRODUCER_ID, 5, {"transactional_id": TID, "transaction_timeout_ms": 60000}, "new id"
    )
    pid = {side: twin.last[side].producer_id for side in SIDES}
    # a transaction at epoch 0: Produce v12 adds both partitions, v11 is verified inside it
    _produce(twin, pid, 0, 1, 0, "v11 before the partition is in the transaction", version=11)
    _produce(twin, pid, 0, 0, 0, "adds partition 0")
    _produce(twin, pid, 0, 1, 0, "adds partition 1")
    _produce(twin, pid, 0, 0, 2, "v11 to a partition in the transaction", version=11)
    _txn_fetch(twin, "open", TOPIC)
    _end(twin, pid, 0, True, "commit")
    _end(twin, pid, 0, True, "commit retried")
    _end(twin, pid, 0, False, "abort of the committed one")
    _txn_fetch(twin, "committed", TOPIC)
    # the previous epoch is a zombie now
    _produce(twin, pid, 0, 0, 4, "zombie of epoch 0")
    _end(twin, pid, 5, True, "unknown epoch")
    _end(twin, pid, 1, True, "commit with nothing open")
    # epoch 1: data and offsets (TxnOffsetCommit v5 adds the offsets), aborted
    _produce(twin, pid, 1, 0, 0, "epoch 1")
    _stage(twin, pid, 1, 0, 5, "offsets in epoch 1")
    _end(twin, pid, 1, False, "abort")
    _offsets(twin, "after the abort")
    _end(twin, pid, 2, False, "abort with nothing open")
    # epoch 3: offsets only, committed
    _stage(twin, pid, 3, 1, 9, "offsets in epoch 3")
    _end(twin, pid, 3, True, "commit of offsets")
    _offsets(twin, "after the commit")
    _txn_fetch(twin, "end", TOPIC)
    check(CASE, twin)
