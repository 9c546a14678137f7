"""Transactional producer state on the client (KIP-98), as Java's TransactionManager keeps it.

States: UNINITIALIZED -> (init_transactions) READY -> (begin_transaction) IN_TRANSACTION ->
(commit / abort) READY.  A failure inside a transaction that aborting cures (a batch that failed
for good, an authorization error on a topic or group, a rejected offset commit) moves it to
ABORTABLE_ERROR: sends and commit raise TransactionAbortableError until abort_transaction().
A failure nothing cures (fencing by a newer instance, PRODUCER_FENCED or INVALID_PRODUCER_EPOCH,
raised as ProducerFencedError; a refused transactional id; an invalid transaction state) moves
it to FATAL_ERROR: every later call raises it again and only close() is left.

Coordinator requests retry NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE (finding the coordinator
again), COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS (the previous transaction's
markers are still being written) until ``max.block.ms`` (60 s) has passed.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kclient.cluster import Cluster
from kclient.connection import ConnectionSettings
from kclient.consumer.offsets import Coordinator
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
    END_TXN,
    INIT_PRODUCER_ID,
    TXN_OFFSET_COMMIT,
)
from kclient.protocol.schema import Api

from .idempotence import TransactionManager

__all__ = ["Transactions", "UNINITIALIZED", "READY", "IN_TRANSACTION", "ABORTABLE_ERROR",
           "FATAL_ERROR", "TP"]

log = logging.getLogger(__name__)

UNINITIALIZED, READY, IN_TRANSACTION = "UNINITIALIZED", "READY", "IN_TRANSACTION"
ABORTABLE_ERROR, FATAL_ERROR = "ABORTABLE_ERROR", "FATAL_ERROR"
TP = tuple[str, int]
_Resp = TypeVar("_Resp")

#: versions of transaction version 1 (KIP-98): v5 of EndTxn / v4+ of AddPartitionsToTxn are
#: transaction version 2 (KIP-890), where the broker adds partitions and bumps epochs itself
_TV1_MAX = {ADD_PARTITIONS_TO_TXN.key: 3, END_TXN.key: 4, ADD_OFFSETS_TO_TXN.key: 3,
            TXN_OFFSET_COMMIT.key: 3, INIT_PRODUCER_ID.key: 5}
#: first and largest pause (s) after CONCURRENT_TRANSACTIONS: the coordinator is writing the
#: last transaction's markers, which takes milliseconds (Java waits 20 ms at once)
_BUSY_FIRST, _BUSY_MAX = 0.002, 0.05
#: errors that make a coordinator request find the coordinator again before its retry
_FIND_AGAIN = (NotCoordinatorError, CoordinatorNotAvailableError, KafkaConnectionError,
               KafkaTimeoutError)
#: error codes fatal to the producer (Java's fatal class); every other failure inside a
#: transaction is abortable: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH,
#: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED, INVALID_TXN_STATE,
#: INVALID_PRODUCER_ID_MAPPING, INVALID_TRANSACTION_TIMEOUT, TRANSACTION_COORDINATOR_FENCED,
#: UNSUPPORTED_VERSION, UNSUPPORTED_FOR_MESSAGE_FORMAT
_FATAL = frozenset({90, 47, 53, 31, 48, 49, 50, 52, 35, 43})
#: errors that ask for an epoch bump (KIP-360) once the transaction is aborted:
#: OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID
_BUMP = frozenset({45, 59})


def fenced(error: BaseException) -> BaseException:
    """PRODUCER_FENCED stays; INVALID_PRODUCER_EPOCH becomes ProducerFencedError (Java's
    mapping: both mean a newer instance with this transactional.id took over)."""
    if isinstance(error, InvalidProducerEpochError):
        err = ProducerFencedError(f"fenced by a newer producer with this transactional.id "
                                  f"({error})")
        err.__cause__ = error
        return err
    return error


def is_abortable(error: BaseException) -> bool:
    """Whether aborting the transaction cures ``error`` (else it is fatal to the producer)."""
    if isinstance(error, IllegalStateError):
        return False
    return getattr(error, "errno", None) not in _FATAL


class Transactions(TransactionManager):
    """Producer id, epoch, sequences and the transaction state of one transactional producer.

    Thread-safe: the send thread calls :meth:`add_partitions` and :meth:`record_failure`, the
    caller's thread everything else; one lock orders the coordinator requests.
    """

    def __init__(self, transactional_id: str, transaction_timeout_ms: int,
                 bootstrap: list[tuple[str, int]],
                 settings: ConnectionSettings, backoff_ms: int = 100,
                 max_block_ms: int = 60000) -> None:
        """Nothing is sent until :meth:`init_transactions` (or :meth:`resume`)."""
        super().__init__(transactional_id, transaction_timeout_ms)
        self.tid = transactional_id
        self.state = UNINITIALIZED
        self.error: BaseException | None = None
        self.partitions: set[TP] = set()
        self.has_offsets = False
        self.resumed = False
        self.bump_after_abort = False
        self.backoff = backoff_ms / 1000.0
        self.max_block = max_block_ms / 1000.0
        self._lock = threading.RLock()
        self._cluster = Cluster([f"{h}:{p}" for h, p in bootstrap], settings)
        self.coordinator = Coordinator(self._cluster, transactional_id, backoff_ms,
                                       settings=settings, key_type=1)
        self._groups: dict[str, Coordinator] = {}

    # ------------------------------------------------------------------ checks
    def check(self, *allowed: str) -> None:
        """Raise unless the state is one of ``allowed`` (a fatal error is raised again)."""
        if self.state == FATAL_ERROR and FATAL_ERROR not in allowed:
            assert self.error is not None
            raise self.error
        if self.state == ABORTABLE_ERROR and ABORTABLE_ERROR not in allowed:
            raise TransactionAbortableError(
                f"transaction of {self.tid!r} must be aborted: {self.error}") from self.error
        if self.state not in allowed:
            raise IllegalStateError(f"transactional producer {self.tid!r} is {self.state}; "
                                    f"this needs {' or '.join(allowed)}")

    def check_send(self) -> None:
        """Sends belong to a transaction begun here (a resumed one only commits or aborts)."""
        self.check(IN_TRANSACTION)
        if self.resumed:
            raise IllegalStateError(
                "a resumed transaction can only be committed or aborted: its writer's sequence "
                "numbers are unknown here")

    def record_failure(self, error: BaseException, sequenced: bool = False) -> None:
        """A batch (``sequenced``: one that had sequence numbers, so they now have a gap) or a
        coordinator request failed for good: the transaction cannot commit."""
        error = fenced(error)
        with self._lock:
            if self.state == FATAL_ERROR:
                return
            if not is_abortable(error):
                self._fatal(error)
                return
            if sequenced or getattr(error, "errno", None) in _BUMP:
                self.bump_after_abort = True
            if self.state == IN_TRANSACTION:
                self.state, self.error = ABORTABLE_ERROR, error

    def _fatal(self, error: BaseException) -> BaseException:
        self.state, self.error = FATAL_ERROR, error
        log.error("transactional producer %r: fatal error %s", self.tid, error)
        return error

    # ------------------------------------------------------------------ coordinator
    def _request(self, api: Api[Any, _Resp], body: Mapping[str, Any],
                 code_of: Callable[[_Resp], int], coordinator: Coordinator | None = None
                 ) -> _Resp:
        """One request to the transaction (or a group) coordinator, retried as the module says;
        a response error other than those retried is raised."""
        coord = coordinator or self.coordinator
        deadline = time.monotonic() + self.max_block
        busy = _BUSY_FIRST
        while True:
            try:
                conn = coord.connection()
                version = conn.version(api, _TV1_MAX.get(api.key))
                resp = conn.request(api, body, version)
                code = code_of(resp)
                if code:
                    raise error_for_code(code)(f"{api.name} for {self.tid!r}")
                return resp
            except KafkaError as exc:
                if not getattr(exc, "retriable", False) and not isinstance(exc, _FIND_AGAIN):
                    raise
                if time.monotonic() + self.backoff >= deadline:
                    raise KafkaTimeoutError(f"{api.name} for {self.tid!r}: gave up after "
                                            f"max.block.ms: {exc}") from exc
                if isinstance(exc, _FIND_AGAIN):
                    coord.reset()
                pause = self.backoff
                if isinstance(exc, ConcurrentTransactionsError):    # markers being written:
                    pause, busy = busy, min(busy * 2, _BUSY_MAX)    # back soon, then slower
                log.debug("%s for %r: %s; retrying", api.name, self.tid, exc)
                time.sleep(pause)

    def _raise_classified(self, exc: BaseException) -> None:
        """Record a coordinator error as abortable or fatal and raise it (fenced: see
        :func:`fenced`); a timeout or a retriable error changes no state."""
        if isinstance(exc, KafkaTimeoutError) or getattr(exc, "retriable", False):
            raise exc
        self.record_failure(exc)
        raise fenced(exc)

    # ------------------------------------------------------------------ lifecycle
    def init_transactions(self) -> None:
        """Get this transactional id's producer id and epoch: fences older instances and aborts
        (or completes) the transaction they left open."""
        with self._lock:
            self.check(UNINITIALIZED, READY)
            self._init_producer_id(-1, -1)
            self.state = READY

    def _init_producer_id(self, producer_id: int, epoch: int) -> None:
        body = {"transactional_id": self.tid,
                "transaction_timeout_ms": self.transaction_timeout_ms,
                "producer_id": producer_id, "producer_epoch": epoch}
        try:
            resp = self._request(INIT_PRODUCER_ID, body, lambda r: r.error_code)
        except KafkaError as exc:
            if isinstance(exc, KafkaTimeoutError):
                raise
            raise self._fatal(fenced(exc)) from exc
        self.set_producer_id(resp.producer_id, resp.producer_epoch)
        log.info("transactional producer %r: id %d epoch %d", self.tid, resp.producer_id,
                 resp.producer_epoch)

    def resume(self, producer_id: int, epoch: int) -> None:
        """Take over the open transaction of ``producer_id`` / ``epoch`` (another process wrote
        it), to commit or abort it: no InitProducerId, which would abort it."""
        with self._lock:
            self.check(UNINITIALIZED, READY)
            self.set_producer_id(producer_id, epoch)
            self.partitions, self.has_offsets = set(), False
            self.state, self.resumed = IN_TRANSACTION, True

    def begin(self) -> None:
        """Start a transaction (local only: the coordinator learns of it with the first send)."""
        with self._lock:
            self.check(READY)
            self.partitions, self.has_offsets = set(), False
            self.state = IN_TRANSACTION

    def add_partitions(self, tps: Iterable[TP]) -> None:
        """AddPartitionsToTxn for the partitions not yet in the transaction (send thread, before
        their first batch); raises what failed, recorded as abortable or fatal."""
        with self._lock:
            new = sorted(set(tps) - self.partitions)
            if not new:
                return
            self.check(IN_TRANSACTION)
            by_topic: dict[str, list[int]] = {}
            for t, p in new:
                by_topic.setdefault(t, []).append(p)
            body = {"v3_and_below_transactional_id": self.tid,
                    "v3_and_below_producer_id": self.producer_id,
                    "v3_and_below_producer_epoch": self.epoch,
                    "v3_and_below_topics": [{"name": t, "partitions": ps}
                                            for t, ps in by_topic.items()]}
            try:
                self._request(ADD_PARTITIONS_TO_TXN, body, _partition_error)
            except KafkaError as exc:
                self._raise_classified(exc)
            self.partitions.update(new)

    def send_offsets(self, offsets: Mapping[TP, tuple[int, str]], group: Any) -> None:
        """AddOffsetsToTxn at the transaction coordinator, then TxnOffsetCommit at the group's:
        the offsets become the group's committed offsets only if the transaction commits."""
        group_id, generation, member, instance = _group_fields(group)
        with self._lock:
            self.check_send()
            body = {"transactional_id": self.tid, "producer_id": self.producer_id,
                    "producer_epoch": self.epoch, "group_id": group_id}
            try:
                self._request(ADD_OFFSETS_TO_TXN, body, lambda r: r.error_code)
                self.has_offsets = True
                by_topic: dict[str, list[dict[str, Any]]] = {}
                for (t, p), (off, meta) in sorted(offsets.items()):
                    by_topic.setdefault(t, []).append(
                        {"partition_index": p, "committed_offset": off,
                         "committed_leader_epoch": -1, "committed_metadata": meta})
                commit = {"transactional_id": self.tid, "group_id": group_id,
                          "producer_id": self.producer_id, "producer_epoch": self.epoch,
                          "generation_id": generation, "member_id": member,
                          "group_instance_id": instance,
                          "topics": [{"name": t, "partitions": ps}
                                     for t, ps in by_topic.items()]}
                self._request(TXN_OFFSET_COMMIT, commit, _topic_error,
                              coordinator=self._group_coordinator(group_id))
            except KafkaError as exc:
                self._raise_classified(exc)

    def _group_coordinator(self, group_id: str) -> Coordinator:
        coord = self._groups.get(group_id)
        if coord is None:
            coord = self._groups[group_id] = Coordinator(
                self._cluster, group_id, int(self.backoff * 1000),
                settings=self.coordinator.settings)
        return coord

    def end(self, commit: bool) -> None:
        """EndTxn (when anything joined the transaction), then READY for the next one."""
        with self._lock:
            if commit:
                self.check(IN_TRANSACTION)
            else:
                self.check(IN_TRANSACTION, ABORTABLE_ERROR)
            if self.partitions or self.has_offsets or self.resumed:
                body = {"transactional_id": self.tid, "producer_id": self.producer_id,
                        "producer_epoch": self.epoch, "committed": commit}
                try:
                    self._request(END_TXN, body, lambda r: r.error_code)
                except KafkaError as exc:
                    if isinstance(exc, KafkaTimeoutError):
                        raise
                    raise self._fatal(fenced(exc)) from exc
            self.partitions, self.has_offsets = set(), False
            self.state, self.error, self.resumed = READY, None, False
            if not commit and self.bump_after_abort:
                self.bump_after_abort = False
                self._init_producer_id(self.producer_id, self.epoch)   # KIP-360 epoch bump

    def close(self) -> None:
        """Close the coordinator connections (an open transaction is left to its timeout, or
        to whoever resumes it)."""
        for coord in [self.coordinator, *self._groups.values()]:
            coord.close()
        self._cluster.close()


def _partition_error(resp: Any) -> int:
    """The first error of an AddPartitionsToTxn response (OPERATION_NOT_ATTEMPTED last)."""
    codes = [p.partition_error_code for t in resp.results_by_topic_v3_and_below
             for p in t.results_by_partition if p.partition_error_code]
    real = [c for c in codes if c != 55]
    return int((real or codes or [0])[0])


def _topic_error(resp: Any) -> int:
    """The first partition error of a TxnOffsetCommit response."""
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code:
                return int(p.error_code)
    return 0


def _group_fields(group: Any) -> tuple[str, int, str, str | None]:
    """(group id, generation, member id, group instance id) of a group id or of an object with
    Java's ConsumerGroupMetadata fields (``group_id``, ``generation_id``, ``member_id``,
    ``group_instance_id``)."""
    if isinstance(group, str):
        return group, -1, "", None
    return (group.group_id, getattr(group, "generation_id", -1),
            getattr(group, "member_id", "") or "", getattr(group, "group_instance_id", None))
