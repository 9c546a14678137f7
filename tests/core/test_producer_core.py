"""The producer's core through both drivers against the mini-broker: the idempotent producer's
InitProducerId, the transaction state machine's conversations (init, AddPartitionsToTxn,
AddOffsetsToTxn + TxnOffsetCommit, EndTxn), fencing of an older instance, and what a sequence
error of a batch means (KIP-360)."""

from __future__ import annotations

import uuid

import pytest

from kclient.aio.accumulator import AIOBatch
from kclient.core import transactions as txn_core
from kclient.core.idempotence import (
    BUMP_AND_RESEND,
    FAIL,
    RESEND,
    RETRY,
    SENT,
    IdempotentState,
    init_idempotent,
    sequence_outcome,
)
from kclient.core.produce import (
    magic_for,
    partition_results,
    produce_body,
    retry_verdict,
    settle,
)
from kclient.core.steps import Request
from kclient.core.transactions import (
    ABORTABLE_ERROR,
    FATAL_ERROR,
    IN_TRANSACTION,
    READY,
    TxnState,
)
from kclient.errors import (
    IllegalStateError,
    KafkaError,
    NotLeaderForPartitionError,
    ProducerFencedError,
    TransactionAbortableError,
)
from kclient.protocol.apis import END_TXN, METADATA, PRODUCE
from kclient.protocol.apis.api_versions import finalized_features
from kclient.protocol.error_codes import (
    DuplicateSequenceNumberError,
    OutOfOrderSequenceNumberError,
    UnknownProducerIdError,
)
from kclient.protocol.records import build_batch
from kclient.protocol.schema import Struct


def _tid() -> str:
    return f"tx-{uuid.uuid4().hex[:8]}"


def _create(topic):
    """Metadata with auto-creation: the topic exists after this step."""
    yield Request(METADATA, {"topics": [{"name": topic}], "allow_auto_topic_creation": True})


def test_idempotent_init_gives_an_id_and_epoch(drive):
    state = IdempotentState()
    drive(lambda: init_idempotent(state))
    assert state.has_producer_id and state.epoch == 0


def test_transaction_commit_then_abort_walks_the_states(drive):
    """Transactions v1's conversations (AddPartitionsToTxn with no Produce after it: in v2 the
    partition joins only with its Produce, tests/producer/test_txn_versions.py)."""
    txn = TxnState(_tid(), max_block=10)
    txn.tv2 = False
    topic = f"t-{uuid.uuid4().hex[:6]}"

    def conversation():
        yield from _create(topic)
        yield from txn_core.init_transactions(txn)
        states = [txn.state]
        txn.begin()
        yield from txn_core.add_partitions(txn, [(topic, 0)])
        yield from txn_core.add_partitions(txn, [(topic, 0)])  # known: nothing sent
        states.append((txn.state, set(txn.partitions)))
        yield from txn_core.end_transaction(txn, commit=True)
        states.append(txn.state)
        txn.begin()
        yield from txn_core.send_offsets(txn, {(topic, 0): (5, "m")}, "g-core")
        assert txn.has_offsets
        yield from txn_core.end_transaction(txn, commit=False)
        states.append(txn.state)
        return states

    states = drive(conversation)
    assert states == [READY, (IN_TRANSACTION, {(topic, 0)}), READY, READY]
    assert txn.producer_id >= 0 and txn.epoch >= 0


def test_a_second_instance_fences_the_first(drive):
    tid = _tid()
    old, new = TxnState(tid, max_block=10), TxnState(tid, max_block=10)
    topic = f"t-{uuid.uuid4().hex[:6]}"

    def conversation():
        yield from _create(topic)
        yield from txn_core.init_transactions(old)
        old.begin()
        yield from txn_core.add_partitions(old, [(topic, 0)])
        yield from txn_core.init_transactions(new)  # fences ``old``, aborts its transaction
        try:
            yield from txn_core.end_transaction(old, commit=True)
        except ProducerFencedError as exc:
            return exc
        return None

    err = drive(conversation)
    assert isinstance(err, ProducerFencedError)
    assert old.state == FATAL_ERROR and new.state == READY
    assert new.epoch > old.epoch or new.producer_id != old.producer_id
    with pytest.raises(ProducerFencedError):
        old.check(READY)


def test_state_machine_refusals_and_abortable_errors():
    txn = TxnState("tx-local")
    with pytest.raises(IllegalStateError):
        txn.begin()
    txn.state = READY
    txn.begin()
    txn.record_failure(NotLeaderForPartitionError("lost"), sequenced=True)
    assert txn.state == ABORTABLE_ERROR and txn.bump_after_abort
    with pytest.raises(TransactionAbortableError):
        txn.check_send()
    txn.record_failure(ProducerFencedError("newer"))
    assert txn.state == FATAL_ERROR


