"""The transactional producer's state machine and its coordinator conversations (KIP-98).

States: UNINITIALIZED -> (init_transactions) READY -> (begin_transaction) IN_TRANSACTION ->
(commit / abort) READY.  A failure inside a transaction that aborting cures (a batch that failed
for good, an authorization error on a topic or group, a rejected offset commit) moves it to
ABORTABLE_ERROR: sends and commit raise TransactionAbortableError until abort_transaction().
A failure nothing cures (fencing by a newer instance, PRODUCER_FENCED or INVALID_PRODUCER_EPOCH,
raised as ProducerFencedError; a refused transactional id; an invalid transaction state) moves
it to FATAL_ERROR: every later call raises it again and only close() is left.

Transactions v2 (KIP-890), negotiated as Java does: when the cluster finalized the
``transaction.version`` feature at 2 or more and the coordinator serves EndTxn v5 and Produce v12
(asked once with ApiVersions, after InitProducerId), partitions join the transaction with their
first Produce (v12; no AddPartitionsToTxn), offsets with TxnOffsetCommit v5 (no
AddOffsetsToTxn), and EndTxn v5 answers with the epoch bumped for the next transaction, so a
zombie of the previous transaction is fenced by every commit.  Otherwise transactions v1 (older
brokers, a mini-broker with ``transaction.version=1``): AddPartitionsToTxn / AddOffsetsToTxn,
EndTxn v4, Produce at most v11.

Coordinator requests find their coordinator with :func:`kclient.core.coordinator.
find_coordinator` (key type 1 for the transactional id, 0 for a consumer group) and retry
NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE and broken connections (finding the coordinator
again), COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS (the previous transaction's
markers are still being written) until ``max.block.ms`` (60 s) has passed.

:class:`TxnState` is plain state (no I/O, no lock); the conversations (:func:`init_transactions`,
:func:`add_partitions`, :func:`send_offsets`, :func:`end_transaction`) read and update it.  The
threaded producer runs them with :func:`kclient.io.driver.run` under its lock, AIOProducer with
:func:`kclient.aio.driver.run` under an asyncio lock; both on a cluster transport.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kclient.errors import (
    ConcurrentTransactionsError,
    CoordinatorNotAvailableError,
    IllegalStateError,
    InvalidProducerEpochError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    ProducerFencedError,
    TransactionAbortableError,
    error_for_code,
)
from kclient.protocol.apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    API_VERSIONS,
    END_TXN,
    INIT_PRODUCER_ID,
    PRODUCE,
    TXN_OFFSET_COMMIT,
)
from kclient.protocol.apis.api_versions import finalized_features
from kclient.protocol.schema import Api

from .coordinator import CoordinatorState, find_coordinator
from .idempotence import IdempotentState
from .steps import Conversation, Request, Sleep

__all__ = [
    "TxnState",
    "ProducerIdentity",
    "UNINITIALIZED",
    "READY",
    "IN_TRANSACTION",
    "ABORTABLE_ERROR",
    "FATAL_ERROR",
    "TP",
    "fenced",
    "is_abortable",
    "coordinator_request",
    "negotiate",
    "init_transactions",
    "add_partitions",
    "send_offsets",
    "end_transaction",
    "group_fields",
    "offsets_to_commit",
]

log = logging.getLogger("kclient.producer.transactions")

UNINITIALIZED, READY, IN_TRANSACTION = "UNINITIALIZED", "READY", "IN_TRANSACTION"
ABORTABLE_ERROR, FATAL_ERROR = "ABORTABLE_ERROR", "FATAL_ERROR"
TP = tuple[str, int]
#: FindCoordinator key types
GROUP_KEY, TXN_KEY = 0, 1

#: versions of transaction version 1 (KIP-98): v5 of EndTxn / v4+ of AddPartitionsToTxn are
#: transaction version 2 (KIP-890), where the broker adds partitions and bumps epochs itself
_TV1_MAX = {
    ADD_PARTITIONS_TO_TXN.key: 3,
    END_TXN.key: 4,
    ADD_OFFSETS_TO_TXN.key: 3,
    TXN_OFFSET_COMMIT.key: 3,
    INIT_PRODUCER_ID.key: 5,
    PRODUCE.key: 11,
}
#: ... and of transaction version 2 (v6 of InitProducerId is KIP-939's two-phase commit)
_TV2_MAX = {END_TXN.key: 5, TXN_OFFSET_COMMIT.key: 5, INIT_PRODUCER_ID.key: 5, PRODUCE.key: 12}
#: first and largest pause (s) after CONCURRENT_TRANSACTIONS: the coordinator is writing the
#: last transaction's markers, which takes milliseconds (Java waits 20 ms at once)
_BUSY_FIRST, _BUSY_MAX = 0.002, 0.05
#: errors that make a coordinator request find the coordinator again before its retry
_FIND_AGAIN = (
    NotCoordinatorError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaTimeoutError,
)
#: error codes fatal to the producer (Java's fatal class); every other failure inside a
#: transaction is abortable: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH,
#: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED, INVALID_TXN_STATE,
#: INVALID_PRODUCER_ID_MAPPING, INVALID_TRANSACTION_TIMEOUT, TRANSACTION_COORDINATOR_FENCED,
#: UNSUPPORTED_VERSION, UNSUPPORTED_FOR_MESSAGE_FORMAT
_FATAL = frozenset({90, 47, 53, 31, 48, 49, 50, 52, 35, 43})
#: ... of a Produce response (a batch that failed for good): Java's
#: ``TransactionManager.maybeTransitionToErrorState`` makes only fencing, authorization and
#: UNSUPPORTED_VERSION fatal there; INVALID_TXN_STATE (a partition leader's verdict after the
#: coordinator lost or ended the transaction, e.g. across its restart) and the rest abort
_FATAL_IN_PRODUCE = frozenset({90, 47, 53, 31, 35})
#: errors that ask for an epoch bump (KIP-360) once the transaction is aborted:
#: OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID
_BUMP = frozenset({45, 59})


def fenced(error: BaseException) -> BaseException:
    """PRODUCER_FENCED stays; INVALID_PRODUCER_EPOCH becomes ProducerFencedError (Java's
    mapping: both mean a newer instance with this transactional.id took over)."""
    if isinstance(error, InvalidProducerEpochError):
        err = ProducerFencedError(
            f"fenced by a newer producer with this transactional.id ({error})"
        )
        err.__cause__ = error
        return err
    return error


def is_abortable(error: BaseException, produce: bool = False) -> bool:
    """Whether aborting the transaction cures ``error`` (else it is fatal to the producer);
    ``produce``: the error failed a batch (see ``_FATAL_IN_PRODUCE``), not a coordinator request."""
    if isinstance(error, IllegalStateError):
        return False
    return getattr(error, "errno", None) not in (_FATAL_IN_PRODUCE if produce else _FATAL)


class TxnState(IdempotentState):
    """Producer id, epoch, sequences and the transaction state of one transactional producer."""

    def __init__(
        self,
        transactional_id: str,
        transaction_timeout_ms: int = 60000,
        backoff: float = 0.1,
        max_block: float = 60.0,
    ) -> None:
        """Nothing is sent until :func:`init_transactions` (or :meth:`resume`)."""
        super().__init__(transactional_id, transaction_timeout_ms)
        self.tid = transactional_id
        self.state = UNINITIALIZED
        self.error: BaseException | None = None
        self.partitions: set[TP] = set()
        self.has_offsets = False
        self.resumed = False
        self.bump_after_abort = False
        self.backoff, self.max_block = backoff, max_block
        #: transactions v2 (KIP-890) with this coordinator; None until asked (see the module)
        self.tv2: bool | None = None
        #: (key type, key) -> where that coordinator is (found again when it moves)
        self.coordinators: dict[tuple[int, str], CoordinatorState] = {}

    def coordinator(self, key_type: int, key: str) -> CoordinatorState:
        """The coordinator of the transactional id (``key_type`` 1) or a group (0)."""
        state = self.coordinators.get((key_type, key))
        if state is None:
            state = self.coordinators[(key_type, key)] = CoordinatorState(
                key, key_type, backoff_s=self.backoff
            )
        return state

    # -- checks ---------------------------------------------------------------------------------
    def check(self, *allowed: str) -> None:
        """Raise unless the state is one of ``allowed`` (a fatal error is raised again)."""
        if self.state == FATAL_ERROR and FATAL_ERROR not in allowed:
            assert self.error is not None
            raise self.error
        if self.state == ABORTABLE_ERROR and ABORTABLE_ERROR not in allowed:
            raise TransactionAbortableError(
                f"transaction of {self.tid!r} must be aborted: {self.error}"
            ) from self.error
        if self.state not in allowed:
            raise IllegalStateError(
                f"transactional producer {self.tid!r} is {self.state}; "
                f"this needs {' or '.join(allowed)}"
            )

    def check_send(self) -> None:
        """Sends belong to a transaction begun here (a resumed one only commits or aborts)."""
        self.check(IN_TRANSACTION)
        if self.resumed:
            raise IllegalStateError(
                "a resumed transaction can only be committed or aborted: its writer's sequence "
                "numbers are unknown here"
            )

    # -- transitions without a request ----------------------------------------------------------
    def record_failure(
        self, error: BaseException, sequenced: bool = False, produce: bool = False
    ) -> None:
        """A batch (``produce``; ``sequenced``: one that had sequence numbers, so they now have
        a gap) or a coordinator request failed for good: the transaction cannot commit."""
        error = fenced(error)
        if self.state == FATAL_ERROR:
            return
        if not is_abortable(error, produce):
            self.fatal(error)
            return
        if sequenced or getattr(error, "errno", None) in _BUMP:
            self.bump_after_abort = True
        if self.state == IN_TRANSACTION:
            self.state, self.error = ABORTABLE_ERROR, error

    def fatal(self, error: BaseException) -> BaseException:
        """Enter FATAL_ERROR with ``error`` (returned, to be raised)."""
        self.state, self.error = FATAL_ERROR, error
        log.error("transactional producer %r: fatal error %s", self.tid, error)
        return error

    def begin(self) -> None:
        """Start a transaction (local only: the coordinator learns of it with the first send)."""
        self.check(READY)
        self.partitions, self.has_offsets = set(), False
        self.state = IN_TRANSACTION

    def resume(self, producer_id: int, epoch: int) -> None:
        """Take over the open transaction of ``producer_id`` / ``epoch`` (another process wrote
        it), to commit or abort it: no InitProducerId, which would abort it."""
        self.check(UNINITIALIZED, READY)
        self.set_producer_id(producer_id, epoch)
        self.partitions, self.has_offsets = set(), False
        self.state, self.resumed = IN_TRANSACTION, True

    @property
    def transaction_version(self) -> int | None:
        """2 (KIP-890) or 1, as negotiated with the coordinator; None before that."""
        return None if self.tv2 is None else 2 if self.tv2 else 1

    def max_version(self, api: Api[Any, Any]) -> int | None:
        """The highest version of ``api`` this transaction version may send (None: no cap)."""
        return (_TV2_MAX if self.tv2 else _TV1_MAX).get(api.key)

    def produce_max_version(self) -> int | None:
        """Produce inside a transaction: v12 is transactions v2, so v11 at most for v1."""
        return self.max_version(PRODUCE)

    def raise_classified(self, exc: BaseException) -> None:
        """Record a coordinator error as abortable or fatal and raise it (fenced: see
        :func:`fenced`); a timeout or a retriable error changes no state."""
        if isinstance(exc, KafkaTimeoutError) or getattr(exc, "retriable", False):
            raise exc
        self.record_failure(exc)
        raise fenced(exc)


class ProducerIdentity:
    """What both producers show of their core state: producer id, epoch, transaction version
    (a face mixes this in and says where its state is)."""

    def _identity(self) -> IdempotentState | None:
        """This producer's idempotent or transactional state; None when neither is on."""
        raise NotImplementedError

    @property
    def transaction_version(self) -> int | None:
        """2 when transactions v2 (KIP-890) were negotiated with the coordinator, 1 for v1;
        None before init_transactions() (or without transactional.id)."""
        state = self._identity()
        return state.transaction_version if isinstance(state, TxnState) else None

    @property
    def producer_id_and_epoch(self) -> tuple[int, int]:
        """This producer's id and epoch ((-1, -1) before the first InitProducerId)."""
        state = self._identity()
        return (-1, -1) if state is None else (state.producer_id, state.epoch)


