"""Idempotent producer state on the client: producer id, epoch and sequence numbers.

Theory of operation (the Java producer's, KIP-98 and KIP-360).  The producer gets an id and an
epoch from InitProducerId.  A batch is given its partition's next sequence the first time it is
sent and keeps it across retries, so the broker answers a resent batch it already wrote with the
original offsets instead of writing it twice.  Ordering across up to 5 requests in flight:

* a partition has at most ``max.in.flight.requests.per.connection`` (at most 5, the batches a
  broker remembers per producer) unacknowledged batches;
* once one of its batches fails, the partition's other requests in flight drain first, then its
  failed batches are resent in sequence order, and only then do new batches follow;
* OUT_OF_ORDER_SEQUENCE_NUMBER for a batch behind one that failed is a plain retry (the earlier
  one is resent first); for the batch the broker should have taken next it means the broker lost
  the preceding data, and UNKNOWN_PRODUCER_ID that it lost the producer: both bump the epoch;
* a batch that fails for good (retries or delivery.timeout.ms exhausted, a non-retriable error)
  would leave a gap that fails everything after it, so it also bumps the epoch.

A bump (once nothing is in flight) raises the epoch by one locally, as Java's idempotent producer
does, and restarts every partition's sequences at 0; the batches not yet acknowledged get new
sequences in their old order.  Nothing is dropped silently: every batch still ends in a delivery
report, acknowledged or failed.
"""
from __future__ import annotations

from kclient.protocol.error_codes import (
    OutOfOrderSequenceNumberError,
    UnknownProducerIdError,
)

from .batches import PartitionBatch

__all__ = ["TransactionManager", "MAX_IN_FLIGHT_IDEMPOTENT", "needs_bump"]

#: Largest max.in.flight.requests.per.connection with idempotence (what a broker remembers).
MAX_IN_FLIGHT_IDEMPOTENT = 5
_SEQ_MOD = 1 << 31
_EPOCH_MAX = 32767


def needs_bump(error: BaseException) -> bool:
    """Whether a produce error is one of the sequence errors KIP-360 handles by a bump."""
    return isinstance(error, (OutOfOrderSequenceNumberError, UnknownProducerIdError))


class TransactionManager:
    """Producer id, epoch and next sequence per partition of one idempotent producer."""

    def __init__(self, transactional_id: str | None = None,
                 transaction_timeout_ms: int = 60000) -> None:
        """No id yet: :meth:`set_producer_id` once InitProducerId answered."""
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.producer_id = -1
        self.epoch = -1
        self._next_seq: dict[tuple[str, int], int] = {}
        #: a bump is due before anything more is sent (set by failures, see module docstring)
        self.bump_requested = False

    @property
    def has_producer_id(self) -> bool:
        """True once InitProducerId gave an id."""
        return self.producer_id >= 0

    def set_producer_id(self, producer_id: int, epoch: int) -> None:
        """Adopt a new id and epoch; every partition's sequences restart at 0."""
        self.producer_id, self.epoch = producer_id, epoch
        self._next_seq.clear()
        self.bump_requested = False

    def add_partitions(self, tps: set[tuple[str, int]]) -> None:
        """Transactional producers add partitions to their transaction here (idempotent: no-op)."""

    def record_failure(self, error: BaseException, sequenced: bool = False) -> None:
        """A batch failed for good: transactional producers must abort (idempotent: no-op)."""

    def next_sequence(self, topic: str, partition: int) -> int:
        """The sequence the partition's next new batch gets."""
        return self._next_seq.get((topic, partition), 0)

    def assign(self, batch: PartitionBatch) -> None:
        """Give a new batch its partition's next sequences (and this producer's id/epoch)."""
        key = (batch.topic, batch.partition)
        seq = self._next_seq.get(key, 0)
        self._next_seq[key] = (seq + len(batch)) % _SEQ_MOD
        batch.set_sequence(self.producer_id, self.epoch, seq,
                           transactional=self.transactional_id is not None)

    def bump_epoch(self) -> bool:
        """Raise the epoch locally and restart sequences; False when the epoch is exhausted
        (a new producer id is needed: the caller asks InitProducerId again)."""
        self.bump_requested = False
        self._next_seq.clear()
        if self.epoch + 1 >= _EPOCH_MAX:
            self.producer_id = self.epoch = -1
            return False
        self.epoch += 1
        return True
