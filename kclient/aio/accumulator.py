"""The asyncio producer's record accumulator: open batches per partition, without I/O.

Each partition has a queue of :class:`AIOBatch`; messages go to the last one until it holds
``batch.num.messages`` messages or ``batch.size`` bytes.  A batch is *ready* when it is full
(another batch follows it), when its first message has waited ``linger``, or at once while a
flush or close waits.  Ready batches leave in order; a batch that must be retried goes back to
the front of its partition's queue at once (behind the retries made before it), with the time
its ``retry.backoff.ms`` ends: nothing of that partition leaves before then, so a partition's
batches are sent in the order they were made, as Java's accumulator keeps a retried batch at
the head of its partition's deque (issue 25: a retry kept on a timer outside the queue let a
newer batch of its partition go out first).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from kclient.producer.batches import RECORD_OVERHEAD, PartitionBatch

__all__ = ["AIOBatch", "Accumulator"]

Headers = list[tuple[str, bytes | None]]


class AIOBatch:
    """Messages for one topic partition as columns, with one future per message."""

    __slots__ = (
        "topic",
        "partition",
        "values",
        "keys",
        "timestamps",
        "headers",
        "futures",
        "size",
        "created",
        "attempts",
        "deadline",
        "created_ms",
        "sealed",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "transactional",
        "number",
        "due",
    )

    def __init__(self, topic: str, partition: int, created: float, deadline: float) -> None:
        self.topic, self.partition = topic, partition
        self.values: list[bytes | None] = []
        self.keys: list[bytes | None] | None = None
        self.timestamps: list[int | None] | None = None
        self.headers: list[Headers | None] | None = None
        self.futures: list[asyncio.Future[Any]] = []
        self.size = 0
        self.created = created
        self.attempts = 0
        self.deadline = deadline
        self.created_ms = -1
        #: taken by the sender: nothing may be appended any more
        self.sealed = False
        #: the idempotence stamp (kclient.core.idempotence), kept across retries
        self.producer_id = self.producer_epoch = self.base_sequence = -1
        self.transactional = False
        #: the order of making in the accumulator (retries go back in this order)
        self.number = 0
        #: a retry's backoff ends then (the loop's clock); nothing of its partition leaves before
        self.due = 0.0

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"AIOBatch({self.topic!r}, {self.partition}, {len(self.values)} messages)"

    def append(
        self,
        value: bytes | None,
        key: bytes | None,
        timestamp: int | None,
        headers: Headers | None,
        size: int,
        fut: asyncio.Future[Any],
    ) -> None:
        """Add one message; the optional columns appear (back-filled with None) when first used."""
        n = len(self.values)
        self.values.append(value)
        self.futures.append(fut)
        self.size += size
        if key is not None or self.keys is not None:
            if self.keys is None:
                self.keys = [None] * n
            self.keys.append(key)
        if timestamp is not None or self.timestamps is not None:
            if self.timestamps is None:
                self.timestamps = [None] * n
            self.timestamps.append(timestamp)
        if headers is not None or self.headers is not None:
            if self.headers is None:
                self.headers = [None] * n
            self.headers.append(headers)

    def set_sequence(
        self, producer_id: int, epoch: int, base_sequence: int, transactional: bool = False
    ) -> None:
        """Stamp the batch (idempotent producer); ``base_sequence`` -1 clears the stamp."""
        self.producer_id, self.producer_epoch = producer_id, epoch
        self.base_sequence, self.transactional = base_sequence, transactional

    def drop_cancelled(self) -> None:
        """Leave out messages whose futures were cancelled before the batch was sent (not
        from a sequenced batch: its retry must carry the same records)."""
        if self.base_sequence >= 0:
            return
        keep = [i for i, f in enumerate(self.futures) if not f.cancelled()]
        if len(keep) == len(self.futures):
            return
        self.values = [self.values[i] for i in keep]
        self.futures = [self.futures[i] for i in keep]
        if self.keys is not None:
            self.keys = [self.keys[i] for i in keep]
        if self.timestamps is not None:
            self.timestamps = [self.timestamps[i] for i in keep]
        if self.headers is not None:
            self.headers = [self.headers[i] for i in keep]

    def to_partition_batch(self, codec: int, created_ms: int) -> PartitionBatch:
        """The sync producer's PartitionBatch over these columns (encoding with C speed-ups)."""
        self.created_ms = created_ms
        b = PartitionBatch(
            self.topic,
            self.partition,
            None,
            self.values,
            self.keys,
            self.timestamps,
            self.headers,
            codec,
        )
        b.created = created_ms
        if self.base_sequence >= 0:
            b.set_sequence(
                self.producer_id, self.producer_epoch, self.base_sequence, self.transactional
            )
        return b


