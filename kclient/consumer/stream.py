"""KafkaStream: the iterator a consumer thread reads, fed by fetcher threads through a queue.

Fetcher threads put :class:`FetchedDataChunk` s (the records of one partition from one fetch) on
a bounded queue (``queued.max.message.chunks``); the stream takes chunks off it and yields
:class:`MessageAndMetadata`.  A message counts as consumed the moment the stream hands it out:
the partition's consumed offset becomes ``offset + 1`` and that is what commits store
(Kafka 0.8's ``ConsumerIterator``).

* ``consumer.timeout.ms`` >= 0: ``next()`` raises ``ConsumerTimeoutError`` after that long
  without a message; the stream stays usable and the next call waits again.
* ``shutdown()`` of the connector puts an end marker on every queue: iteration then stops.
* A rebalance clears the queues and the chunk being iterated (``clear()``), so no message of a
  partition this consumer may lose is handed out after its offset was committed.
* A rebalance that failed for good is raised from ``next()`` as ``ConsumerRebalanceFailedError``
  (and later calls go on waiting, in case a later rebalance succeeds).
"""

from __future__ import annotations

import queue
import threading
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from enum import Enum
from itertools import chain, islice, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol, TypeVar

from kclient.encoders import DefaultDecoder
from kclient.errors import ConsumerTimeoutError
from kclient.protocol.records.common import Header

__all__ = [
    "MessageAndMetadata",
    "FetchedDataChunk",
    "PartitionTopicInfo",
    "KafkaStream",
    "SHUTDOWN",
    "ErrorChunk",
    "Chunk",
    "ChunkQueue",
    "Decoder",
]

_T_co = TypeVar("_T_co", covariant=True)

#: A key or value decoder: raw bytes (None for null) to the value handed out.
Decoder = Callable[[bytes | None], Any]
#: ``(timestamp, timestamp_type, headers)`` of one message (headers None: none at all).
Meta = tuple[int, int, list[Header] | None]


class MessageAndMetadata(tuple[str, int, int, Any, Any, "FetchedDataChunk"]):
    """One consumed message: topic, partition, offset, key, message (decoded), timestamp, headers.

    A tuple ``(topic, partition, offset, key, message, chunk)`` where ``chunk`` is the
    :class:`FetchedDataChunk` the message came in (``timestamp``, ``timestamp_type`` and
    ``headers`` are looked up in it by offset when asked for, which keeps creation to one C-level
    tuple allocation on the hot path).  ``value`` is another name for ``message``;
    ``next_offset`` is ``offset + 1``.
    """

    __slots__ = ()
    _fields = (
        "topic",
        "partition",
        "offset",
        "key",
        "message",
        "timestamp",
        "headers",
        "timestamp_type",
    )

    if TYPE_CHECKING:  # what the itemgetter properties below return

        @property
        def topic(self) -> str: ...
        @property
        def partition(self) -> int: ...
        @property
        def offset(self) -> int: ...
        @property
        def key(self) -> Any: ...
        @property
        def message(self) -> Any: ...
        @property
        def value(self) -> Any: ...
    else:
        topic = property(itemgetter(0), doc="topic name")
        partition = property(itemgetter(1), doc="partition id")
        offset = property(itemgetter(2), doc="offset of this message")
        key = property(itemgetter(3), doc="decoded key (None for a null key)")
        message = property(itemgetter(4), doc="decoded value (None for a null value)")
        value = message

    @property
    def timestamp(self) -> int:
        """Create or log-append time in ms (-1 for message format v0)."""
        return self[5].meta(self[2])[0]

    @property
    def timestamp_type(self) -> int:
        """0 create time, 1 log append time, -1 none."""
        return self[5].meta(self[2])[1]

    @property
    def headers(self) -> list[Header]:
        """``[(key, value bytes), ...]`` (message format v2; empty otherwise)."""
        return list(self[5].meta(self[2])[2] or ())

    @property
    def next_offset(self) -> int:
        return self[2] + 1

    def _asdict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self._fields}

    def __repr__(self) -> str:
        return (
            "MessageAndMetadata("
            + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
            + ")"
        )


