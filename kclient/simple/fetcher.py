"""Fetch partitions at offsets over one broker connection: the reusable core of every reader.

:class:`Fetcher` turns a list of :class:`PartitionFetch` (topic, partition, offset, max bytes)
into one Fetch request and its response into one :class:`ByteBufferMessageSet` per partition,
in request order, each carrying the decoded messages (lazily), the high watermark and the
partition's error, if any.  SimpleConsumer, the ConsumerConnector's fetcher threads and the Spark
reader all read through it.

What it adds to a bare Fetch:

* **Oversized messages.**  A partition whose response holds no complete entry but a partial one,
  or nothing at all below the high watermark (real Kafka at Fetch v0-v2 sends no bytes when the
  first message is larger than the fetch size), is fetched again with the size doubled -
  as often as needed to cover the entry's size when its header arrived, in one retry - up to
  ``max_buffer_size``; past that bound it fails with ``MessageSizeTooLargeError``.  A broker
  that returns an oversized first batch whole (Fetch v3+, KIP-74) gets the same bound applied.
* **Pipelining.**  ``send()`` / ``receive()`` split the round trip, and with ``prefetch`` the
  fetcher sends the natural next request (every partition at its ``next_offset``) as soon as a
  response with data arrived, so the broker works while the caller decodes.  The speculative
  response is used only when the next ``fetch()`` asks exactly for it, and only while younger
  than ``prefetch_max_age_ms``; otherwise it is read and dropped.  Data below the high
  watermark does not change, so a used speculative response equals a fresh one except that its
  high watermark may be that much older.
* **Per-partition errors** as exceptions whose text names the topic, partition and offset.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from kclient.connection import BrokerConnection
from kclient.protocol.apis import FETCH
from kclient.protocol.compression import DEFAULT_MAX_DECOMPRESSED
from kclient.protocol.errors import (
    BrokerResponseError,
    KafkaError,
    MessageSizeTooLargeError,
    error_for_code,
)

from .message_set import ByteBufferMessageSet, error_set

if TYPE_CHECKING:
    from kclient.protocol.messages import FetchResponse, FetchResponsePartition

__all__ = ["PartitionFetch", "PendingFetch", "Fetcher", "DEFAULT_MAX_BUFFER_SIZE"]

#: Default bound for growing a fetch size around an oversized message.
DEFAULT_MAX_BUFFER_SIZE = 64 * 1024 * 1024
_INT32_MAX = 0x7FFFFFFF


class PartitionFetch(NamedTuple):
    """One partition to fetch: from ``offset``, at most ``max_bytes`` of records."""

    topic: str
    partition: int
    offset: int
    max_bytes: int = 1 << 20


class PendingFetch:
    """A Fetch request on the wire: its correlation id, what it asked for and when."""

    __slots__ = ("corr", "requests", "version", "sent_at", "key")

    def __init__(self, corr: int, requests: tuple[PartitionFetch, ...], version: int) -> None:
        self.corr, self.requests, self.version = corr, requests, version
        self.sent_at = time.monotonic()
        self.key = requests


class Fetcher:
    """Fetch partitions from one connected :class:`~kclient.connection.BrokerConnection`.

    ``max_wait_ms`` / ``min_bytes`` are the Fetch long-poll settings (by default the broker
    answers as soon as it has a byte, or after 100 ms);
    ``version`` caps the Fetch version (default: the highest both sides support);
    ``isolation_level`` 1 (read_committed) reads only up to the last stable offset and leaves
    out aborted transactions (see :class:`ByteBufferMessageSet`).  Thread-safe: one fetch at
    a time.
    """

    def __init__(self, conn: BrokerConnection, *, max_wait_ms: int = 100, min_bytes: int = 1,
                 max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE, version: int | None = None,
                 validate_crc: bool = True, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
                 prefetch: bool = True, prefetch_max_age_ms: int = 1000,
                 isolation_level: int = 0) -> None:
        self.conn = conn
        self.isolation_level = isolation_level
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_buffer_size = max_buffer_size
        self.version = version
        self.validate_crc = validate_crc
        self.max_decompressed = max_decompressed
        self.prefetch = prefetch
        self.prefetch_max_age = prefetch_max_age_ms / 1000.0
        self._speculative: PendingFetch | None = None
        self._lock = threading.RLock()
        #: Fetch requests written, and speculative responses used / dropped (tests, tuning).
        self.requests_sent = 0
        self.prefetch_hits = 0
        self.prefetch_misses = 0

    # -- one round trip ----------------------------------------------------------------------
    def send(self, requests: Sequence[PartitionFetch]) -> PendingFetch:
        """Write one Fetch request for ``requests``; returns the handle to :meth:`receive`."""
        requests = tuple(PartitionFetch(*r) for r in requests)
        seen: set[tuple[str, int]] = set()
        topics: dict[str, list[dict[str, Any]]] = {}
        for r in requests:
            if (r.topic, r.partition) in seen:
                raise ValueError(f"{r.topic}-{r.partition} is listed twice in one fetch")
            seen.add((r.topic, r.partition))
            if r.max_bytes <= 0:
                raise ValueError(f"fetch size {r.max_bytes} for {r.topic}-{r.partition} "
                                 "is not positive")
            topics.setdefault(r.topic, []).append(
                {"partition": r.partition, "fetch_offset": r.offset,
                 "partition_max_bytes": min(r.max_bytes, _INT32_MAX)})
        version = self.conn.version(FETCH, self.version)
        body = {"replica_id": -1, "max_wait_ms": self.max_wait_ms, "min_bytes": self.min_bytes,
                "max_bytes": min(sum(r.max_bytes for r in requests), _INT32_MAX),
                "isolation_level": self.isolation_level, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
                "forgotten_topics_data": [], "rack_id": ""}
        corr = self.conn.send(FETCH, body, version)
        self.requests_sent += 1
        return PendingFetch(corr, requests, version)

    def receive(self, pending: PendingFetch) -> list[ByteBufferMessageSet]:
        """Wait for the response to ``pending``: one message set per request, in order."""
        resp: FetchResponse = self.conn.receive(pending.corr)
        by_partition: dict[tuple[str, int], FetchResponsePartition] = {}
        for t in resp.responses:
            for p in t.partitions:
                by_partition[(t.topic, p.partition_index)] = p
        out: list[ByteBufferMessageSet] = []
        top_error = resp.get("error_code", 0)
        committed = self.isolation_level == 1
        err: BrokerResponseError | None
        for r in pending.requests:
            part = by_partition.get((r.topic, r.partition))
            where = f"{r.topic}-{r.partition} at offset {r.offset}"
            if part is None:
                # left out of the answer: a request-level error, or (some brokers, e.g. tansu
                # with max_wait_ms=0) simply nothing to return yet
                err = error_for_code(top_error)(where) if top_error else None
                out.append(ByteBufferMessageSet(b"", r.offset, topic=r.topic,
                                                partition=r.partition, error=err))
                continue
            err = None
            if part.error_code:
                err = error_for_code(part.error_code)(where)
                err.topic, err.partition, err.offset = r.topic, r.partition, r.offset
            out.append(ByteBufferMessageSet(
                part.records or b"", r.offset, topic=r.topic, partition=r.partition,
                high_watermark=part.high_watermark, last_stable_offset=part.last_stable_offset,
                log_start_offset=part.log_start_offset, error=err,
                validate_crc=self.validate_crc, max_decompressed=self.max_decompressed,
                read_committed=committed,
                aborted_transactions=[(a.producer_id, a.first_offset)
                                      for a in part.aborted_transactions or ()]
                if committed else None))
        return out

    # -- the full fetch ----------------------------------------------------------------------
    def fetch(self, requests: Sequence[PartitionFetch]) -> list[ByteBufferMessageSet]:
        """Fetch ``requests`` in one round trip (plus retries for oversized messages)."""
        requests = tuple(PartitionFetch(*r) for r in requests)
        if not requests:
            return []
        with self._lock:
            results = self._take_speculative(requests)
            if results is None:
                results = self.receive(self.send(requests))
            results = self._grow_oversized(requests, results)
            if self.prefetch:
                self._speculate(requests, results)
            return results

    def end_of(self, ms: ByteBufferMessageSet) -> int:
        """Where readable data ends: the high watermark, or with read_committed the last
        stable offset (when the broker sent one)."""
        if self.isolation_level == 1 and ms.last_stable_offset >= 0:
            return ms.last_stable_offset
        return ms.high_watermark

    def discard_prefetch(self) -> None:
        """Read and drop a speculative response still on the wire (before other use)."""
        with self._lock:
            pending, self._speculative = self._speculative, None
            if pending is not None:
                self._drop(pending)

    def reset(self) -> None:
        """Forget a speculative request without reading it (the connection was replaced)."""
        self._speculative = None

    def _drop(self, pending: PendingFetch) -> None:
        self.prefetch_misses += 1
        try:
            self.conn.receive(pending.corr)
        except KafkaError:
            pass  # the caller's own request will meet the same broken connection

    def _take_speculative(self, requests: tuple[PartitionFetch, ...]
                          ) -> list[ByteBufferMessageSet] | None:
        pending, self._speculative = self._speculative, None
        if pending is None:
            return None
        if pending.key == requests and time.monotonic() - pending.sent_at <= self.prefetch_max_age:
            self.prefetch_hits += 1
            return self.receive(pending)
        self._drop(pending)
        return None

    def _speculate(self, requests: Iterable[PartitionFetch],
                   results: list[ByteBufferMessageSet]) -> None:
        nxt: list[PartitionFetch] = []
        for r, ms in zip(requests, results):
            if ms.error is not None or not ms.entries or ms.next_offset >= self.end_of(ms):
                return  # only when every partition has more data waiting at the broker
            nxt.append(PartitionFetch(r.topic, r.partition, ms.next_offset, r.max_bytes))
        try:
            self._speculative = self.send(nxt)
        except KafkaError:
            self._speculative = None

    def _grow_oversized(self, requests: Sequence[PartitionFetch],
                        results: list[ByteBufferMessageSet]
                        ) -> list[ByteBufferMessageSet]:
        """Refetch partitions whose first message did not fit, doubling their size."""
        bound = self.max_buffer_size
        sizes = {i: r.max_bytes for i, r in enumerate(requests)}
        results = list(results)
        while True:
            retry = []
            for i, (r, ms) in enumerate(zip(requests, results)):
                if ms.error is not None:
                    continue
                if ms.entries:
                    first = ms.entries[0].size
                    if first > bound and first > sizes[i]:
                        results[i] = error_set(r.topic, r.partition, r.offset,
                                               _too_large(r, first, bound, delivered=True),
                                               ms.high_watermark)
                    continue
                if not ms.buffer and not 0 <= r.offset < self.end_of(ms):
                    continue  # nothing there (yet); below the high watermark an empty answer
                    # means the first message did not fit (Fetch v0-v2, or not the first
                    # partition of a v3+ answer): grow as for a partial one
                needed = ms.incomplete_size
                size = sizes[i]
                if size >= bound or (needed is not None and needed > bound):
                    results[i] = error_set(r.topic, r.partition, r.offset,
                                           _too_large(r, needed, bound), ms.high_watermark)
                    continue
                size *= 2
                while needed is not None and size < needed:
                    size *= 2
                sizes[i] = min(size, bound)
                retry.append(i)
            if not retry:
                return results
            again = self.receive(self.send(
                [PartitionFetch(requests[i].topic, requests[i].partition, requests[i].offset,
                                sizes[i]) for i in retry]))
            for i, ms in zip(retry, again):
                results[i] = ms


def _too_large(r: PartitionFetch, needed: int | None, bound: int,
               delivered: bool = False) -> MessageSizeTooLargeError:
    size = f"{needed} bytes" if needed is not None else "more than the bound"
    how = ("the broker returned it whole" if delivered
           else f"fetch size started at {r.max_bytes} and doubled up to the bound")
    err = MessageSizeTooLargeError(
        f"{r.topic}-{r.partition} at offset {r.offset}: the message there needs {size}, "
        f"over max_buffer_size={bound} ({how})")
    err.topic, err.partition, err.offset, err.size = r.topic, r.partition, r.offset, needed
    return err
