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
from operator import itemgetter
from typing import Any, Callable, Iterator, Sequence

from kclient.encoders import DefaultDecoder
from kclient.errors import ConsumerTimeoutError

__all__ = ["MessageAndMetadata", "FetchedDataChunk", "PartitionTopicInfo", "KafkaStream",
           "SHUTDOWN", "ErrorChunk"]

class MessageAndMetadata(tuple):
    """One consumed message: topic, partition, offset, key, message (decoded), timestamp, headers.

    A tuple ``(topic, partition, offset, key, message, raw)`` where ``raw`` is the fetched
    :class:`kclient.simple.MessageAndOffset` (``timestamp``, ``timestamp_type`` and ``headers``
    are read from it when asked for, which keeps creation cheap on the hot path).  ``value`` is
    another name for ``message``; ``next_offset`` is ``offset + 1``.
    """

    __slots__ = ()
    _fields = ("topic", "partition", "offset", "key", "message", "timestamp", "headers",
               "timestamp_type")

    topic = property(itemgetter(0), doc="topic name")
    partition = property(itemgetter(1), doc="partition id")
    offset = property(itemgetter(2), doc="offset of this message")
    key = property(itemgetter(3), doc="decoded key (None for a null key)")
    message = property(itemgetter(4), doc="decoded value (None for a null value)")
    value = message

    @property
    def timestamp(self) -> int:
        """Create or log-append time in ms (-1 for message format v0)."""
        return self[5][3]

    @property
    def timestamp_type(self) -> int:
        """0 create time, 1 log append time, -1 none."""
        return self[5][4]

    @property
    def headers(self) -> list:
        """``[(key, value bytes), ...]`` (message format v2; empty otherwise)."""
        return list(self[5][5])

    @property
    def next_offset(self) -> int:
        return self[2] + 1

    def _asdict(self) -> dict:
        return {f: getattr(self, f) for f in self._fields}

    def __repr__(self) -> str:
        return ("MessageAndMetadata(" + ", ".join(f"{f}={getattr(self, f)!r}"
                                                  for f in self._fields) + ")")


class PartitionTopicInfo:
    """One owned partition: its stream's queue and the consumed / fetched positions."""

    __slots__ = ("topic", "partition", "queue", "consumed_offset", "fetched_offset",
                 "fetch_size", "client_id", "thread_id")

    def __init__(self, topic: str, partition: int, chunk_queue: "queue.Queue",
                 consumed_offset: int, fetched_offset: int, fetch_size: int,
                 client_id: str = "", thread_id: str = "") -> None:
        self.topic, self.partition, self.queue = topic, partition, chunk_queue
        self.consumed_offset, self.fetched_offset = consumed_offset, fetched_offset
        self.fetch_size, self.client_id, self.thread_id = fetch_size, client_id, thread_id

    def reset_offsets(self, offset: int) -> None:
        self.consumed_offset = self.fetched_offset = offset

    def __repr__(self) -> str:
        return (f"PartitionTopicInfo({self.topic}/{self.partition}, consumed="
                f"{self.consumed_offset}, fetched={self.fetched_offset}, {self.thread_id})")


class FetchedDataChunk:
    """The messages of one partition from one fetch, starting at ``fetch_offset``.

    ``records`` holds :class:`kclient.simple.MessageAndOffset` tuples (raw key and value bytes,
    offset first); the stream decodes and wraps each one when it hands it out.
    """

    __slots__ = ("records", "info", "fetch_offset")

    def __init__(self, records: Sequence[Any], info: PartitionTopicInfo, fetch_offset: int):
        self.records, self.info, self.fetch_offset = records, info, fetch_offset