class PartitionTopicInfo:
    """One owned partition: its stream's queue and the consumed / fetched positions.

    ``consumed_offset`` is derived from the chunk the stream is walking (``_cursor``): the
    stream's C-level iterator advances without Python code per message, and the position is
    read from how far its offsets iterator got (``offsets[k - 1] + 1`` after ``k`` messages).
    """

    __slots__ = (
        "topic",
        "partition",
        "queue",
        "_consumed",
        "_cursor",
        "fetched_offset",
        "fetch_size",
        "client_id",
        "thread_id",
        "high_watermark",
    )

    _cursor: _ChunkState | None

    def __init__(
        self,
        topic: str,
        partition: int,
        chunk_queue: ChunkQueue,
        consumed_offset: int,
        fetched_offset: int,
        fetch_size: int,
        client_id: str = "",
        thread_id: str = "",
    ) -> None:
        self.topic, self.partition, self.queue = topic, partition, chunk_queue
        self._consumed, self._cursor, self.fetched_offset = consumed_offset, None, fetched_offset
        self.fetch_size, self.client_id, self.thread_id = fetch_size, client_id, thread_id
        #: the partition's high watermark in its last fetch response (-1: none yet; metrics)
        self.high_watermark = -1

    @property
    def consumed_offset(self) -> int:
        c = self._cursor
        if c is not None:
            k = c.n - c.oit.__length_hint__()
            if k >= c.n and c.end > self._consumed:  # all handed out: past markers too
                return c.end
            if k > 0:
                return c.offsets[k - 1] + 1
        return self._consumed

    @consumed_offset.setter
    def consumed_offset(self, offset: int) -> None:
        self._consumed, self._cursor = offset, None

    def _settle(self) -> None:
        """Fold the cursor's position into ``_consumed`` and drop the cursor."""
        c = self._cursor
        if c is not None:
            self._consumed, self._cursor = self.consumed_offset, None

    def reset_offsets(self, offset: int) -> None:
        self._consumed, self._cursor = offset, None
        self.fetched_offset = offset

    def __repr__(self) -> str:
        return (
            f"PartitionTopicInfo({self.topic}/{self.partition}, consumed="
            f"{self.consumed_offset}, fetched={self.fetched_offset}, {self.thread_id})"
        )


_meta_lock = threading.Lock()


class _Block:
    """Per-record metadata of one decoded log entry (``n`` records from index ``start`` of its
    chunk): the decoder's lazy columns, turned into lists the first time one is asked for."""

    __slots__ = ("start", "n", "cols", "rows")

    cols: tuple[Iterable[int], Iterable[int], Iterable[list[Header] | None] | None] | None
    rows: tuple[list[int], list[int], list[list[Header] | None] | None] | None

    def __init__(
        self,
        start: int,
        n: int,
        stamps: Iterable[int],
        ts_types: Iterable[int],
        headers: Iterable[list[Header] | None] | None,
        infos: object = None,
    ) -> None:
        self.start, self.n, self.cols, self.rows = start, n, (stamps, ts_types, headers), None

    def row(self, j: int) -> Meta:
        rows = self.rows
        if rows is None:
            with _meta_lock:
                rows = self.rows
                if rows is None:
                    assert self.cols is not None  # set until rows are
                    stamps, ts_types, headers = self.cols
                    n = self.n
                    rows = self.rows = (
                        list(islice(stamps, n)),
                        list(islice(ts_types, n)),
                        None if headers is None else list(islice(headers, n)),
                    )
                    self.cols = None
        hs = rows[2]
        return rows[0][j], rows[1][j], (hs[j] if hs is not None else None)


