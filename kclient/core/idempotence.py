"""The idempotent producer's state (producer id, epoch, sequences) and what a sequence error means.

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
does, and restarts every partition's sequences at 0. A batch already stamped may have been written
under the old stamp, so it keeps it (a resend the broker recognises as a duplicate), except in the
partitions whose sequences the broker refused (OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID
for the next expected batch: nothing after the gap was written there), whose batches get new
sequences in their old order (Java's ``partitionsToRewriteSequences``). A partition sends no batch
of the new epoch while one of an older stamp is unacknowledged (:meth:`IdempotentState.stale`):
the broker would fence the older one. Nothing is dropped silently: every batch still ends in a
delivery report, acknowledged or failed. Both producers (threaded and asyncio) keep this state and
ask :func:`sequence_outcome` what a produce error of a sequenced batch means.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from kclient.errors import error_for_code
from kclient.protocol.apis import INIT_PRODUCER_ID
from kclient.protocol.error_codes import (
    DuplicateSequenceNumberError,
    OutOfOrderSequenceNumberError,
    UnknownProducerIdError,
)

from .steps import ANY_NODE, Conversation, Request

__all__ = [
    "IdempotentState",
    "MAX_IN_FLIGHT_IDEMPOTENT",
    "needs_bump",
    "sequence_outcome",
    "init_idempotent",
    "first_unacked",
    "SENT",
    "RETRY",
    "RESEND",
    "BUMP_AND_RESEND",
    "FAIL",
]

log = logging.getLogger("kclient.producer")

#: Largest max.in.flight.requests.per.connection with idempotence (what a broker remembers).
MAX_IN_FLIGHT_IDEMPOTENT = 5
_SEQ_MOD = 1 << 31
_EPOCH_MAX = 32767

#: what :func:`sequence_outcome` says to do with a sequenced batch's produce error
SENT, RETRY, RESEND, BUMP_AND_RESEND, FAIL = "sent", "retry", "resend", "bump_and_resend", "fail"


class Sequenced(Protocol):
    """A batch the state stamps: its partition, length and the stamp itself."""

    topic: str
    partition: int
    base_sequence: int
    producer_id: int
    producer_epoch: int

    def __len__(self) -> int: ...

    def set_sequence(
        self, producer_id: int, epoch: int, base_sequence: int, transactional: bool = False
    ) -> None: ...


def needs_bump(error: BaseException) -> bool:
    """Whether a produce error is one of the sequence errors KIP-360 handles by a bump."""
    return isinstance(error, (OutOfOrderSequenceNumberError, UnknownProducerIdError))


def first_unacked(batch: Sequenced, others: Iterable[Sequenced]) -> bool:
    """Whether none of ``others`` (the unacknowledged batches: in flight, waiting to retry) is
    an earlier batch of ``batch``'s partition in the same epoch."""
    key, seq, epoch = (batch.topic, batch.partition), batch.base_sequence, batch.producer_epoch
    return not any(
        (x.topic, x.partition) == key and 0 <= x.base_sequence < seq and x.producer_epoch == epoch
        for x in others
    )


def sequence_outcome(error: BaseException, transactional: bool, first_unacked: bool) -> str:
    """What a produce error of a sequenced batch means (KIP-360, as Java's producer decides):
    :data:`SENT` (a 0.11 broker's "already have it"); :data:`RETRY` (an ordinary error: retried
    as any batch is); :data:`RESEND` (a sequence error behind an earlier batch that failed: sent
    again after it, at no cost in attempts); :data:`BUMP_AND_RESEND` (the sequence error of the
    next expected batch: the broker lost what came before, so bump the epoch, then resend); or
    :data:`FAIL` (a transactional producer's sequence error: abortable, bumped on abort)."""
    if isinstance(error, DuplicateSequenceNumberError):
        return SENT
    if not needs_bump(error):
        return RETRY
    if transactional:
        return FAIL
    return BUMP_AND_RESEND if first_unacked else RESEND


