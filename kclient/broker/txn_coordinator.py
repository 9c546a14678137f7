"""The transaction coordinator, as Kafka's TransactionCoordinator (transaction versions 1 and 2).

Per transactional id it keeps a :class:`~.txn_schema.TxnMetadata` in ``__transaction_state``
(:class:`~.txn_log.TransactionLog`) and moves it through Kafka's states: InitProducerId gives
a new producer id (epoch 0) or bumps the epoch, fencing the previous producer, and aborts a
transaction that producer left Ongoing (answering CONCURRENT_TRANSACTIONS, as Kafka, so the
client retries); AddPartitionsToTxn / AddOffsetsToTxn make it Ongoing; EndTxn writes
PrepareCommit or PrepareAbort, has the markers written to every partition of the transaction
(the ``write_markers`` callable: local logs, or those of the in-process cluster), then writes
CompleteCommit or CompleteAbort.  A marker that cannot be written (leader down) leaves the
transaction prepared; the timer thread retries it, and clients get CONCURRENT_TRANSACTIONS
meanwhile.  The timer also aborts, with an epoch bump, every transaction Ongoing for longer than
its ``transaction.timeout.ms`` (``transaction.abort.timed.out.transaction.cleanup.interval.ms``).
Errors are returned as Kafka error codes; PRODUCER_FENCED is mapped to INVALID_PRODUCER_EPOCH
for old request versions by the handlers.

Transactions v2 (KIP-890 part 2), finalized as the ``transaction.version`` feature (broker config
``transaction.version``, 2 by default; 1 or 0 turn it off, as Kafka's feature levels do): EndTxn
v5 (:meth:`TransactionCoordinator.end_txn_v2`) bumps the epoch with every commit or abort, writes
the markers with the bumped epoch (a zombie of the transaction is fenced by every partition) and
answers with the producer id and epoch for the next transaction (a new producer id once the epoch
is exhausted); partitions join with the transaction's Produce v12 and TxnOffsetCommit v5 (the
handlers call :meth:`~TransactionCoordinator.add_partitions`).  Older Produce versions are
verified (KIP-890 part 1, :meth:`~TransactionCoordinator.verify`, with the leader's mapping of
:func:`leader_error`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kclient.protocol import error_codes as E

from .txn_log import TransactionLog
from .txn_schema import TxnMetadata, TxnState

__all__ = [
    "TransactionCoordinator",
    "MarkerWriter",
    "TopicPartition",
    "old_fenced",
    "old_abortable",
    "leader_error",
    "transaction_version",
]

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
#: (producer id, epoch, commit, partitions) -> the partitions whose marker could not be written
MarkerWriter = Callable[[int, int, bool, Iterable[TopicPartition]], set[TopicPartition]]

NONE = 0
CONCURRENT_TRANSACTIONS = E.ConcurrentTransactionsError.errno
INVALID_PRODUCER_ID_MAPPING = E.InvalidProducerIdMappingError.errno
INVALID_TXN_STATE = E.InvalidTxnStateError.errno
INVALID_TRANSACTION_TIMEOUT = E.InvalidTransactionTimeoutError.errno
PRODUCER_FENCED = E.ProducerFencedError.errno
INVALID_PRODUCER_EPOCH = E.InvalidProducerEpochError.errno
NOT_COORDINATOR = E.NotCoordinatorError.errno
COORDINATOR_NOT_AVAILABLE = E.CoordinatorNotAvailableError.errno
COORDINATOR_LOAD_IN_PROGRESS = E.CoordinatorLoadInProgressError.errno
TRANSACTION_ABORTABLE = E.TransactionAbortableError.errno
NOT_ENOUGH_REPLICAS = E.NotEnoughReplicasError.errno
#: the ``transaction.version`` feature levels a broker supports (Kafka's TransactionVersion)
TRANSACTION_VERSIONS = (0, 2)
#: Kafka bumps to a new producer id once the epoch would reach Short.MaxValue
_MAX_EPOCH = 32767 - 1
_PREPARED = {TxnState.PREPARE_COMMIT: True, TxnState.PREPARE_ABORT: False}
_COMPLETE = {TxnState.COMPLETE_COMMIT: True, TxnState.COMPLETE_ABORT: False}
#: coordinator answers a leader turns into NOT_ENOUGH_REPLICAS, which every producer retries
#: without a metadata refresh (Kafka's ReplicaManager after a verification)
_RETRY_LATER = frozenset(
    {
        CONCURRENT_TRANSACTIONS,
        NOT_COORDINATOR,
        COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS,
    }
)


def transaction_version(config: Mapping[str, str]) -> int:
    """The finalized ``transaction.version`` feature level of a broker's config (default 2)."""
    raw = config.get("transaction.version", "2")
    level = int(raw)
    low, high = TRANSACTION_VERSIONS
    if not low <= level <= high:
        raise ValueError(
            f"broker config 'transaction.version': {raw!r} is not a supported "
            f"feature level ({low}-{high})"
        )
    return level


