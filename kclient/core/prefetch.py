"""A consumer's partitions between fetch and delivery: positions and the bounded prefetch queue.

Theory of operation: each assigned partition has a :class:`PartitionState`.  ``position`` is
the next offset handed to the application; ``fetch_offset`` where fetching continues (the end
of what is queued).  A fetch answer is queued on the partition as one chunk of decoded columns
(:func:`take_answer`); the consumer builds records only for the slices it hands out
(:func:`take`).  The queue is bounded like the classic consumer's ``queued.max.message.chunks``
(chunks per partition) and, in bytes, by the answers' sizes (:meth:`PartitionState.fetchable`).

What discards what, exactly: a seek, an offset reset or a new assignment calls
:meth:`~PartitionState.reset_to`, which drops the queue and bumps ``epoch``, so an answer to a
request sent before it is dropped when it arrives (:func:`take_answer` compares the epoch and
the offset asked for); a revoked partition's state is dropped whole.  Pausing keeps the queue
(the position does not move) and only stops fetching and delivery.

Fetching ahead (:func:`fetch_ahead`): the asyncio fetcher sends a leader's next Fetch as soon
as an answer arrives, from offsets read off the answer's entry headers, and decodes the answer
while the broker works; :func:`take_answer` then checks that decoding ended where the next
fetch started, and drops that fetch's answer (bumping ``epoch``) where it did not.  A seek
meanwhile drops both answers as above.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from kclient.protocol.errors import CorruptRecordError, KafkaError
from kclient.protocol.records.reader import next_fetch_offset
from kclient.structs import TopicPartition

from .columns import MessageColumns, message_columns
from .fetch import needs_reset
from .message_set import ByteBufferMessageSet

__all__ = [
    "PartitionState",
    "fetch_ahead",
    "take_answer",
    "take_columns",
    "take",
    "take_whole",
    "DATA",
    "RESET",
    "REFRESH",
    "NOTHING",
]

#: what an answer meant for its partition (:func:`take_answer`)
DATA = "data"  # records (or an error to raise) queued: wake the application
RESET = "reset"  # offset out of range: auto.offset.reset picks the position
REFRESH = "refresh"  # the leader moved or is unknown: refresh metadata, fetch again
NOTHING = ""  # nothing new (no records yet, or a stale answer)


class PartitionState:
    """One assigned partition: the consumer's position, where fetching continues, the queue."""

    __slots__ = (
        "tp",
        "position",
        "fetch_offset",
        "chunks",
        "buffered",
        "bytes",
        "high_watermark",
        "paused",
        "epoch",
        "error",
    )

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        #: the next offset handed to the application (-1: not known yet)
        self.position = -1
        #: the next offset to fetch (the end of the queued data; -1: needs a reset)
        self.fetch_offset = -1
        #: decoded fetches not yet handed out: ``[columns, index of the next record, bytes]``
        self.chunks: deque[list[Any]] = deque()
        #: records and answer bytes queued
        self.buffered = 0
        self.bytes = 0
        self.high_watermark = -1
        self.paused = False
        self.epoch = 0
        #: an error to raise to the application (offset out of range with reset "none", ...)
        self.error: BaseException | None = None

    def reset_to(self, offset: int) -> None:
        """Drop the queue and continue from ``offset`` (seek, reset, new assignment)."""
        self.position = self.fetch_offset = offset
        self.chunks.clear()
        self.buffered = self.bytes = 0
        self.epoch += 1
        self.error = None

    def fetchable(self, max_chunks: int, max_bytes: int) -> bool:
        """Whether to fetch this partition now: not paused, its offset known, no error waiting,
        fewer than ``max_chunks`` chunks and ``max_bytes`` bytes queued."""
        return (
            not self.paused
            and self.fetch_offset >= 0
            and self.error is None
            and len(self.chunks) < max_chunks
            and self.bytes < max_bytes
        )


def fetch_ahead(
    asked: Sequence[tuple[PartitionState, int, int]],
    answers: Sequence[tuple[Any, int] | None],
    max_chunks: int,
    max_bytes: int,
) -> list[int] | None:
    """Where each partition's next fetch goes from before this answer is decoded, read from its
    entries' headers alone, ``fetch_offset`` moved there: -1 where it stays (a stale answer,
    none); None, nothing moved, when some partition's answer must be decoded first (an error,
    no complete entry, the queue full once it is queued: the memory bound holds).

    ``asked`` is ``(state, offset, epoch)`` per partition of the request, ``answers`` its
    ``(records, error_code)`` (None: left out of the answer).  :func:`take_answer` with
    ``ahead`` checks that decoding ended there; where it did not (a bad CRC, an entry that does
    not decode) the fetch sent ahead is dropped when it arrives."""
    ends: list[int] = []
    for (st, offset, epoch), got in zip(asked, answers):
        if got is None or st.epoch != epoch or st.fetch_offset != offset:
            ends.append(-1)
            continue
        records, code = got
        if not records and not code:
            ends.append(-1)  # nothing new: asked again from the same offset
            continue
        if code or len(st.chunks) + 1 >= max_chunks or st.bytes + len(records) >= max_bytes:
            return None
        end = next_fetch_offset(records)
        if end <= offset:
            return None
        ends.append(end)
    for (st, _, _), end in zip(asked, ends):
        if end >= 0:
            st.fetch_offset = end
    return ends