class IdempotentState:
    """Producer id, epoch and next sequence per partition of one idempotent producer."""

    def __init__(
        self, transactional_id: str | None = None, transaction_timeout_ms: int = 60000
    ) -> None:
        """No id yet: :meth:`set_producer_id` once InitProducerId answered."""
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.producer_id = -1
        self.epoch = -1
        self._next_seq: dict[tuple[str, int], int] = {}
        #: a bump is due before anything more is sent (set by failures, see module docstring)
        self.bump_requested = False
        #: partitions whose sequences the broker refused: restamped at the next bump
        self._rewrite: set[tuple[str, int]] = set()

    @property
    def has_producer_id(self) -> bool:
        """True once InitProducerId gave an id."""
        return self.producer_id >= 0

    def set_producer_id(self, producer_id: int, epoch: int) -> None:
        """Adopt a new id and epoch; every partition's sequences restart at 0."""
        self.producer_id, self.epoch = producer_id, epoch
        self._next_seq.clear()
        self.bump_requested = False

    def produce_max_version(self) -> int | None:
        """The highest Produce version this producer may send (None: no cap; transactional
        producers override: v12 means transactions v2)."""
        return None

    def record_failure(
        self, error: BaseException, sequenced: bool = False, produce: bool = False
    ) -> None:
        """A batch failed for good: its sequences leave a gap, so bump before the next send
        (transactional producers override: the transaction must abort; ``produce``, whether a
        batch or a coordinator request failed, matters to them only)."""
        if sequenced:
            self.bump_requested = True

    def next_sequence(self, topic: str, partition: int) -> int:
        """The sequence the partition's next new batch gets."""
        return self._next_seq.get((topic, partition), 0)

    def assign(self, batch: Sequenced) -> None:
        """Give a new batch its partition's next sequences (and this producer's id/epoch)."""
        key = (batch.topic, batch.partition)
        seq = self._next_seq.get(key, 0)
        self._next_seq[key] = (seq + len(batch)) % _SEQ_MOD
        batch.set_sequence(
            self.producer_id, self.epoch, seq, transactional=self.transactional_id is not None
        )

    def sequence_error(
        self, batch: Sequenced, error: BaseException, others: Iterable[Sequenced]
    ) -> str:
        """What to do with a sequenced batch that failed with ``error`` (``others``: the
        unacknowledged batches): :data:`SENT`, :data:`RETRY`, :data:`RESEND` (a bump is
        requested first when the broker lost what came before) or :data:`FAIL`."""
        needs = sequence_outcome(
            error, self.transactional_id is not None, first_unacked(batch, others)
        )
        if needs == BUMP_AND_RESEND:
            log.warning(
                "%s/%s: %s for the next expected batch: bumping the epoch",
                batch.topic,
                batch.partition,
                error,
            )
            self.bump_requested = True
            self._rewrite.add((batch.topic, batch.partition))
            return RESEND
        return needs

    def bump_and_restamp(self, waiting: Iterable[Sequenced]) -> None:
        """Bump the epoch (KIP-360); of the batches ``waiting`` to be written, clear the stamps
        of those in a partition whose sequences the broker refused, so each is stamped again,
        in the new epoch, when it goes out.  The others keep theirs: they may have been
        written, and only their old stamp lets the broker answer a resend as a duplicate
        (re-stamping them wrote records twice: issue 25)."""
        rewrite, self._rewrite = self._rewrite, set()
        if self.bump_epoch():
            log.info(
                "idempotent producer %d: epoch bumped to %d, sequences reset",
                self.producer_id,
                self.epoch,
            )
        for b in waiting:
            if b.base_sequence >= 0 and (b.topic, b.partition) in rewrite:
                b.set_sequence(-1, -1, -1)

    def stale(self, batch: Sequenced) -> bool:
        """Whether ``batch`` carries the stamp of an earlier epoch or producer id (kept across a
        bump): no new batch of its partition may go out before it is acknowledged or failed."""
        return batch.base_sequence >= 0 and (
            batch.producer_epoch != self.epoch or batch.producer_id != self.producer_id
        )

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


def init_idempotent(
    state: IdempotentState, node: int | str | None = ANY_NODE
) -> Conversation[None]:
    """InitProducerId without a transactional id (any broker answers): the idempotent
    producer's id and epoch, adopted by ``state``; an error code is raised."""
    body = {
        "transactional_id": None,
        "transaction_timeout_ms": state.transaction_timeout_ms,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    resp = yield Request(INIT_PRODUCER_ID, body, node=node)
    if resp.error_code:
        raise error_for_code(resp.error_code)("InitProducerId")
    state.set_producer_id(resp.producer_id, resp.producer_epoch)
