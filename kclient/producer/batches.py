"""Partition batches: the messages bound for one topic partition and their encoded records.

A :class:`PartitionBatch` keeps the serialized columns (values, keys, timestamps, headers) so it
can be encoded in whichever message format the leader's broker negotiates (v2 record batches for
Produce v3+, message sets magic 1 for Produce v2, magic 0 for v0/v1), and encoded again if a
retry goes to a broker of another version.

Values of one length without keys, headers or own timestamps take the fast path
:func:`kclient.protocol.records.encode_v2_uniform`.

Values and keys may be ``bytes``, ``bytearray`` or byte-shaped ``memoryview`` (the producer
checks the shape before they get here): they are copied into the batch's buffer when it is first
encoded, and that encoding is what every retry sends.  A retry with new idempotence stamps
re-stamps the encoded header; only a retry to a broker of another message format encodes again,
and then from the values decoded out of the first encoding, never from the caller's (possibly
mutated) buffers.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import add
from typing import Any

from kclient.protocol import compression
from kclient.protocol.error_codes import UnsupportedVersionError
from kclient.protocol.records import (
    RecordsReader,
    build_batch,
    build_message_set,
    encode_v2_uniform,
)
from kclient.protocol.records.v2 import set_producer_state

from .data import DeliveryReport, Entry

__all__ = ["PartitionBatch", "encode_records", "MAX_BATCH_BYTES", "split_by_size"]

#: Largest encoded size we aim for in one partition batch: below the 1 MiB default of
#: ``message.max.bytes`` on modern brokers and the 0.8 broker's 1000012.
MAX_BATCH_BYTES = 1_000_000
#: Estimated bytes a record adds besides its key and value (varints, attributes, headers count).
RECORD_OVERHEAD = 12


def encode_records(
    values: list[Any],
    keys: list[Any] | None,
    timestamps: list[Any] | None,
    headers: list[Any] | None,
    magic: int,
    codec: int,
    timestamp: int | None = None,
    lengths: list[int] | None = None,
) -> bytes | bytearray:
    """Encode one partition's messages in message format ``magic`` with ``codec``."""
    if timestamp is None:
        timestamp = int(time.time() * 1000)
    if magic == 2:
        if keys is None and timestamps is None and headers is None and n_uniform(values, lengths):
            return encode_v2_uniform(values, len(values[0]), codec, timestamp)
        return build_batch(values, keys, timestamps, headers, codec=codec, timestamp=timestamp)
    if headers is not None:
        raise UnsupportedVersionError(
            f"record headers need message format v2 (Produce v3+, Kafka 0.11+); this broker "
            f"takes magic {magic}"
        )
    return build_message_set(
        values, keys, timestamps, magic=magic, codec=codec, timestamp=timestamp
    )


#: value types the encoders copy as they are (memoryviews only when byte-shaped: see
#: :func:`kclient.producer.buffers.plain_lengths`)
_PLAIN = (bytes, bytearray, memoryview)


def n_uniform(values: list[Any], lengths: list[int] | None = None) -> bool:
    """True when every value is bytes (or bytearray / byte-shaped memoryview) of one length.

    ``lengths`` (precomputed ``len`` of each value) must only be given when no value is None.
    Values that are not bytes get their lengths measured again here: a caller may have resized
    a bytearray since it was queued, and a stale length would make a malformed batch.
    """
    if not values:
        return False
    first = values[0]
    if type(first) is not bytes:
        if type(first) not in _PLAIN:
            return False
        lengths = None
    if lengths is None:
        try:
            lengths = list(map(len, values))
        except TypeError:  # a None value
            return False
    return lengths.count(lengths[0]) == len(lengths)