def leader_error(code: int, abortable: bool) -> int:
    """What a partition leader answers a producer for the coordinator's verdict on its
    transactional batch (Kafka's AddPartitionsToTxnManager and ReplicaManager):
    PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE as INVALID_TXN_STATE to
    requests older than that code (``abortable`` False), a busy or moving coordinator as
    NOT_ENOUGH_REPLICAS, an unknown producer id as INVALID_TXN_STATE."""
    if code == PRODUCER_FENCED:
        return INVALID_PRODUCER_EPOCH
    if code == TRANSACTION_ABORTABLE and not abortable:
        return INVALID_TXN_STATE
    if code in _RETRY_LATER:
        return NOT_ENOUGH_REPLICAS
    if code == INVALID_PRODUCER_ID_MAPPING:
        return INVALID_TXN_STATE
    return code


def old_fenced(code: int, version: int, first: int) -> int:
    """PRODUCER_FENCED as INVALID_PRODUCER_EPOCH for request versions below ``first``
    (KIP-588: older clients do not know the newer code), as Kafka's handlers answer."""
    return INVALID_PRODUCER_EPOCH if code == PRODUCER_FENCED and version < first else code


def old_abortable(code: int, version: int, first: int) -> int:
    """TRANSACTION_ABORTABLE as INVALID_TXN_STATE for request versions below ``first``
    (KIP-890: older clients do not know the newer code)."""
    return INVALID_TXN_STATE if code == TRANSACTION_ABORTABLE and version < first else code


def now_ms() -> int:
    """Wall-clock milliseconds (module level, so tests can move the clock)."""
    return int(time.time() * 1000)