# -- conversations ------------------------------------------------------------------------------
def coordinator_request(
    txn: TxnState,
    api: Api[Any, Any],
    body: Mapping[str, Any],
    code_of: Callable[[Any], int],
    key: str | None = None,
    key_type: int = TXN_KEY,
) -> Conversation[Any]:
    """One request to the transaction coordinator (or ``key``'s group coordinator), retried as
    the module says; a response error other than those retried is raised."""
    coord = txn.coordinator(key_type, txn.tid if key is None else key)
    deadline = time.monotonic() + txn.max_block
    busy = _BUSY_FIRST
    while True:
        try:
            address = coord.address
            if address is None:
                address = yield from find_coordinator(coord)
            resp = yield Request(api, body, node=address.node_id, max_version=txn.max_version(api))
            code = code_of(resp)
            if code:
                raise error_for_code(code)(f"{api.name} for {txn.tid!r}")
            return resp
        except KafkaError as exc:
            if not getattr(exc, "retriable", False) and not isinstance(exc, _FIND_AGAIN):
                raise
            if time.monotonic() + txn.backoff >= deadline:
                raise KafkaTimeoutError(
                    f"{api.name} for {txn.tid!r}: gave up after max.block.ms: {exc}"
                ) from exc
            if isinstance(exc, _FIND_AGAIN):
                coord.forget()
            pause = txn.backoff
            if isinstance(exc, ConcurrentTransactionsError):  # markers being written:
                pause, busy = busy, min(busy * 2, _BUSY_MAX)  # back soon, then slower
            log.debug("%s for %r: %s; retrying", api.name, txn.tid, exc)
        yield Sleep(pause)


