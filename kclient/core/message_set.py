"""A fetched partition's messages: the classic ``ByteBufferMessageSet``.

Built from the raw records a Fetch returned for one partition (any mix of message formats v0, v1
and v2, any codec).  Construction walks entry headers and checks every complete entry's CRC;
messages are decoded lazily while iterating.  The buffer may end with a partial entry (the
broker cuts at the fetch size): it is not delivered, and ``valid_bytes`` counts only the
complete entries in front of it, as the 0.8 API's ``validBytes`` does.

Errors: a broker error for the partition (offset out of range, not the leader, ...) or a corrupt
entry is kept in ``error``.  Iterating delivers every good message in front of a corrupt entry,
then raises the ``CorruptRecordError`` (its ``offset`` names the entry, ``topic`` and
``partition`` the partition, ``next_offset`` where a fetch reads on past it); with nothing good
in front of it, or for a broker error, iteration raises at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kclient.protocol.compression import DEFAULT_MAX_DECOMPRESSED
from kclient.protocol.errors import BrokerResponseError, CorruptRecordError, KafkaError
from kclient.protocol.records.control import committed_entries
from kclient.protocol.records.reader import (
    EntrySpan,
    check_crcs,
    decode_entries,
    entry_next_offset,
    in_place,
    scan_entries,
)
from kclient.protocol.varint import Buffer

from .columns import MessageColumns, message_columns
from .messages import MessageAndOffset, messages_from_columns

__all__ = ["ByteBufferMessageSet", "MessageSet", "resume_offset"]


class ByteBufferMessageSet:
    """The messages of one partition from one fetch; iterate it for MessageAndOffset objects.

    Attributes: ``topic``, ``partition``, ``fetch_offset`` (the offset asked for),
    ``high_watermark``, ``last_stable_offset``, ``log_start_offset`` (-1 when the broker's
    Fetch version lacks them), ``buffer`` (the raw bytes: ``bytes`` as given, else a read-only
    ``memoryview``, e.g. of the Fetch answer's frame, decoded in place, not copied),
    ``entries`` (the complete entries),
    ``valid_bytes``, ``size_in_bytes``, ``incomplete_size`` (how big the partial trailing entry
    is, when its header arrived), ``next_offset`` (where the next fetch continues) and
    ``error`` (an exception, or None).

    ``read_committed`` (isolation.level): entries at or past the last stable offset are left
    out, and ``visible`` (the entries decoded) also leaves out the batches of the
    ``aborted_transactions`` (``(producer_id, first_offset)`` pairs the broker listed);
    transaction markers are never delivered, but ``next_offset`` moves past them.
    """

    __slots__ = (
        "topic",
        "partition",
        "fetch_offset",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "buffer",
        "entries",
        "valid_bytes",
        "incomplete_size",
        "truncated",
        "next_offset",
        "error",
        "max_decompressed",
        "visible",
        "__weakref__",
    )

    def __init__(
        self,
        buffer: Buffer | None = b"",
        fetch_offset: int = 0,
        *,
        topic: str | None = None,
        partition: int | None = None,
        high_watermark: int = -1,
        last_stable_offset: int = -1,
        log_start_offset: int = -1,
        error: BaseException | None = None,
        validate_crc: bool = True,
        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
        read_committed: bool = False,
        aborted_transactions: Iterable[tuple[int, int]] | None = None,
    ) -> None:
        buf = in_place(buffer)
        self.topic, self.partition = topic, partition
        self.fetch_offset = fetch_offset
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        self.buffer = buf
        self.max_decompressed = max_decompressed
        scan = scan_entries(buf)
        spans: list[EntrySpan] = scan.entries
        problem: CorruptRecordError | None = scan.error
        if validate_crc and spans:
            good, crc_error = check_crcs(buf, spans)
            if crc_error is not None:
                spans, problem = spans[:good], crc_error
        if (
            read_committed
            and last_stable_offset >= 0
            and spans
            and spans[-1].offset >= last_stable_offset
        ):
            spans = [e for e in spans if e.offset < last_stable_offset]  # not stable yet
            scan = scan._replace(incomplete_size=None, truncated=False)
            buf = buf[: spans[-1].position + spans[-1].size] if spans else b""
            self.buffer = buf
        self.entries = spans
        self.visible = (
            committed_entries(buf, spans, aborted_transactions or ()) if read_committed else spans
        )
        self.valid_bytes = spans[-1].position + spans[-1].size if spans else 0
        self.incomplete_size = scan.incomplete_size if problem is None else None
        self.truncated = scan.truncated and problem is None
        self.next_offset = (
            max(fetch_offset, entry_next_offset(buf, spans[-1])) if spans else fetch_offset
        )
        if problem is not None and error is None:
            bad = CorruptRecordError(f"{self.context}: {problem.context}", offset=problem.offset)
            self.name_corrupt(bad)
            error = bad
        self.error = error

    def offset_after(self, error: CorruptRecordError) -> int:
        """Where to fetch next to read past the corrupt entry ``error`` names (always beyond
        ``fetch_offset``): see :func:`resume_offset`."""
        return resume_offset(self.buffer, self.fetch_offset, error.offset)

    def name_corrupt(self, error: CorruptRecordError) -> CorruptRecordError:
        """Fill in ``error``'s topic, partition and ``next_offset`` (where to fetch next)."""
        if self.topic is not None and self.partition is not None:
            error.topic, error.partition = self.topic, self.partition
        error.next_offset = self.offset_after(error)
        return error

    @property
    def context(self) -> str:
        """``topic-partition`` (what errors say they are about)."""
        if self.topic is None:
            return "message set"
        return f"{self.topic}-{self.partition}"

    @property
    def size_in_bytes(self) -> int:
        """Bytes received, a partial trailing entry included."""
        return len(self.buffer)

    @property
    def has_error(self) -> bool:
        return self.error is not None

    @property
    def error_code(self) -> int:
        """The Kafka error code of ``error`` (0 without error, -1 for a non-broker error)."""
        err = self.error
        if err is None:
            return 0
        return err.errno if isinstance(err, BrokerResponseError) else -1

    def raise_error(self) -> None:
        """Raise ``error`` if there is one."""
        if self.error is not None:
            raise self.error

    def __iter__(self) -> Iterator[MessageAndOffset]:
        """Yield every message at or after ``fetch_offset``; raise ``error`` at the end."""
        if self.error is not None and not self.entries:
            raise self.error
        return decode_entries(
            self.buffer,
            self.visible,
            messages_from_columns,
            start_offset=self.fetch_offset,
            validate_crc=False,
            max_decompressed=self.max_decompressed,
            error=self.error,
            context=self.context,
        )

    iterator = __iter__

    def columns(self, end_offset: int | None = None) -> MessageColumns:
        """The messages as columns (see :func:`~kclient.core.columns.message_columns`)."""
        return message_columns(self, end_offset)

    def messages(self) -> list[MessageAndOffset]:
        """All messages as a list (raises like iteration does)."""
        return list(self)

    def __repr__(self) -> str:
        err = f", error={self.error!r}" if self.error is not None else ""
        return (
            f"ByteBufferMessageSet({self.context}, fetch_offset={self.fetch_offset}, "
            f"entries={len(self.entries)}, valid_bytes={self.valid_bytes}, "
            f"size={len(self.buffer)}, next_offset={self.next_offset}, "
            f"high_watermark={self.high_watermark}{err})"
        )


#: The shorter name.
MessageSet = ByteBufferMessageSet

#: The most offsets a v2 batch header may claim before resume_offset stops trusting it.
_MAX_BATCH_SPAN = 1 << 20


def resume_offset(buf: Buffer, fetch_offset: int, bad_offset: int | None) -> int:
    """The offset just past the corrupt entry at ``bad_offset`` in a fetched ``buf``.

    The next complete v2 batch's base offset when one follows it in the buffer; else the
    corrupt batch's own ``baseOffset + lastOffsetDelta + 1`` when that is plausible; else one
    past it.  Never at or below ``fetch_offset`` (so a reader always makes progress).
    """
    floor = max(fetch_offset, bad_offset if bad_offset is not None else fetch_offset) + 1
    if bad_offset is None:
        return floor
    spans = scan_entries(buf).entries
    for i, span in enumerate(spans):
        if span.offset != bad_offset:
            continue
        if span.magic != 2:
            return floor  # a v0/v1 entry's offset is its last one
        if i + 1 < len(spans) and spans[i + 1].magic == 2 and spans[i + 1].offset > bad_offset:
            return max(floor, spans[i + 1].offset)
        end = entry_next_offset(buf, span)
        if bad_offset < end <= bad_offset + _MAX_BATCH_SPAN:
            return max(floor, end)
        break
    return floor


def error_set(
    topic: str, partition: int, fetch_offset: int, error: KafkaError, high_watermark: int = -1
) -> ByteBufferMessageSet:
    """An empty message set that carries only ``error``."""
    return ByteBufferMessageSet(
        b"",
        fetch_offset,
        topic=topic,
        partition=partition,
        high_watermark=high_watermark,
        error=error,
    )