class TransactionCoordinator:
    """Transactions of the ids this broker coordinates (see the module docstring)."""

    def __init__(
        self,
        directory: Path,
        node_id: int,
        config: Mapping[str, str],
        next_producer_id: Callable[[], int],
        write_markers: MarkerWriter,
    ) -> None:
        """``next_producer_id``: the broker's ProducerIdManager; ``write_markers``: see
        :data:`MarkerWriter`."""
        self.node_id = node_id
        #: the finalized transaction.version feature level (ApiVersions advertises it)
        self.version = transaction_version(config)
        self.store = TransactionLog(Path(directory), config)
        self.store.value_version = 1 if self.version >= 1 else 0
        self.max_timeout_ms = int(config.get("transaction.max.timeout.ms", 900000))
        self.check_s = (
            int(config.get("transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000))
            / 1000
        )
        self.next_producer_id = next_producer_id
        self.write_markers = write_markers
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._open = False

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        """Load the state, finish transactions a crash left prepared, start the timer."""
        with self._lock:
            self.store.open()
            self._open = True
            self._complete_prepared()
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._timer, daemon=True, name=f"txn-coordinator-{self.node_id}"
        )
        self._thread.start()

    def close(self) -> None:
        """Stop the timer and close the state log."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None
        with self._lock:
            if self._open:
                self._open = False
                self.store.close()

    def _timer(self) -> None:
        """Abort timed-out transactions and retry unwritten markers, periodically."""
        while not self._stop.wait(self.check_s):
            try:
                self.abort_timed_out()
                with self._lock:
                    if self._open:
                        self._complete_prepared()
            except Exception:  # keep the timer alive; the next round retries
                log.exception("transaction coordinator %d: timer failed", self.node_id)

    # ------------------------------------------------------------------ reads
    def get(self, transactional_id: str) -> TxnMetadata | None:
        """A copy of an id's metadata (None: unknown)."""
        with self._lock:
            meta = self.store.get(transactional_id)
            return dataclasses.replace(meta, partitions=set(meta.partitions)) if meta else None

    def transactions(self) -> list[TxnMetadata]:
        """Copies of every id's metadata."""
        with self._lock:
            return [
                dataclasses.replace(m, partitions=set(m.partitions))
                for m in self.store.txns.values()
            ]

    # ------------------------------------------------------------------ InitProducerId
    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int = -1, epoch: int = -1
    ) -> tuple[int, int, int]:
        """(error code, producer id, epoch) for a transactional producer (re)starting."""
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return INVALID_TRANSACTION_TIMEOUT, -1, -1
        with self._lock:
            if not self._open:
                return NOT_COORDINATOR, -1, -1
            meta = self.store.get(transactional_id)
            if meta is None:
                meta = TxnMetadata(
                    transactional_id,
                    self.next_producer_id(),
                    0,
                    timeout_ms,
                    last_update_ms=now_ms(),
                )
                self.store.write(meta)
                return NONE, meta.producer_id, meta.producer_epoch
            code = self._check_init(meta, producer_id, epoch)
            if code:
                return code, -1, -1
            if meta.state == TxnState.ONGOING:
                self._abort(meta, fence=True)
                return CONCURRENT_TRANSACTIONS, -1, -1
            if (
                producer_id >= 0
                and (producer_id, epoch) == (meta.producer_id, meta.last_epoch)
                and meta.state == TxnState.EMPTY
            ):
                return NONE, meta.producer_id, meta.producer_epoch  # a retried request
            new = self._bumped(meta)
            new.timeout_ms, new.state, new.partitions = timeout_ms, TxnState.EMPTY, set()
            new.start_ms, new.last_update_ms = -1, now_ms()
            self.store.write(new)
            return NONE, new.producer_id, new.producer_epoch

    def _check_init(self, meta: TxnMetadata, producer_id: int, epoch: int) -> int:
        """Why an InitProducerId must wait or is refused, or 0."""
        if meta.state in _PREPARED or meta.state == TxnState.PREPARE_EPOCH_FENCE:
            return CONCURRENT_TRANSACTIONS
        if producer_id >= 0 and (producer_id, epoch) not in (
            (meta.producer_id, meta.producer_epoch),
            (meta.producer_id, meta.last_epoch),
        ):
            return PRODUCER_FENCED
        return NONE

    def _bumped(self, meta: TxnMetadata) -> TxnMetadata:
        """A copy with the next epoch (a new producer id once the epoch is exhausted)."""
        if meta.producer_epoch >= _MAX_EPOCH:
            return dataclasses.replace(
                meta,
                producer_id=self.next_producer_id(),
                producer_epoch=0,
                last_epoch=-1,
                partitions=set(meta.partitions),
            )
        return dataclasses.replace(
            meta,
            producer_epoch=meta.producer_epoch + 1,
            last_epoch=meta.producer_epoch,
            partitions=set(meta.partitions),
        )

    # ------------------------------------------------------------------ AddPartitionsToTxn
    def check_producer(
        self, transactional_id: str, producer_id: int, epoch: int
    ) -> tuple[int, TxnMetadata | None]:
        """(error, metadata): the producer must be the id's current one (caller holds lock)."""
        if not self._open:
            return NOT_COORDINATOR, None
        meta = self.store.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING, meta
        if meta.producer_epoch != epoch:
            return PRODUCER_FENCED, meta
        return NONE, meta

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> int:
        """Add partitions to the transaction (which becomes Ongoing); an error code."""
        wanted = set(partitions)
        with self._lock:
            code, meta = self.check_producer(transactional_id, producer_id, epoch)
            if code or meta is None:
                return code
            if meta.state in _PREPARED or meta.state == TxnState.PREPARE_EPOCH_FENCE:
                return CONCURRENT_TRANSACTIONS
            if meta.state == TxnState.ONGOING and wanted <= meta.partitions:
                return NONE
            new = dataclasses.replace(
                meta, partitions=meta.partitions | wanted, last_update_ms=now_ms()
            )
            if meta.state != TxnState.ONGOING:
                new.state, new.start_ms, new.partitions = TxnState.ONGOING, now_ms(), wanted
            self.store.write(new)
            return NONE

    def verify(
        self, transactional_id: str | None, producer_id: int, epoch: int, partition: TopicPartition
    ) -> int:
        """Whether a transactional produce to ``partition`` belongs to the producer's Ongoing
        transaction (KIP-890 verification, Kafka's answer to a verify-only AddPartitionsToTxn):
        0, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS (its markers
        are being written) or TRANSACTION_ABORTABLE (not in the transaction)."""
        if transactional_id is None:
            return INVALID_TXN_STATE
        with self._lock:
            code, meta = self.check_producer(transactional_id, producer_id, epoch)
            if code or meta is None:
                return code or INVALID_PRODUCER_ID_MAPPING
            if meta.state in _PREPARED:
                return CONCURRENT_TRANSACTIONS
            if meta.state != TxnState.ONGOING or partition not in meta.partitions:
                return TRANSACTION_ABORTABLE
            return NONE

    # ------------------------------------------------------------------ EndTxn
    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        """Commit or abort the Ongoing transaction: markers written, state complete."""
        with self._lock:
            code, meta = self.check_producer(transactional_id, producer_id, epoch)
            if code or meta is None:
                return code
            state = meta.state
            if state == TxnState.ONGOING:
                return self._end(meta, commit)
            if state in _PREPARED:
                return CONCURRENT_TRANSACTIONS if _PREPARED[state] == commit else INVALID_TXN_STATE
            done = {TxnState.COMPLETE_COMMIT: True, TxnState.COMPLETE_ABORT: False}
            if state in done and done[state] == commit:
                return NONE  # a retried EndTxn
            return INVALID_TXN_STATE

    def end_txn_v2(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool
    ) -> tuple[int, int, int]:
        """EndTxn v5 (transactions v2): (error, producer id, epoch for the next transaction).
        The epoch is bumped with every end; a retry (the epoch one below, or the last epoch of
        a rotated producer id) gets the answer again; aborting with nothing Ongoing (Empty or
        complete) still bumps, as Kafka's table in TransactionCoordinator says."""
        with self._lock:
            if not self._open:
                return NOT_COORDINATOR, -1, -1
            meta = self.store.get(transactional_id)
            if meta is None:
                return INVALID_PRODUCER_ID_MAPPING, -1, -1
            code, retry = self._check_end_v2(meta, producer_id, epoch)
            if not code:
                code = self._end_v2(meta, commit, retry)
            if code:
                return code, -1, -1
            meta = self.store.get(transactional_id)
            assert meta is not None
            return NONE, meta.producer_id, meta.producer_epoch

    @staticmethod
    def _check_end_v2(meta: TxnMetadata, producer_id: int, epoch: int) -> tuple[int, bool]:
        """(error, whether the request is a retry of an EndTxn already done)."""
        overflow = (
            meta.previous_producer_id == producer_id
            and epoch == _MAX_EPOCH
            and meta.producer_epoch == 0
        )
        if meta.producer_id != producer_id and not overflow:
            return INVALID_PRODUCER_ID_MAPPING, False
        bumped = meta.producer_id == producer_id and meta.producer_epoch == epoch + 1
        if meta.state in _PREPARED:
            valid = bumped
        elif meta.state in _COMPLETE:
            valid = bumped or overflow or epoch == meta.producer_epoch
        else:
            valid = epoch == meta.producer_epoch
        return (NONE if valid else PRODUCER_FENCED), bumped or overflow

    def _end_v2(self, meta: TxnMetadata, commit: bool, retry: bool) -> int:
        """The state's answer to a valid EndTxn v5 (0 once ended, or an error)."""
        state = meta.state
        if state == TxnState.ONGOING:
            return self._end(meta, commit, bump=True)
        if state in _PREPARED:
            return CONCURRENT_TRANSACTIONS if _PREPARED[state] == commit else INVALID_TXN_STATE
        if state in _COMPLETE and retry:
            return NONE if _COMPLETE[state] == commit else INVALID_TXN_STATE
        if not commit and state in (TxnState.EMPTY, *_COMPLETE):
            return self._end(dataclasses.replace(meta, partitions=set()), False, bump=True)
        return INVALID_TXN_STATE

    def _end(self, meta: TxnMetadata, commit: bool, bump: bool = False) -> int:
        """Prepare, write the markers, complete (or stay prepared for the timer to retry);
        ``bump`` (transactions v2): the prepared state and the markers carry the next epoch,
        and an exhausted epoch names the producer id the transaction rotates to."""
        prepared = dataclasses.replace(
            meta,
            state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
            partitions=set(meta.partitions),
            last_update_ms=now_ms(),
        )
        if bump:
            prepared.producer_epoch, prepared.last_epoch = (
                meta.producer_epoch + 1,
                meta.producer_epoch,
            )
            prepared.client_version = 2
            if meta.producer_epoch >= _MAX_EPOCH:
                prepared.next_producer_id = self.next_producer_id()
        self.store.write(prepared)
        return NONE if self._finish(prepared) else CONCURRENT_TRANSACTIONS

    def _finish(self, meta: TxnMetadata) -> bool:
        """Write a prepared transaction's markers; once all are written, complete it (a v2
        transaction whose epoch was exhausted moves to its next producer id, epoch 0)."""
        commit = _PREPARED[meta.state]
        failed = self.write_markers(
            meta.producer_id, meta.producer_epoch, commit, sorted(meta.partitions)
        )
        if failed:
            log.warning(
                "transaction %s: markers not written to %s yet",
                meta.transactional_id,
                sorted(failed),
            )
            if failed != meta.partitions:
                meta = dataclasses.replace(meta, partitions=set(failed))
                self.store.write(meta)
            return False
        done = dataclasses.replace(
            meta,
            state=TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
            partitions=set(),
            last_update_ms=now_ms(),
        )
        if meta.next_producer_id >= 0:
            done.previous_producer_id, done.producer_id = meta.producer_id, meta.next_producer_id
            done.producer_epoch, done.last_epoch = 0, meta.producer_epoch
            done.next_producer_id = -1
        self.store.write(done)
        return True

    def _abort(self, meta: TxnMetadata, fence: bool) -> bool:
        """Abort an Ongoing transaction, first bumping the epoch when ``fence`` (the old
        producer is fenced: its writes and EndTxn carry the old epoch)."""
        new = self._bumped(meta) if fence else dataclasses.replace(meta)
        if new.producer_id != meta.producer_id:  # exhausted: abort under the old id
            new = dataclasses.replace(meta, partitions=set(meta.partitions))
        new.state, new.last_update_ms = TxnState.PREPARE_ABORT, now_ms()
        self.store.write(new)
        return self._finish(new)

    def _complete_prepared(self) -> None:
        """Finish every transaction left prepared (crash, or a marker not written yet)."""
        for meta in list(self.store.txns.values()):
            if meta.state in _PREPARED:
                self._finish(meta)

    # ------------------------------------------------------------------ timeouts
    def abort_timed_out(self, now: int | None = None) -> list[str]:
        """Abort (fencing the producer) every transaction Ongoing past its timeout."""
        now = now_ms() if now is None else now
        aborted: list[str] = []
        with self._lock:
            if not self._open:
                return aborted
            for meta in list(self.store.txns.values()):
                if meta.state == TxnState.ONGOING and now > meta.start_ms + meta.timeout_ms:
                    log.info(
                        "transaction %s timed out after %d ms: aborting",
                        meta.transactional_id,
                        now - meta.start_ms,
                    )
                    self._abort(meta, fence=True)
                    aborted.append(meta.transactional_id)
        return aborted