def _fatal_on_error(txn: TxnState, api: Any, body: dict[str, Any]) -> Conversation[Any]:
    """A coordinator request whose non-retriable error makes the producer fatal (fenced when
    the broker says so); running out of max.block.ms stays a KafkaTimeoutError."""
    try:
        return (yield from coordinator_request(txn, api, body, lambda r: r.error_code))
    except KafkaError as exc:
        if isinstance(exc, KafkaTimeoutError):
            raise
        raise txn.fatal(fenced(exc)) from exc


def _init_producer_id(txn: TxnState, producer_id: int, epoch: int) -> Conversation[None]:
    body = {
        "transactional_id": txn.tid,
        "transaction_timeout_ms": txn.transaction_timeout_ms,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }
    resp = yield from _fatal_on_error(txn, INIT_PRODUCER_ID, body)
    txn.set_producer_id(resp.producer_id, resp.producer_epoch)
    log.info(
        "transactional producer %r: id %d epoch %d", txn.tid, resp.producer_id, resp.producer_epoch
    )


def negotiate(txn: TxnState) -> Conversation[bool]:
    """ApiVersions at the transaction coordinator: whether transactions v2 apply (see the
    module docstring); remembered in ``txn.tv2``.  A coordinator that does not answer leaves
    v1, which every broker since 0.11 takes."""
    coord = txn.coordinator(TXN_KEY, txn.tid)
    try:
        address = coord.address
        if address is None:
            address = yield from find_coordinator(coord)
        resp = yield Request(API_VERSIONS, {}, node=address.node_id)
    except KafkaError as exc:
        log.warning(
            "transactional producer %r: ApiVersions at the coordinator failed (%s); "
            "using transactions v1",
            txn.tid,
            exc,
        )
        txn.tv2 = False
        return False
    served = {k.api_key: k.max_version for k in resp.api_keys}
    txn.tv2 = (
        finalized_features(resp).get("transaction.version", 0) >= 2
        and served.get(END_TXN.key, -1) >= 5
        and served.get(PRODUCE.key, -1) >= 12
        and PRODUCE.max_version >= 12
    )
    log.info("transactional producer %r: transactions v%d", txn.tid, 2 if txn.tv2 else 1)
    return txn.tv2