def test_sequence_outcomes_follow_kip_360():
    assert sequence_outcome(DuplicateSequenceNumberError("dup"), False, True) == SENT
    assert sequence_outcome(NotLeaderForPartitionError("x"), False, True) == RETRY
    assert sequence_outcome(OutOfOrderSequenceNumberError("x"), False, True) == BUMP_AND_RESEND
    assert sequence_outcome(OutOfOrderSequenceNumberError("x"), False, False) == RESEND
    assert sequence_outcome(UnknownProducerIdError("x"), True, True) == FAIL


def test_produce_body_and_results_round_trip(drive):
    """A Produce request built by the core is answered per partition, with the offsets."""
    topic = f"t-{uuid.uuid4().hex[:6]}"
    records = build_batch([b"a", b"b"])

    def conversation():
        yield from _create(topic)
        body = produce_body(None, -1, 5000, {topic: [(0, records)]})
        resp = yield Request(PRODUCE, body, max_version=9)
        return list(partition_results(resp, 0))

    ((name, partition, error, base, _),) = drive(conversation)
    assert (name, partition, error, base) == (topic, 0, None, 0)
    assert magic_for(3) == 2 and magic_for(2) == 1 and magic_for(1) == 0


def test_the_mini_broker_negotiates_transactions_v2(drive):
    """negotiate(): the mini-broker finalizes transaction.version 2 and serves EndTxn v5 and
    Produce v12, so v2 (Produce v12 inside a transaction, EndTxn v5)."""
    txn = TxnState(_tid(), max_block=10)
    assert drive(lambda: txn_core.negotiate(txn)) is True
    assert txn.transaction_version == 2 and txn.produce_max_version() == 12
    assert txn.max_version(END_TXN) == 5


@pytest.mark.parametrize("kind", ["threaded", "asyncio"])
def test_a_broker_finalizing_transaction_version_1_negotiates_v1(kind, tmp_path):
    """transaction.version=1 on the broker: v1 (Produce capped at v11 inside a transaction,
    EndTxn v4, AddPartitionsToTxn v3), as against Kafka without the feature."""
    from kclient.broker import MiniBroker
    from kclient.connection import ConnectionSettings

    from .conftest import driver

    with MiniBroker(log_dir=tmp_path / "b", config={"transaction.version": "1"}) as b:
        run = driver(kind, b.bootstrap, ConnectionSettings(client_id="core-test"))
        txn = TxnState(_tid(), max_block=10)
        assert run(lambda: txn_core.negotiate(txn)) is False
    assert txn.transaction_version == 1 and txn.produce_max_version() == 11
    assert txn.max_version(END_TXN) == 4


def test_finalized_features_are_read_from_the_tagged_fields():
    """ApiVersions v3's FinalizedFeatures (tag 2) as Kafka 4 writes it: a compact array of
    (name, max level, min level, tagged fields)."""
    from kclient.protocol.schema import Struct

    def entry(name: bytes, max_level: int, min_level: int) -> bytes:
        return (
            bytes([len(name) + 1])
            + name
            + max_level.to_bytes(2, "big")
            + min_level.to_bytes(2, "big")
            + b"\x00"
        )

    raw = bytes([3]) + entry(b"metadata.version", 27, 27) + entry(b"transaction.version", 2, 2)
    resp = Struct()
    resp.__dict__ = {"_tagged_fields": {2: raw}}
    assert finalized_features(resp) == {"metadata.version": 27, "transaction.version": 2}
    empty = Struct()
    empty.__dict__ = {}
    assert finalized_features(empty) == {}
    txn = TxnState("tx-v2")
    txn.tv2 = True
    assert txn.transaction_version == 2 and txn.produce_max_version() == 12
    assert txn.max_version(END_TXN) == 5


def _answer(index: int, code: int) -> Struct:
    return Struct(
        index=index,
        error_code=code,
        base_offset=10 * index if not code else -1,
        log_append_time_ms=-1,
        error_message=None,
    )