class FetchedDataChunk:
    """The messages of one partition from one fetch, starting at ``fetch_offset``, as columns.

    ``offsets`` and ``values`` are lists (one item per message), ``keys`` a list or None (no
    key at all); ``blocks`` carry the rest (timestamps, headers), read only when asked for.
    Queued chunks thus hold untracked ints and bytes in a few lists: nothing per message for
    the garbage collector.  ``FetchedDataChunk(records, info, fetch_offset)`` takes
    :class:`kclient.simple.MessageAndOffset` tuples; the fetcher builds chunks with
    :meth:`from_columns`.
    """

    __slots__ = (
        "offsets",
        "keys",
        "values",
        "blocks",
        "starts",
        "info",
        "fetch_offset",
        "end_offset",
    )

    def __init__(self, records: Sequence[Any], info: PartitionTopicInfo, fetch_offset: int):
        records = list(records)
        self.offsets = [r[0] for r in records]
        keys = [r[1] for r in records]
        self.keys = keys if any(k is not None for k in keys) else None
        self.values = [r[2] for r in records]
        n = len(records)
        self.blocks = [
            _Block(0, n, [r[3] for r in records], [r[4] for r in records], [r[5] for r in records])
        ]
        self.starts = [0]
        self.info, self.fetch_offset, self.end_offset = info, fetch_offset, -1

    @classmethod
    def from_columns(
        cls,
        offsets: list[int],
        keys: list[bytes | None] | None,
        values: list[bytes | None],
        blocks: list[_Block],
        info: PartitionTopicInfo,
        fetch_offset: int,
        end_offset: int = -1,
    ) -> FetchedDataChunk:
        """A chunk of decoded columns; ``end_offset`` is where the fetch goes on (past
        transaction markers and aborted records), the consumed position once every message
        of the chunk was handed out (-1: one past the last message)."""
        self = cls.__new__(cls)
        self.offsets, self.keys, self.values, self.blocks = offsets, keys, values, blocks
        self.starts = [b.start for b in blocks]
        self.info, self.fetch_offset, self.end_offset = info, fetch_offset, end_offset
        return self

    def __len__(self) -> int:
        return len(self.offsets)

    def meta(self, offset: int) -> Meta:
        """``(timestamp, timestamp_type, headers)`` of the message at ``offset``."""
        i = bisect_left(self.offsets, offset)
        b = self.blocks[bisect_right(self.starts, i) - 1]
        return b.row(i - b.start)


