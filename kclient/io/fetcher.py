"""Fetch partitions at offsets over one broker connection: the threaded driver of the fetch
pipeline (:mod:`kclient.core.fetch`).

:class:`Fetcher` turns a list of :class:`PartitionFetch` (topic, partition, offset, max bytes)
into one Fetch request and its response into one :class:`ByteBufferMessageSet` per partition,
in request order, each carrying the decoded messages (lazily), the high watermark and the
partition's error, if any.  SimpleConsumer, the ConsumerConnector's fetcher threads,
kclient.Consumer and the Spark reader all read through it; what a request asks and what an
answer means is the core's (:func:`~kclient.core.fetch.fetch_body`,
:func:`~kclient.core.fetch.read_response`, :func:`~kclient.core.fetch.grow_oversized`).

What it adds to the core:

* **Pipelining.**  ``send()`` / ``receive()`` split the round trip, and with ``prefetch`` the
  fetcher sends the natural next request (the core's
  :func:`~kclient.core.fetch.next_fetches`: every partition from after its complete entries,
  read off their headers) as soon as a response with data arrived and before it is decoded,
  so the broker works while the caller decodes (CRCs, records).  The speculative
  response is used only when the next ``fetch()`` asks exactly for it, and only while younger
  than ``prefetch_max_age_ms``; otherwise it is read and dropped.  Data below the high
  watermark does not change, so a used speculative response equals a fresh one except that its
  high watermark may be that much older.
* **Reading behind.**  After a large answer (``READ_BEHIND_BYTES``) the answer sent ahead is
  read on a helper thread in C with the GIL released
  (:meth:`~kclient.connection.BrokerConnection.read_behind`), so the kernel's copy of it runs
  on another core while the caller decodes; the next ``fetch()`` takes it from there.
* **Fetch sessions** (KIP-227, ``session=True``): requests after the first list only the
  partitions whose offset changed (:class:`~kclient.core.fetch_session.FetchSession`); a
  speculative answer dropped unread still moves the session.  :meth:`Fetcher.close` ends it.
* **Oversized messages** are fetched again with the size doubled (the core decides which and
  how far) up to ``max_buffer_size``; past that bound they fail with
  ``MessageSizeTooLargeError``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kclient.connection import BrokerConnection
from kclient.core.fetch import (
    DEFAULT_MAX_BUFFER_SIZE,
    FetchSettings,
    PartitionFetch,
    end_of,
    fetch_body,
    may_grow,
    next_fetches,
    partition_fetches,
    read_response,
    refetch_oversized,
)
from kclient.core.fetch_plain import plain_answer
from kclient.core.fetch_session import FetchSession
from kclient.core.message_set import ByteBufferMessageSet
from kclient.core.steps import Request
from kclient.protocol.apis import FETCH
from kclient.protocol.compression import DEFAULT_MAX_DECOMPRESSED
from kclient.protocol.errors import KafkaError
from kclient.protocol.fetch_one import reader_for

from .driver import ConnectionTransport, run

if TYPE_CHECKING:
    from kclient.core.columns import MessageColumns
    from kclient.protocol.messages import FetchResponse

__all__ = ["PartitionFetch", "PendingFetch", "Fetcher", "DEFAULT_MAX_BUFFER_SIZE"]

#: the caught-up reader's lane decodes an answer with fewer record bytes than this before it
#: sends the next request ahead (and only when more waits at the broker): decoding it costs
#: about what reading its headers ahead does, and a caught-up poll returns sooner without it
DECODE_FIRST_BYTES = 64 * 1024


#: an answer with at least this many record bytes has the next one read on a helper thread
#: while the caller decodes it (:meth:`~kclient.connection.BrokerConnection.read_behind`):
#: below it the thread's start costs about what the overlap saves
READ_BEHIND_BYTES = 4 << 20
#: room in the read-behind buffer for an answer's headers beside its records
_HEADERS_ROOM = 64 * 1024


def _records_size(resp: FetchResponse) -> int:
    """How many record bytes ``resp`` brought."""
    return sum(len(p.records or b"") for t in resp.responses for p in t.partitions)


class PendingFetch:
    """A Fetch request on the wire: its correlation id, what it asked for and when."""

    __slots__ = ("corr", "requests", "version", "sent_at", "key", "settings")

    def __init__(
        self, corr: int, requests: tuple[PartitionFetch, ...], version: int, settings: FetchSettings
    ) -> None:
        self.corr, self.requests, self.version = corr, requests, version
        self.sent_at = time.monotonic()
        self.key = requests
        self.settings = settings


class Fetcher:
    """Fetch partitions from one connected :class:`~kclient.connection.BrokerConnection`.

    ``max_wait_ms`` / ``min_bytes`` are the Fetch long-poll settings (by default the broker
    answers as soon as it has a byte, or after 100 ms); ``max_bytes`` bounds a response
    (``fetch.max.bytes``; default the sum of the partitions' sizes);
    ``version`` caps the Fetch version (default: the highest both sides support);
    ``isolation_level`` 1 (read_committed) reads only up to the last stable offset and leaves
    out aborted transactions (see :class:`ByteBufferMessageSet`); ``session`` fetches in an
    incremental fetch session (KIP-227), for readers that fetch the same partitions again and
    again.  Thread-safe: one fetch at a time.
    """

    def __init__(
        self,
        conn: BrokerConnection,
        *,
        max_wait_ms: int = 100,
        min_bytes: int = 1,
        max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
        version: int | None = None,
        validate_crc: bool = True,
        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
        prefetch: bool = True,
        prefetch_max_age_ms: int = 1000,
        isolation_level: int = 0,
        max_bytes: int | None = None,
        session: bool = False,
    ) -> None:
        self.conn = conn
        #: the fetch session with this broker (None: every request sessionless)
        self.session = FetchSession() if session else None
        self.isolation_level = isolation_level
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.max_buffer_size = max_buffer_size
        self.version = version
        self.validate_crc = validate_crc
        self.max_decompressed = max_decompressed
        self.prefetch = prefetch
        self.prefetch_max_age = prefetch_max_age_ms / 1000.0
        self._speculative: PendingFetch | None = None
        self._settings: tuple[tuple[object, ...], FetchSettings] | None = None
        #: (the connection's versions, the cap, the Fetch version, its reader): see _version
        self._versions: tuple[object, int | None, int, Any] | None = None
        self._lock = threading.RLock()
        #: Fetch requests written, and speculative responses used / dropped (tests, tuning).
        self.requests_sent = 0
        self.prefetch_hits = 0
        self.prefetch_misses = 0
        #: answers read on a helper thread (:meth:`_read_behind`)
        self.reads_behind = 0

    @property
    def settings(self) -> FetchSettings:
        """The core's settings from this fetcher's attributes (which callers may change): built
        again only when one of them did (a poll asks twice per fetch)."""
        key = (
            self.max_wait_ms,
            self.min_bytes,
            self.max_bytes,
            self.isolation_level,
            self.validate_crc,
            self.max_decompressed,
            self.max_buffer_size,
        )
        cached = self._settings
        if cached is None or cached[0] != key:
            cached = self._settings = (key, FetchSettings(*key))
        return cached[1]

    def _version(self) -> tuple[int, Any]:
        """The Fetch version this connection uses and its answer's reader, worked out again
        only when the connection negotiated anew or :attr:`version` changed."""
        versions, cached = self.conn.versions, self._versions
        if cached is None or cached[0] is not versions or cached[1] != self.version:
            v = self.conn.version(FETCH, self.version)
            cached = self._versions = (versions, self.version, v, reader_for(v))
        return cached[2], cached[3]

    # -- one round trip ----------------------------------------------------------------------
    def send(self, requests: Sequence[PartitionFetch]) -> PendingFetch:
        """Write one Fetch request for ``requests``; returns the handle to :meth:`receive`."""
        return self._send(partition_fetches(requests))

    def _send(self, asked: tuple[PartitionFetch, ...]) -> PendingFetch:
        """:meth:`send` of requests :func:`~kclient.core.fetch.partition_fetches` checked."""
        settings = self.settings
        version, reader = self._version()
        session = self.session
        req = (
            fetch_body(asked, settings)
            if session is None
            else session.request(asked, settings, version, self.conn.client_id)
        )
        try:
            if callable(req):  # a caught-up reader's usual request, its frame prepared
                corr = self.conn.send_framed(FETCH, version, req, reader)
            else:
                corr = self.conn.send(FETCH, req, version, reader=reader)
        except KafkaError:
            if session is not None:
                session.failed()
            raise
        self.requests_sent += 1
        return PendingFetch(corr, asked, version, settings)

    def receive(self, pending: PendingFetch) -> list[ByteBufferMessageSet]:
        """Wait for the response to ``pending``: one message set per request, in order."""
        return self._read(pending, self._full_answer(pending))

    def _full_answer(self, pending: PendingFetch) -> FetchResponse:
        """The answer to ``pending``, in the session if there is one."""
        return self._answer(pending) if self.session is None else self._session_answer(pending)

    def _answered(self, pending: PendingFetch) -> FetchResponse:
        """:meth:`_full_answer`, the next request sent ahead first (:meth:`_ahead`)."""
        resp = self._full_answer(pending)
        self._ahead(pending, resp)
        return resp

    def _ahead(self, pending: PendingFetch, resp: FetchResponse) -> None:
        """With ``prefetch``, send the natural next request after ``resp`` before it is
        decoded (the core's :func:`~kclient.core.fetch.next_fetches`, from its entries'
        headers), so the broker works while the caller decodes."""
        if self.prefetch and self._speculative is None:
            nxt = next_fetches(pending.requests, resp, pending.settings.isolation_level)
            if nxt is not None:
                self._send_ahead(nxt)
                if self._speculative is not None and _records_size(resp) >= READ_BEHIND_BYTES:
                    self._read_behind(nxt, pending.settings)

    def _read_behind(self, nxt: list[PartitionFetch], settings: FetchSettings) -> None:
        """Have the answer sent ahead read on a helper thread while the caller decodes this
        large one (the buffer sized for the most the request lets the broker send)."""
        bound = sum(r.max_bytes for r in nxt)
        if settings.max_bytes is not None:
            bound = min(bound, settings.max_bytes)
        if self.conn.read_behind(bound + _HEADERS_ROOM):
            self.reads_behind += 1

    def _read(self, pending: PendingFetch, resp: FetchResponse) -> list[ByteBufferMessageSet]:
        session = self.session
        return read_response(
            resp, pending.requests, pending.settings, None if session is None else session.known
        )

    def _session_answer(self, pending: PendingFetch) -> FetchResponse:
        """The answer to ``pending`` in this fetcher's session (asked once more, in full, after
        a session error)."""
        session = self.session
        assert session is not None
        resp = self._answer(pending)
        if not session.answer(resp):  # a session error: once more, in full
            resp = self._answer(self.send(pending.requests))
            session.answer(resp)
        return resp

    def _answer(self, pending: PendingFetch) -> FetchResponse:
        try:
            resp: FetchResponse = self.conn.receive(pending.corr)
            return resp
        except KafkaError:
            if self.session is not None:
                self.session.failed()
            raise

    def close(self) -> None:
        """End the fetch session (epoch -1) and close the connection."""
        with self._lock:
            session = self.session
            if session is not None and self.conn.connected:
                try:
                    self.discard_prefetch()
                    body = session.close_body(self.settings)
                    if body is not None:
                        self.conn.request(FETCH, body, self.conn.version(FETCH, self.version))
                except KafkaError:
                    pass  # the broker evicts a session nobody uses
            self.conn.close()

    # -- the full fetch ----------------------------------------------------------------------
    def fetch(self, requests: Sequence[PartitionFetch]) -> list[ByteBufferMessageSet]:
        """Fetch ``requests`` in one round trip (plus retries for oversized messages)."""
        if not requests:
            return []
        return self.complete(self.begin(requests))

    def begin(
        self, requests: Sequence[PartitionFetch]
    ) -> tuple[tuple[PartitionFetch, ...], PendingFetch]:
        """The first half of :meth:`fetch`: the request on the wire (the speculative one when
        it asked exactly this), so a caller with several brokers sends to all before it waits
        for any; :meth:`complete` finishes it."""
        asked = partition_fetches(requests)
        with self._lock:
            pending = self._take_speculative(asked)
            return asked, pending if pending is not None else self._send(asked)

    def complete(
        self, started: tuple[tuple[PartitionFetch, ...], PendingFetch]
    ) -> list[ByteBufferMessageSet]:
        """The second half of :meth:`fetch`: the answer, oversized entries grown, and with
        ``prefetch`` the next request sent."""
        asked, pending = started
        with self._lock:
            resp = self._answered(pending)
            return self._grow_oversized(asked, self._read(pending, resp), pending.settings)

    def complete_plain(
        self, started: tuple[tuple[PartitionFetch, ...], PendingFetch]
    ) -> tuple[MessageColumns, int] | list[ByteBufferMessageSet]:
        """:meth:`complete` of a one-partition fetch in a session, with the usual answer (see
        :mod:`kclient.core.fetch_plain`) given as ``(columns, bytes)`` without a message set;
        any other answer as :meth:`complete` gives it."""
        asked, pending = started
        with self._lock:
            if self.session is None or len(asked) != 1 or pending.version < 5:
                return self.complete(started)
            resp = self._session_answer(pending)
            topics = resp.responses  # the first partition's records: small ones decoded first
            large = (
                bool(topics)
                and bool(topics[0].partitions)
                and len(topics[0].partitions[0].records or b"") >= DECODE_FIRST_BYTES
            )
            if large:
                self._ahead(pending, resp)
            plain = plain_answer(resp, asked[0], pending.settings)
            if not large and (plain is None or plain[0].next_offset < plain[0].high_watermark):
                self._ahead(pending, resp)  # (a caught-up reader skips it: latency)
            if plain is None:
                return self._grow_oversized(asked, self._read(pending, resp), pending.settings)
            return plain

    def end_of(self, ms: ByteBufferMessageSet) -> int:
        """Where readable data ends: the high watermark, or with read_committed the last
        stable offset (when the broker sent one)."""
        return end_of(ms, self.isolation_level)

    def discard_prefetch(self) -> None:
        """Read and drop a speculative response still on the wire (before other use)."""
        with self._lock:
            pending, self._speculative = self._speculative, None
            if pending is not None:
                self._drop(pending)

    def reset(self) -> None:
        """Forget a speculative request without reading it (the connection was replaced)."""
        self._speculative = None
        if self.session is not None:
            self.session.failed()

    def _drop(self, pending: PendingFetch) -> None:
        self.prefetch_misses += 1
        try:
            resp = self._answer(pending)
            if self.session is not None:
                self.session.answer(resp)
        except KafkaError:
            pass  # the caller's own request will meet the same broken connection

    def _take_speculative(self, requests: tuple[PartitionFetch, ...]) -> PendingFetch | None:
        pending, self._speculative = self._speculative, None
        if pending is None:
            return None
        if pending.key == requests and time.monotonic() - pending.sent_at <= self.prefetch_max_age:
            self.prefetch_hits += 1
            return pending
        self._drop(pending)
        return None

    def _send_ahead(self, nxt: list[PartitionFetch]) -> None:
        try:
            self._speculative = self.send(nxt)
        except KafkaError:
            self._speculative = None

    def _grow_oversized(
        self,
        requests: Sequence[PartitionFetch],
        results: list[ByteBufferMessageSet],
        settings: FetchSettings,
    ) -> list[ByteBufferMessageSet]:
        """Refetch partitions whose first message did not fit, doubling their size
        (``settings``: those the request was sent with)."""
        if not may_grow(requests, results, settings):
            return results
        version = self.conn.version(FETCH, self.version)
        return run(refetch_oversized(requests, results, settings, version=version), _Counted(self))


class _Counted(ConnectionTransport):
    """The fetcher's connection, counting the requests written in ``requests_sent``."""

    __slots__ = ("fetcher",)

    def __init__(self, fetcher: Fetcher) -> None:
        super().__init__(fetcher.conn)
        self.fetcher = fetcher

    def send(self, request: Request) -> int | None:
        self.fetcher.requests_sent += 1
        return super().send(request)