class Accumulator:
    """Per-partition batch queues with the batch limits and the linger rule."""

    def __init__(
        self, batch_messages: int, batch_bytes: int, linger: float, delivery_timeout: float
    ) -> None:
        self.batch_messages, self.batch_bytes = batch_messages, batch_bytes
        self.linger, self.delivery_timeout = linger, delivery_timeout
        self.queues: dict[tuple[str, int], deque[AIOBatch]] = {}
        #: messages held in batches not yet acknowledged or failed (queued or in flight)
        self.pending = 0
        self._made = 0

    def batch_for(self, topic: str, partition: int, size: int, now: float) -> tuple[AIOBatch, bool]:
        """The open batch a message of ``size`` bytes joins, and whether it was just made."""
        key = (topic, partition)
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = deque()
        elif q:
            last = q[-1]
            if (
                not last.sealed  # a retry at the head: sent once, it must carry the same records
                and len(last.values) < self.batch_messages
                and (last.size + size + RECORD_OVERHEAD <= self.batch_bytes or not last.values)
            ):
                return last, False
        b = AIOBatch(topic, partition, now, now + self.delivery_timeout)
        self._made += 1
        b.number = self._made
        q.append(b)
        return b, True

    def ready(
        self, now: float, all_: bool, hold: set[tuple[str, int]] | None = None
    ) -> tuple[list[AIOBatch], float | None]:
        """Pop the batches ready to send (none of the partitions in ``hold``, none of one whose
        head waits out a retry backoff); also when the next one comes due (None: none)."""
        out: list[AIOBatch] = []
        due: float | None = None
        linger = self.linger
        for key, q in self.queues.items():
            if hold and key in hold:
                continue
            if q and q[0].due > now:
                at = q[0].due
                due = at if due is None or at < due else due
                continue
            while q:
                b = q[0]
                if (
                    all_
                    or len(q) > 1
                    or now - b.created >= linger
                    or len(b.values) >= self.batch_messages
                ):
                    b = q.popleft()
                    b.sealed = True
                    out.append(b)
                    continue
                at = b.created + linger
                due = at if due is None or at < due else due
                break
        return out, due

    def requeue(self, b: AIOBatch, due: float = 0.0) -> None:
        """Put a batch to retry back at the front of its partition's queue, behind the retries
        made before it, to leave at ``due`` at the earliest (its backoff; its partition waits
        with it): batches go out in the order they were made, so sequences (stamped as they
        go out, again after a KIP-360 epoch bump cleared them) follow it too."""
        key = (b.topic, b.partition)
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = deque()
        i = 0
        while i < len(q) and q[i].sealed and q[i].number < b.number:
            i += 1
        b.due = due
        q.insert(i, b)

    def queued(self) -> int:
        """Batches waiting in the queues."""
        return sum(len(q) for q in self.queues.values())

    def take_all(self) -> list[AIOBatch]:
        """Empty every queue (close without flush, fatal errors)."""
        out = [b for q in self.queues.values() for b in q]
        for b in out:
            b.sealed = True
        self.queues.clear()
        return out