class ErrorChunk:
    """An error to raise from the stream that reads it (rebalance failure, reset 'none', ...)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _identity(b):
    return b


#: end-of-stream marker put on queues by shutdown()
SHUTDOWN = object()


class _ChunkState:
    """The chunk being iterated; replaced whole by clear() so a racing next() sees one or other.

    ``msgs`` are the raw :class:`kclient.simple.MessageAndOffset` tuples of one partition; the
    stream wraps each in a :class:`MessageAndMetadata` only when it hands it out, so a chunk
    waiting in a queue holds one object per message and the garbage collector sees few
    allocations that outlive a ``next()``.
    """

    __slots__ = ("msgs", "i", "n", "info", "topic", "part", "plain")

    def __init__(self, msgs: Sequence[Any] = (), info: Any = None, plain: bool = True) -> None:
        self.msgs, self.i, self.n, self.info = msgs, 0, len(msgs), info
        self.topic = info.topic if info is not None else None
        self.part = info.partition if info is not None else None
        self.plain = plain


_EMPTY = _ChunkState()


class KafkaStream(Iterator[MessageAndMetadata]):
    """An endless iterator of :class:`MessageAndMetadata` over one queue of fetched chunks."""

    def __init__(self, chunk_queue: "queue.Queue", consumer_timeout_ms: int = -1,
                 key_decoder: Any = None, value_decoder: Any = None, client_id: str = "",
                 on_error: Callable[[], BaseException | None] | None = None) -> None:
        self.queue = chunk_queue
        self.consumer_timeout_ms = consumer_timeout_ms
        self._timeout = None if consumer_timeout_ms < 0 else consumer_timeout_ms / 1000.0
        kd = None if key_decoder is None or type(key_decoder) is DefaultDecoder else key_decoder
        vd = (None if value_decoder is None or type(value_decoder) is DefaultDecoder
              else value_decoder)
        self._plain = kd is None and vd is None
        self._kd = kd if kd is not None else _identity
        self._vd = vd if vd is not None else _identity
        self.client_id = client_id
        self._st = _EMPTY
        self._done = False
        self._lock = threading.Lock()          # one reader at a time

    def __repr__(self) -> str:
        return f"KafkaStream(client_id={self.client_id!r}, done={self._done})"

    def __iter__(self) -> "KafkaStream":
        return self

    def __next__(self, _new=tuple.__new__, _mam=MessageAndMetadata) -> MessageAndMetadata:
        st = self._st
        i = st.i
        if i < st.n:
            mo = st.msgs[i]
            st.i = i + 1
            off = mo[0]
            st.info.consumed_offset = off + 1
            if st.plain:
                return _new(_mam, (st.topic, st.part, off, mo[1], mo[2], mo))
            return _new(_mam, (st.topic, st.part, off, self._kd(mo[1]), self._vd(mo[2]), mo))
        return self._next_chunk()

    next = __next__

    def _next_chunk(self) -> MessageAndMetadata:
        with self._lock:
            while True:
                if self._done:
                    raise StopIteration
                st = self._st
                if st.i < st.n:                # another caller refilled meanwhile
                    return self.__next__()
                try:
                    item = self.queue.get(timeout=self._timeout) if self._timeout is not None \
                        else self._get_blocking()
                except queue.Empty:
                    raise ConsumerTimeoutError(
                        f"no message within consumer.timeout.ms={self.consumer_timeout_ms}"
                    ) from None
                if item is SHUTDOWN:
                    self._done = True
                    self._st = _EMPTY
                    raise StopIteration
                if isinstance(item, ErrorChunk):
                    raise item.error
                self._st = self._decode(item)

    def _get_blocking(self) -> Any:
        # a plain get() cannot be interrupted by Ctrl-C on every platform: poll instead
        while True:
            try:
                return self.queue.get(timeout=1.0)
            except queue.Empty:
                continue

    def _decode(self, chunk: FetchedDataChunk) -> _ChunkState:
        info = chunk.info
        msgs = chunk.records
        low = max(chunk.fetch_offset, info.consumed_offset)
        if msgs and msgs[0][0] < low:          # v0 wrappers, or a chunk older than a reset
            msgs = [m for m in msgs if m[0] >= low]
        return _ChunkState(msgs, info, self._plain)

    # -- used by the connector ------------------------------------------------------------------
    def clear(self) -> None:
        """Drop the chunk being iterated (its rest will be fetched again by the next owner)."""
        self._st = _EMPTY

    def shutdown(self) -> None:
        """Make iteration end (after the messages already handed out)."""
        self.queue.put(SHUTDOWN)

    @property
    def done(self) -> bool:
        return self._done
