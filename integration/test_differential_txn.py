"""Differential cases of idempotent and transactional produce (see test_differential.py):
duplicate and out-of-order sequences, epoch bumps, InitProducerId / AddPartitionsToTxn / EndTxn
and read_committed Fetch, on Kafka 4.x and a mini-broker alike (transactions v2:
test_differential_txn_v2.py)."""

from __future__ import annotations

import time

from kclient.protocol.apis import (
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    FETCH,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    PRODUCE,
)
from kclient.protocol.records import build_batch

from .differential_support import (
    T0,
    _txn_fetch,
    batch,
    check,
    create,
    fetch_body,
    produce_body,
    wait_transaction_coordinator,
    warm_transactional_id,
)

# --- Idempotent produce ----------------------------------------------------------------------


def test_idempotent_produce_sequences(twin4):
    twin = twin4
    twin.case = "idempotent produce: duplicate and out-of-order sequences"
    create(twin, "idem")
    wait_transaction_coordinator(twin)
    init = {"transactional_id": None, "transaction_timeout_ms": 60000}
    twin.request(INIT_PRODUCER_ID, 4, init, "idempotent")
    pid = {side: twin.last[side].producer_id for side in ("real", "mini")}

    def produce(seq: int, label: str, epoch: int = 0, n: int = 3, unknown: bool = False) -> None:
        records = {
            s: build_batch(
                [b"i%d" % (seq + i) for i in range(n)],
                None,
                [T0 + i for i in range(n)],
                producer_id=pid[s] + (1000 if unknown else 0),
                producer_epoch=epoch,
                base_sequence=seq,
            )
            for s in pid
        }
        twin.request(PRODUCE, 7, lambda s: produce_body("idem", records[s], acks=-1), label)

    produce(0, "first")
    produce(0, "duplicate")
    produce(6, "gap")
    produce(3, "next")
    for i in range(5):
        produce(6 + 3 * i, f"more {i}")
    produce(0, "first again, older than the last five")
    produce(7, "unknown producer id", unknown=True)
    twin.request(
        INIT_PRODUCER_ID,
        4,
        lambda s: dict(init, producer_id=pid[s], producer_epoch=0),
        "epoch bump",
    )
    produce(21, "old epoch")
    produce(3, "new epoch, not at 0", epoch=1)
    produce(0, "new epoch at 0", epoch=1)
    twin.request(FETCH, 11, fetch_body("idem"), "idem")
    check("idempotent produce: duplicate and out-of-order sequences", twin)


# --- Transactions ----------------------------------------------------------------------------


def test_transactions(twin4):
    twin = twin4
    twin.case = "transactions"
    tid = "diff-tx"
    create(twin, "txn", partitions=2)
    warm_transactional_id(twin, tid)
    twin.request(FIND_COORDINATOR, 3, {"key": tid, "key_type": 1}, "transactional id")
    init = {"transactional_id": tid, "transaction_timeout_ms": 60000}
    twin.request(INIT_PRODUCER_ID, 4, dict(init, transaction_timeout_ms=900001), "timeout")
    twin.request(INIT_PRODUCER_ID, 4, init, "new id")
    pid = {side: twin.last[side].producer_id for side in ("real", "mini")}
    twin.request(INIT_PRODUCER_ID, 4, init, "epoch bump")
    for version in (3, 4):
        twin.request(
            INIT_PRODUCER_ID,
            version,
            lambda s: dict(init, producer_id=pid[s], producer_epoch=5),
            "stale epoch",
        )

    def add(epoch: int, topics: list, version: int = 3, label: str = "") -> None:
        twin.request(
            ADD_PARTITIONS_TO_TXN,
            version,
            lambda s: {
                "v3_and_below_transactional_id": tid,
                "v3_and_below_producer_id": pid[s],
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": topics,
            },
            label,
        )

    def produce(partition: int, start: int, seq: int, label: str) -> None:
        records = {
            s: build_batch(
                [b"t%d" % (start + i) for i in range(2)],
                None,
                [T0 + i for i in range(2)],
                producer_id=pid[s],
                producer_epoch=1,
                base_sequence=seq,
                is_transactional=True,
            )
            for s in pid
        }
        twin.request(
            PRODUCE,
            7,
            lambda s: dict(
                produce_body("txn", records[s], acks=-1, partition=partition), transactional_id=tid
            ),
            label,
        )

    def end(commit: bool, label: str, version: int = 3, epoch: int = 1) -> None:
        body = {
            s: {
                "transactional_id": tid,
                "producer_id": pid[s],
                "producer_epoch": epoch,
                "committed": commit,
            }
            for s in pid
        }
        twin.request(END_TXN, version, body.__getitem__, label)
        # Kafka answers once PrepareCommit/PrepareAbort is written and writes the markers
        # afterwards (a retry meanwhile: CONCURRENT_TRANSACTIONS); the mini-broker answers
        # once they are written. Wait for Kafka's to be written too.
        deadline = time.monotonic() + 30
        while twin.real.request(END_TXN, body["real"], version).error_code == 51:
            assert time.monotonic() < deadline
            time.sleep(0.05)

    both = [{"name": "txn", "partitions": [0, 1]}]
    end(True, "no transaction")
    for version in (1, 2, 3):
        add(0, both, version, "fenced epoch")
    add(
        1,
        [{"name": "txn", "partitions": [0]}, {"name": "txn-missing", "partitions": [0]}],
        label="unknown topic",
    )
    add(1, [{"name": "txn", "partitions": [0]}], label="first partition")
    produce(1, 0, 0, "partition not in the transaction")
    produce(0, 0, 0, "first")
    twin.request(PRODUCE, 7, produce_body("txn", batch(1, 100)), "plain, after the txn start")
    _txn_fetch(twin, "open")
    end(False, "abort")
    end(False, "abort retried")
    end(True, "commit after abort")
    end(False, "fenced abort", epoch=0, version=1)
    _txn_fetch(twin, "aborted")
    add(1, both, label="both partitions")
    produce(0, 2, 2, "second")
    produce(1, 4, 0, "other partition")
    _txn_fetch(twin, "open again")
    end(True, "commit")
    end(True, "commit retried", version=2)
    _txn_fetch(twin, "committed")
    check("transactions", twin)