def init_transactions(txn: TxnState) -> Conversation[None]:
    """Get this transactional id's producer id and epoch: fences older instances and aborts
    (or completes) the transaction they left open; then which transaction version applies."""
    txn.check(UNINITIALIZED, READY)
    yield from _init_producer_id(txn, -1, -1)
    if txn.tv2 is None:
        yield from negotiate(txn)
    txn.state = READY


def add_partitions(txn: TxnState, tps: Iterable[TP]) -> Conversation[None]:
    """AddPartitionsToTxn for the partitions not yet in the transaction (before their first
    batch); raises what failed, recorded as abortable or fatal."""
    new = sorted(set(tps) - txn.partitions)
    if not new:
        return
    txn.check(IN_TRANSACTION)
    if txn.tv2:  # v2: the first Produce adds the partition
        txn.partitions.update(new)
        return
    by_topic: dict[str, list[int]] = {}
    for t, p in new:
        by_topic.setdefault(t, []).append(p)
    body = {
        "v3_and_below_transactional_id": txn.tid,
        "v3_and_below_producer_id": txn.producer_id,
        "v3_and_below_producer_epoch": txn.epoch,
        "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
    try:
        yield from coordinator_request(txn, ADD_PARTITIONS_TO_TXN, body, _partition_error)
    except KafkaError as exc:
        txn.raise_classified(exc)
    txn.partitions.update(new)


def send_offsets(
    txn: TxnState, offsets: Mapping[TP, tuple[int, str]], group: Any
) -> Conversation[None]:
    """AddOffsetsToTxn at the transaction coordinator, then TxnOffsetCommit at the group's:
    the offsets become the group's committed offsets only if the transaction commits."""
    group_id, generation, member, instance = group_fields(group)
    txn.check_send()
    body = {
        "transactional_id": txn.tid,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.epoch,
        "group_id": group_id,
    }
    try:
        if not txn.tv2:  # v2: TxnOffsetCommit adds the offsets itself
            yield from coordinator_request(txn, ADD_OFFSETS_TO_TXN, body, lambda r: r.error_code)
        txn.has_offsets = True
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), (off, meta) in sorted(offsets.items()):
            by_topic.setdefault(t, []).append(
                {
                    "partition_index": p,
                    "committed_offset": off,
                    "committed_leader_epoch": -1,
                    "committed_metadata": meta,
                }
            )
        commit = {
            "transactional_id": txn.tid,
            "group_id": group_id,
            "producer_id": txn.producer_id,
            "producer_epoch": txn.epoch,
            "generation_id": generation,
            "member_id": member,
            "group_instance_id": instance,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        yield from coordinator_request(
            txn, TXN_OFFSET_COMMIT, commit, _topic_error, key=group_id, key_type=GROUP_KEY
        )
    except KafkaError as exc:
        txn.raise_classified(exc)


def end_transaction(txn: TxnState, commit: bool) -> Conversation[None]:
    """EndTxn (when anything joined the transaction), then READY for the next one; after an
    abort that a sequence error caused, InitProducerId with the current id bumps the epoch."""
    if commit:
        txn.check(IN_TRANSACTION)
    else:
        txn.check(IN_TRANSACTION, ABORTABLE_ERROR)
    if txn.partitions or txn.has_offsets or txn.resumed:
        if txn.tv2 is None:  # a resumed transaction: not negotiated yet
            yield from negotiate(txn)
        body = {
            "transactional_id": txn.tid,
            "producer_id": txn.producer_id,
            "producer_epoch": txn.epoch,
            "committed": commit,
        }
        resp = yield from _fatal_on_error(txn, END_TXN, body)
        if txn.tv2 and resp.producer_id >= 0:  # v2: the coordinator bumped the epoch
            txn.set_producer_id(resp.producer_id, resp.producer_epoch)
            txn.bump_after_abort = False
    txn.partitions, txn.has_offsets = set(), False
    txn.state, txn.error, txn.resumed = READY, None, False
    if not commit and txn.bump_after_abort:
        txn.bump_after_abort = False
        yield from _init_producer_id(txn, txn.producer_id, txn.epoch)  # KIP-360 epoch bump


def _partition_error(resp: Any) -> int:
    """The first error of an AddPartitionsToTxn response (OPERATION_NOT_ATTEMPTED last)."""
    codes = [
        p.partition_error_code
        for t in resp.results_by_topic_v3_and_below
        for p in t.results_by_partition
        if p.partition_error_code
    ]
    real = [c for c in codes if c != 55]
    return int((real or codes or [0])[0])


def _topic_error(resp: Any) -> int:
    """The first partition error of a TxnOffsetCommit response."""
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code:
                return int(p.error_code)
    return 0


def offsets_to_commit(offsets: Mapping[Any, Any]) -> dict[TP, tuple[int, str]]:
    """``{(topic, partition): (offset, metadata)}`` from the forms send_offsets_to_transaction
    accepts: keys ``(topic, partition)`` or with ``topic`` / ``partition``, values an int or
    with ``offset`` (and ``metadata``)."""
    out = {}
    for tp, value in offsets.items():
        topic, partition = (tp.topic, tp.partition) if hasattr(tp, "topic") else tp
        if isinstance(value, int):
            out[(topic, int(partition))] = (value, "")
        else:
            out[(topic, int(partition))] = (int(value.offset), getattr(value, "metadata", "") or "")
    return out


def group_fields(group: Any) -> tuple[str, int, str, str | None]:
    """(group id, generation, member id, group instance id) of a group id or of an object with
    Java's ConsumerGroupMetadata fields (``group_id``, ``generation_id``, ``member_id``,
    ``group_instance_id``)."""
    if isinstance(group, str):
        return group, -1, "", None
    return (
        group.group_id,
        getattr(group, "generation_id", -1),
        getattr(group, "member_id", "") or "",
        getattr(group, "group_instance_id", None),
    )