class ErrorChunk:
    """An error to raise from the stream that reads it (rebalance failure, reset 'none', ...)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _End(Enum):
    SHUTDOWN = "SHUTDOWN"


#: end-of-stream marker put on queues by shutdown()
SHUTDOWN: Final = _End.SHUTDOWN

#: What a stream's queue carries.
Chunk = FetchedDataChunk | ErrorChunk | _End
ChunkQueue = queue.Queue[Chunk]


class _HintedIterator(Iterator[_T_co], Protocol[_T_co]):
    """An iterator that knows how many items it has left (list and tuple iterators do)."""

    def __length_hint__(self) -> int: ...


if TYPE_CHECKING:

    def _iter(items: Sequence[_T_co]) -> _HintedIterator[_T_co]: ...
else:
    _iter = iter  # typeshed types iter(list) as a plain Iterator, without __length_hint__

_NO_ITEMS: _HintedIterator[Any] = _iter(())  # shared: an exhausted empty iterator stays empty


class _ChunkState:
    """The chunk being iterated: ``it`` builds its MessageAndMetadata tuples in C
    (``map(tuple.__new__, repeat(cls), zip(...))``) as they are asked for; ``oit`` is the
    offsets iterator inside it, whose remaining length tells how many were handed out."""

    __slots__ = ("it", "oit", "offsets", "n", "info", "end")

    def __init__(
        self,
        it: Iterator[MessageAndMetadata] = _NO_ITEMS,
        oit: _HintedIterator[int] = _NO_ITEMS,
        offsets: Sequence[int] = (),
        info: PartitionTopicInfo | None = None,
        end: int = -1,
    ) -> None:
        self.it, self.oit, self.offsets, self.n, self.info = it, oit, offsets, len(offsets), info
        self.end = end


_EMPTY = _ChunkState()


def _exhausted() -> NoReturn:
    raise StopIteration


def _raising(exc: BaseException) -> Iterator[NoReturn]:
    """An iterator that raises ``exc`` once, then is exhausted (chain then moves on)."""
    raise exc
    yield  # pragma: no cover


class KafkaStream(Iterator[MessageAndMetadata]):
    """An endless iterator of :class:`MessageAndMetadata` over one queue of fetched chunks."""

    def __init__(
        self,
        chunk_queue: ChunkQueue,
        consumer_timeout_ms: int = -1,
        key_decoder: Decoder | None = None,
        value_decoder: Decoder | None = None,
        client_id: str = "",
    ) -> None:
        self.queue = chunk_queue
        self.consumer_timeout_ms = consumer_timeout_ms
        self._timeout = None if consumer_timeout_ms < 0 else consumer_timeout_ms / 1000.0
        kd = None if key_decoder is None or type(key_decoder) is DefaultDecoder else key_decoder
        vd = (
            None
            if value_decoder is None or type(value_decoder) is DefaultDecoder
            else value_decoder
        )
        self._kd, self._vd = kd, vd
        self.client_id = client_id
        self._st = _EMPTY
        #: the current chunk's iterator's __next__
        self._nx: Callable[[], MessageAndMetadata] = _exhausted
        self._done = False
        self._lock = threading.Lock()  # one reader at a time

    def __repr__(self) -> str:
        return f"KafkaStream(client_id={self.client_id!r}, done={self._done})"

    def __iter__(self) -> Iterator[MessageAndMetadata]:
        """A C-level iterator over this stream: ``itertools.chain`` walks each chunk's
        MessageAndMetadata iterator with no Python code per message, and a generator waits for
        the next chunk.  A timeout or an error chunk is raised from it, and it stays usable
        afterwards (the next call waits again), as ``next(stream)`` does."""
        return chain.from_iterable(self._chunks())

    def _chunks(self) -> Iterator[Iterator[MessageAndMetadata]]:
        while True:
            st = self._st
            if st.oit.__length_hint__():
                yield st.it  # walked by chain until exhausted (or cleared)
                continue
            try:
                self._advance()
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - timeout, error chunk: raise, stay resumable
                yield _raising(exc)

    def __next__(self) -> MessageAndMetadata:
        try:
            return self._nx()
        except StopIteration:
            pass
        while True:
            self._advance()
            try:
                return self._nx()
            except StopIteration:  # another reader took the rest meanwhile
                continue

    next = __next__

    def _advance(self) -> None:
        """Wait for a chunk with messages and make it current.  Raises StopIteration after
        shutdown, ConsumerTimeoutError, or the error of an :class:`ErrorChunk`."""
        with self._lock:
            while True:
                if self._done:
                    raise StopIteration
                old = self._st
                if old.oit.__length_hint__():  # another caller refilled meanwhile
                    return
                if old.info is not None and old.info._cursor is old:
                    old.info._settle()
                try:
                    item = (
                        self.queue.get(timeout=self._timeout)
                        if self._timeout is not None
                        else self._get_blocking()
                    )
                except queue.Empty:
                    raise ConsumerTimeoutError(
                        f"no message within consumer.timeout.ms={self.consumer_timeout_ms}"
                    ) from None
                if item is SHUTDOWN:
                    self._done = True
                    self._st, self._nx = _EMPTY, _exhausted
                    raise StopIteration
                if isinstance(item, ErrorChunk):
                    raise item.error
                st = self._decode(item)
                info = item.info
                info._settle()
                info._cursor = st
                self._st, self._nx = st, st.it.__next__

    def _get_blocking(self) -> Chunk:
        # a plain get() cannot be interrupted by Ctrl-C on every platform: poll instead
        while True:
            try:
                return self.queue.get(timeout=1.0)
            except queue.Empty:
                continue

    def _decode(self, chunk: FetchedDataChunk) -> _ChunkState:
        info = chunk.info
        offsets, keys, values = chunk.offsets, chunk.keys, chunk.values
        low = max(chunk.fetch_offset, info.consumed_offset)
        if offsets and offsets[0] < low:  # v0 wrappers, or a chunk older than a reset
            k = bisect_left(offsets, low)
            offsets, values = offsets[k:], values[k:]
            keys = keys[k:] if keys is not None else None
        oit = _iter(offsets)
        kit: Iterable[Any] = repeat(None) if keys is None else keys
        if self._kd is not None:
            kit = map(self._kd, kit)
        vit: Iterable[Any] = values if self._vd is None else map(self._vd, values)
        it = map(
            tuple.__new__,
            repeat(MessageAndMetadata),
            zip(repeat(info.topic), repeat(info.partition), oit, kit, vit, repeat(chunk)),
        )
        return _ChunkState(it, oit, offsets, info, chunk.end_offset)

    # -- used by the connector ------------------------------------------------------------------
    def clear(self) -> None:
        """Drop the chunk being iterated (its rest will be fetched again by the next owner).

        The consumed position is settled first, then the chunk's offsets iterator is run
        out, which ends its iterator wherever it is being walked (a message that slips out in
        between is not counted as consumed, so it is delivered again rather than lost)."""
        st = self._st
        self._st, self._nx = _EMPTY, _exhausted
        info = st.info
        if info is not None and info._cursor is st:
            info._settle()
        deque(st.oit, maxlen=0)

    def shutdown(self) -> None:
        """Make iteration end (after the messages already handed out)."""
        self.queue.put(SHUTDOWN)

    @property
    def done(self) -> bool:
        return self._done