#: one partition's answer: its message set, or ``(columns, bytes)`` when it was decoded
#: straight to columns (:func:`kclient.core.fetch_plain.plain_part`)
Answer = ByteBufferMessageSet | tuple[MessageColumns, int]


def take_answer(st: PartitionState, offset: int, epoch: int, ms: Answer, ahead: int = -1) -> str:
    """Queue one partition's answer to a fetch from ``offset`` sent at ``epoch``; what it meant.

    An answer to a request older than the last seek/reset (or for an offset no longer asked)
    is dropped.  A corrupt first entry becomes ``st.error`` (its offset named), raised when
    the application reaches it; good records in front of a corrupt entry are queued first.
    ``ahead``: where :func:`fetch_ahead` already sent the next fetch from (-1: nowhere)."""
    if ahead < 0:
        return _take_answer(st, offset, epoch, ms)
    if st.epoch != epoch or st.fetch_offset != ahead:
        return NOTHING
    st.fetch_offset = offset
    what = _take_answer(st, offset, epoch, ms)
    if st.fetch_offset != ahead:
        st.epoch += 1  # the fetch sent ahead asked from the wrong offset: dropped on arrival
    return what


def _take_answer(st: PartitionState, offset: int, epoch: int, ms: Answer) -> str:
    if st.epoch != epoch or st.fetch_offset != offset:
        return NOTHING
    if isinstance(ms, tuple):  # decoded already: no error, records there
        done, size = ms
        if done.high_watermark >= 0:
            st.high_watermark = done.high_watermark
        return DATA if take_columns(st, offset, done, size) else NOTHING
    if ms.error is not None and not ms.entries and not isinstance(ms.error, CorruptRecordError):
        if needs_reset(ms.error):
            st.fetch_offset = -1
            st.epoch += 1
            return RESET
        return REFRESH
    if ms.high_watermark >= 0:
        st.high_watermark = ms.high_watermark
    try:
        cols: MessageColumns = message_columns(ms)  # ms.columns(), one call fewer
    except KafkaError as exc:
        st.error = exc
        return DATA
    if take_columns(st, offset, cols, len(ms.buffer)):  # (ms.size_in_bytes)
        return DATA
    if cols.error is not None:
        st.error = cols.error
        return DATA
    return NOTHING


def take_columns(st: PartitionState, offset: int, cols: MessageColumns, size: int) -> bool:
    """Queue a fetch from ``offset`` decoded as ``cols`` (``size`` bytes of records) and move
    ``fetch_offset`` past it; False when it holds no record to queue."""
    if cols.next_offset > offset:
        st.fetch_offset = cols.next_offset
    if not cols.offsets:
        return False
    st.chunks.append([cols, 0, size])
    st.buffered += len(cols.offsets)
    st.bytes += size
    return True


def take_whole(st: PartitionState, limit: int) -> MessageColumns | None:
    """:func:`take` (advancing) of a queue that is one chunk, none of it taken, within
    ``limit``: its columns, every record in them taken; None (nothing taken) otherwise.  The
    caught-up consumer's usual poll, without the generator."""
    chunks = st.chunks
    if len(chunks) != 1:
        return None
    cols: MessageColumns = chunks[0][0]
    i, size = chunks[0][1], chunks[0][2]
    n = len(cols.offsets)
    if i or n > limit:
        return None
    chunks.clear()
    st.buffered -= n
    st.bytes -= size
    st.position = max(cols.next_offset, cols.offsets[-1] + 1)
    return cols


def take(
    st: PartitionState, limit: int, advance: bool = True
) -> Iterator[tuple[MessageColumns, int, int]]:
    """Up to ``limit`` queued records as ``(columns, i, j)`` slices, oldest first, removed from
    the queue; ``advance`` moves the position past them."""
    chunks = st.chunks
    while chunks and limit > 0:
        chunk = chunks[0]
        cols, i, size = chunk
        n_all = len(cols.offsets)
        j = min(n_all, i + limit)
        limit -= j - i
        st.buffered -= j - i
        if j >= n_all:
            chunks.popleft()
            st.bytes -= size
            if advance:
                st.position = max(cols.next_offset, cols.offsets[-1] + 1)
        else:
            chunk[1] = j
            if advance:
                st.position = cols.offsets[j - 1] + 1
        yield cols, i, j
