"""The threaded producer's transactions: :mod:`kclient.core.transactions` run on this thread.

The state machine, the coordinator conversations and their error classes are the core's (see
there); this class adds what threads need: one lock that orders the coordinator requests (the
caller's thread runs them, the send thread adds partitions and records failures) and a cluster
of its own for the coordinator connections, driven by :func:`kclient.io.driver.run`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from kclient.cluster import Cluster
from kclient.connection import ConnectionSettings
from kclient.core import transactions as core
from kclient.core.steps import Conversation
from kclient.core.transactions import (
    ABORTABLE_ERROR,
    FATAL_ERROR,
    IN_TRANSACTION,
    READY,
    TP,
    UNINITIALIZED,
    ProducerIdentity,
    TxnState,
    fenced,
    is_abortable,
    offsets_to_commit,
)
from kclient.io.driver import ClusterTransport, run

__all__ = [
    "Transactions",
    "UNINITIALIZED",
    "READY",
    "IN_TRANSACTION",
    "ABORTABLE_ERROR",
    "FATAL_ERROR",
    "TP",
    "ProducerIdentity",
    "fenced",
    "is_abortable",
    "offsets_to_commit",
]

_T = TypeVar("_T")


class Transactions(TxnState):
    """Producer id, epoch, sequences and the transaction state of one transactional producer.

    Thread-safe: the send thread calls :meth:`add_partitions` and :meth:`record_failure`, the
    caller's thread everything else; one lock orders the coordinator requests.
    """

    def __init__(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        bootstrap: list[tuple[str, int]],
        settings: ConnectionSettings,
        backoff_ms: int = 100,
        max_block_ms: int = 60000,
    ) -> None:
        """Nothing is sent until :meth:`init_transactions` (or :meth:`resume`)."""
        super().__init__(
            transactional_id, transaction_timeout_ms, backoff_ms / 1000.0, max_block_ms / 1000.0
        )
        self._lock = threading.RLock()
        self._cluster = Cluster([f"{h}:{p}" for h, p in bootstrap], settings)
        self._transport = ClusterTransport(self._cluster)

    def _run(self, conversation: Conversation[_T]) -> _T:
        with self._lock:
            return run(conversation, self._transport)

    def record_failure(
        self, error: BaseException, sequenced: bool = False, produce: bool = False
    ) -> None:
        with self._lock:
            super().record_failure(error, sequenced, produce)

    def init_transactions(self) -> None:
        """Get this transactional id's producer id and epoch (see the core's conversation)."""
        self._run(core.init_transactions(self))

    def resume(self, producer_id: int, epoch: int) -> None:
        with self._lock:
            super().resume(producer_id, epoch)

    def begin(self) -> None:
        with self._lock:
            super().begin()

    def add_partitions(self, tps: Iterable[TP]) -> None:
        """AddPartitionsToTxn for the partitions new to the transaction (the send thread)."""
        self._run(core.add_partitions(self, tps))

    def send_offsets(self, offsets: Mapping[TP, tuple[int, str]], group: Any) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit at the group's coordinator."""
        self._run(core.send_offsets(self, offsets, group))

    def end(self, commit: bool) -> None:
        """EndTxn (when anything joined the transaction), then READY for the next one."""
        self._run(core.end_transaction(self, commit))

    def close(self) -> None:
        """Close the coordinator connections (an open transaction is left to its timeout, or
        to whoever resumes it)."""
        self._cluster.close()