def test_settle_gives_every_batch_sent_one_outcome():
    """Each partition's answer goes to its batch: written, a sequence error as KIP-360 says
    (a duplicate is written; out of order behind an earlier batch is resent at no cost), an
    ordinary error retried; a partition left out of the answer is a forced retry."""
    idem = IdempotentState()
    idem.set_producer_id(7, 0)
    b = {p: AIOBatch("t", p, 0.0, 1e9) for p in range(6)}
    for p in (1, 3, 5):
        b[p].set_sequence(7, 0, 4 if p == 3 else 0)
        b[p].attempts = 1
    earlier = AIOBatch("t", 3, 0.0, 1e9)
    earlier.set_sequence(7, 0, 0)
    resp = Struct(
        responses=[
            Struct(
                name="t",
                partition_responses=[
                    _answer(0, 0),
                    _answer(1, 46),
                    _answer(2, 6),
                    _answer(3, 45),
                    _answer(5, 6),
                ],
            )
        ]
    )
    got: list[tuple] = []
    batches = {(b[p].topic, p): b[p] for p in range(6)}
    settle(
        resp,
        1,
        batches,
        idem,
        lambda x: [earlier],
        lambda x, base, t: got.append(("ok", x.partition, base)),
        lambda x, e: got.append(("fail", x.partition, type(e).__name__)),
        lambda x, e, force: got.append(("retry", x.partition, type(e).__name__, force)),
    )
    assert got == [
        ("ok", 0, 0),
        ("ok", 1, -1),
        ("retry", 2, "NotLeaderForPartitionError", False),
        ("retry", 3, "OutOfOrderSequenceNumberError", True),
        ("retry", 5, "NotLeaderForPartitionError", False),
        ("retry", 4, "KafkaError", True),
    ]
    assert list(batches) == [("t", 4)] and b[3].attempts == 0 and b[5].attempts == 1
    assert not idem.bump_requested


def test_settle_fails_a_transactional_sequence_error():
    """A transactional producer's sequence error fails the batch (abortable), not a retry."""
    txn = TxnState("tx-settle")
    txn.set_producer_id(7, 0)
    batch = AIOBatch("t", 0, 0.0, 1e9)
    batch.set_sequence(7, 0, 0, transactional=True)
    resp = Struct(responses=[Struct(name="t", partition_responses=[_answer(0, 45)])])
    got: list[tuple] = []
    settle(
        resp,
        1,
        {("t", 0): batch},
        txn,
        lambda x: [],
        lambda x, base, t: got.append(("ok",)),
        lambda x, e: got.append(("fail",)),
        lambda x, e, force: got.append(("retry",)),
    )
    assert got == [("fail",)]


def test_retry_verdict_counts_unsent_attempts_and_gives_up():
    """A batch never sent counts an attempt; a non-retriable error gives up unless forced;
    a moved leader (or an unsent batch) refreshes metadata first; past the retries it gives up."""
    b = AIOBatch("t", 0, 0.0, 1e9)
    assert retry_verdict(b, NotLeaderForPartitionError("x"), True, False, 2) == (False, True)
    assert retry_verdict(b, KafkaError("no leader"), False, True, 2) == (False, True)
    assert b.attempts == 1
    assert retry_verdict(b, ProducerFencedError("x"), True, False, 2) == (True, False)
    assert retry_verdict(b, DuplicateSequenceNumberError("x"), True, True, 2) == (False, False)
    b.attempts = 3
    assert retry_verdict(b, NotLeaderForPartitionError("x"), True, False, 2) == (True, False)


def test_a_bump_restamps_only_the_partitions_whose_sequences_the_broker_refused():
    """KIP-360 as Java's producer: after a bump the batches of the partition whose next
    expected batch was refused (OUT_OF_ORDER_SEQUENCE_NUMBER) are stamped again in the new
    epoch; the others keep their stamps, since they may have been written and only their old
    stamp makes a resend a duplicate the broker recognises (issue 25: a bump after a batch
    failed re-stamped batches already written, and the log held them twice).  A new batch of
    a partition waits while one of the older stamp is unacknowledged."""
    idem = IdempotentState()
    idem.set_producer_id(7, 3)
    refused, written, fresh = (AIOBatch("t", p, 0.0, 1e9) for p in range(3))
    refused.set_sequence(7, 3, 5)
    written.set_sequence(7, 3, 9)
    assert idem.sequence_error(refused, OutOfOrderSequenceNumberError("x"), []) == RESEND
    idem.record_failure(KafkaError("UNSUPPORTED_VERSION"), sequenced=True)  # a gap elsewhere
    assert idem.bump_requested
    idem.bump_and_restamp([refused, written, fresh])
    assert (idem.producer_id, idem.epoch, idem.bump_requested) == (7, 4, False)
    assert (refused.producer_id, refused.producer_epoch, refused.base_sequence) == (-1, -1, -1)
    assert (written.producer_id, written.producer_epoch, written.base_sequence) == (7, 3, 9)
    assert fresh.base_sequence == -1
    assert idem.stale(written) and not idem.stale(refused) and not idem.stale(fresh)
    idem.assign(refused)
    assert (refused.producer_epoch, refused.base_sequence) == (4, 0) and not idem.stale(refused)
    idem.bump_requested = True
    idem.bump_and_restamp([written])  # the refused partitions were consumed by the last bump
    assert (written.producer_epoch, written.base_sequence) == (3, 9)