def split_by_size(lengths: Sequence[int], limit: int) -> list[int]:
    """Cut points so that each slice's summed lengths (+ overhead) stay under ``limit``."""
    n = len(lengths)
    if not n:
        return []
    first = lengths[0]
    if isinstance(lengths, list) and lengths.count(first) == n:
        step = max(1, limit // (first + RECORD_OVERHEAD))
        return list(range(step, n, step))
    cum = list(accumulate(map(add, lengths, repeat(RECORD_OVERHEAD))))
    cuts: list[int] = []
    i, base = 0, 0
    while True:
        j = bisect_right(cum, base + limit, i)
        if j >= n:
            return cuts
        if j == i:  # one record above the limit goes alone
            j = i + 1
            if j >= n:
                return cuts
        cuts.append(j)
        base = cum[j - 1]
        i = j


class PartitionBatch:
    """Messages for one topic partition, serialized, with their send history.

    ``entries`` are the messages as queued (tuples, see :mod:`kclient.producer.data`), for the
    delivery report; ``None`` when they were plain values of ``topic`` (then ``values`` are
    both what is sent and what is reported).
    """

    __slots__ = (
        "topic",
        "partition",
        "entries",
        "values",
        "keys",
        "timestamps",
        "headers",
        "codec",
        "attempts",
        "error",
        "due",
        "lengths",
        "_encoded",
        "created",
        "deadline",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "transactional",
        "_stamp",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        entries: list[Entry] | None,
        values: list[Any],
        keys: list[Any] | None = None,
        timestamps: list[Any] | None = None,
        headers: list[Any] | None = None,
        codec: int = compression.NONE,
        lengths: list[int] | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.entries = entries
        self.values = values
        self.keys = keys
        self.timestamps = timestamps
        self.headers = headers
        self.codec = codec
        self.lengths = lengths
        self.attempts = 0
        self.error: BaseException | None = None
        self.due = 0.0
        #: monotonic time its delivery.timeout.ms runs out (set by the event handler)
        self.deadline = float("inf")
        self.created = int(time.time() * 1000)
        self._encoded: tuple[int, bytes | bytearray] | None = None
        #: the idempotence stamp ``_encoded`` carries (None: unstamped, as encoded)
        self._stamp: tuple[int, int, int, bool] | None = None
        #: idempotence: the producer id, epoch and first sequence stamped on the batch, kept
        #: across retries so the broker recognises a resent batch (-1: not idempotent)
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.transactional = False

    def set_sequence(
        self, producer_id: int, epoch: int, base_sequence: int, transactional: bool = False
    ) -> None:
        """Stamp the batch (idempotent producer); ``base_sequence`` -1 clears the stamp.

        The next :meth:`encode` patches the stamp into the encoding it has (no re-encoding)."""
        self.producer_id, self.producer_epoch = producer_id, epoch
        self.base_sequence, self.transactional = base_sequence, transactional

    def __len__(self) -> int:
        return len(self.values)

    def encode(self, magic: int) -> bytes | bytearray:
        """The records in format ``magic`` (cached: a retry sends the same records, re-stamped
        when its idempotence stamp changed)."""
        stamp = (
            (self.producer_id, self.producer_epoch, self.base_sequence, self.transactional)
            if self.base_sequence >= 0
            else None
        )
        if stamp is not None and magic < 2:
            raise UnsupportedVersionError(
                "enable.idempotence needs message format v2 (Produce v3+, Kafka 0.11+); "
                f"this broker takes magic {magic}"
            )
        enc = self._encoded
        if enc is not None and enc[0] == magic:
            if stamp == self._stamp:
                return enc[1]
            data = enc[1]
        else:
            if enc is not None:  # another format: the values as first encoded
                self._freeze(enc[1])
            data = encode_records(
                self.values,
                self.keys,
                self.timestamps,
                self.headers,
                magic,
                self.codec,
                self.created,
                self.lengths,
            )
            self._stamp = None
        if stamp != self._stamp:
            data = set_producer_state(data, *(stamp or (-1, -1, -1, False)))
            self._stamp = stamp
        self._encoded = (magic, data)
        return data

    def _freeze(self, encoded: bytes | bytearray) -> None:
        """Replace mutable values and keys by the bytes ``encoded`` holds for them."""
        if all(type(v) is bytes or v is None for v in self.values) and (
            self.keys is None or all(type(k) is bytes or k is None for k in self.keys)
        ):
            return
        records = list(RecordsReader(bytes(encoded)))
        self.values = [None if r.value is None else bytes(r.value) for r in records]
        if self.keys is not None:
            self.keys = [None if r.key is None else bytes(r.key) for r in records]
        self.lengths = None

    def release(self) -> None:
        """Drop the encoded bytes once acknowledged (they can be large)."""
        self._encoded = self._stamp = None

    def report(
        self, base_offset: int = -1, error: BaseException | None = None, timestamp: int = -1
    ) -> DeliveryReport:
        """The DeliveryReport of this batch."""
        self._encoded = self._stamp = None
        if self.entries is not None:
            r = DeliveryReport(
                self.topic,
                self.partition,
                None,
                base_offset,
                error,
                timestamp,
                self.attempts,
                entries=self.entries,
            )
        else:
            r = DeliveryReport(
                self.topic,
                self.partition,
                None,
                base_offset,
                error,
                timestamp,
                self.attempts,
                values=self.values,
            )
        r.create_time = self.created
        return r

    def __repr__(self) -> str:
        return (
            f"PartitionBatch({self.topic!r}, {self.partition}, {len(self.values)} messages, "
            f"attempts={self.attempts})"
        )
