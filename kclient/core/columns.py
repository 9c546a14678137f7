"""A fetch's messages as columns: the columnar read path (no Python object per message).

:func:`message_columns` decodes a :class:`~kclient.core.message_set.ByteBufferMessageSet`
into one list per field (offsets, timestamps, timestamp types, keys, values, headers), extended
entry by entry straight from the record decoder's columns, so the cost per message is a few list
appends done in C.  Columnar consumers (Arrow, the Spark reader, NumPy) build their arrays from
these lists; ``SimpleConsumer.fetch_columns`` is the call that fetches and decodes this way.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any, Protocol

from kclient.protocol.error_codes import CorruptRecordError
from kclient.protocol.records.reader import EntrySpan, decode_entries
from kclient.protocol.records.v2 import plain_columns
from kclient.protocol.varint import Buffer

__all__ = ["MessageColumns", "message_columns", "plain_message_columns"]

_new = object.__new__

#: One decoded log entry as the factory hands it over (see ``_entry_columns``).
_EntryColumns = tuple[Any, Any, Any, Any, list[Any], Any]
Header = tuple[str, "bytes | None"]


class FetchedSet(Protocol):
    """What :func:`message_columns` reads of a ByteBufferMessageSet."""

    topic: str | None
    partition: int | None
    fetch_offset: int
    high_watermark: int
    log_start_offset: int
    buffer: Buffer
    next_offset: int
    error: BaseException | None
    max_decompressed: int

    @property
    def entries(self) -> Sequence[EntrySpan]: ...

    @property
    def visible(self) -> Sequence[EntrySpan]: ...

    @property
    def context(self) -> str: ...


class MessageColumns:
    """The messages of one partition from one fetch, column by column.

    ``offsets``, ``timestamps`` (ms; -1 for message format v0), ``timestamp_types`` (0 create,
    1 log append, -1 none) and ``values`` (bytes or None) have one item per message; ``keys`` is
    None (no message has a key; the decoder may also give a list of None then) or one
    ``bytes | None`` per message; ``headers`` is None when no message has headers, else one
    list of ``(str, bytes | None)`` pairs (or None) per message.  ``next_offset`` is where the
    next fetch continues (past control batches and compacted gaps too); ``high_watermark`` /
    ``log_start_offset`` are the broker's (-1 if its Fetch version lacks them); ``error`` is a
    corrupt entry met after the delivered messages.
    """

    __slots__ = (
        "topic",
        "partition",
        "fetch_offset",
        "offsets",
        "timestamps",
        "timestamp_types",
        "keys",
        "values",
        "headers",
        "next_offset",
        "high_watermark",
        "log_start_offset",
        "error",
    )

    def __init__(self, topic: str | None, partition: int | None, fetch_offset: int) -> None:
        self.topic, self.partition, self.fetch_offset = topic, partition, fetch_offset
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.keys: list[bytes | None] | None = None
        self.values: list[bytes | None] = []
        self.headers: list[list[Header] | None] | None = None
        self.next_offset = fetch_offset
        self.high_watermark = -1
        self.log_start_offset = -1
        self.error: BaseException | None = None

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return (
            f"MessageColumns({self.topic}-{self.partition}, fetch_offset={self.fetch_offset},"
            f" messages={len(self)}, next_offset={self.next_offset})"
        )

    def _add(self, entry: _EntryColumns) -> None:
        """Append one decoded entry's columns."""
        offsets, stamps, types, keys, values, headers = entry
        n, before = len(values), len(self.values)
        self.offsets.extend(offsets)
        self.timestamps.extend(islice(stamps, n))
        self.timestamp_types.extend(islice(types, n))
        self.values.extend(values)
        if keys is not None:
            if self.keys is None:
                self.keys = [None] * before
            self.keys.extend(islice(keys, n))
        elif self.keys is not None:
            self.keys.extend([None] * n)
        if headers is not None:
            if self.headers is None:
                self.headers = [None] * before
            self.headers.extend(islice(headers, n))
        elif self.headers is not None:
            self.headers.extend([None] * n)

    def truncate(self, end_offset: int) -> None:
        """Drop the messages at or after ``end_offset`` (next_offset becomes ``end_offset``)."""
        if self.offsets and self.offsets[-1] >= end_offset:
            k = bisect_left(self.offsets, end_offset)
            for column in (
                self.offsets,
                self.timestamps,
                self.timestamp_types,
                self.values,
                self.keys,
                self.headers,
            ):
                if column is not None:
                    del column[k:]
        self.next_offset = min(self.next_offset, end_offset)


def _entry_columns(
    offsets: Iterable[int],
    timestamps: Iterable[int],
    timestamp_types: Iterable[int],
    keys: Iterable[bytes | None] | None,
    values: list[bytes | None],
    headers: Iterable[list[Header] | None] | None,
    infos: Iterable[Any],
) -> tuple[_EntryColumns]:
    """Record factory for ``decode_entries``: hands one entry's columns over unchanged."""
    return ((offsets, timestamps, timestamp_types, keys, values, headers),)


def plain_message_columns(
    topic: str | None,
    partition: int | None,
    fetch_offset: int,
    plain: tuple[list[int], list[int], list[int], Any, list[Any], Any],
    next_offset: int,
    high_watermark: int,
    log_start_offset: int,
) -> MessageColumns:
    """The columns of a fetch that :func:`~kclient.protocol.records.v2.plain_columns` decoded
    (``plain``), set straight into their slots (no empty lists made first to be replaced)."""
    cols: MessageColumns = _new(MessageColumns)
    cols.topic, cols.partition, cols.fetch_offset = topic, partition, fetch_offset
    (
        cols.offsets,
        cols.timestamps,
        cols.timestamp_types,
        cols.keys,
        cols.values,
        cols.headers,
    ) = plain
    cols.next_offset = next_offset
    cols.high_watermark, cols.log_start_offset = high_watermark, log_start_offset
    cols.error = None
    return cols


def message_columns(ms: FetchedSet, end_offset: int | None = None) -> MessageColumns:
    """Decode ``ms`` into columns: messages at or after its fetch offset, below ``end_offset``.

    Raises the set's error when it delivered nothing (offset out of range, not the leader, a
    corrupt first entry); a corrupt entry after good ones is kept in ``error`` instead, so the
    good messages in front of it are delivered first (the next fetch from ``next_offset``
    raises it).
    """
    if ms.error is not None and not ms.entries:
        raise ms.error
    plain = plain_columns(ms.buffer, ms.visible, ms.fetch_offset) if ms.error is None else None
    if plain is not None:  # the common answer: no entry the generic decoder must look at
        cols = plain_message_columns(
            ms.topic,
            ms.partition,
            ms.fetch_offset,
            plain,
            ms.next_offset,
            ms.high_watermark,
            ms.log_start_offset,
        )
        if end_offset is not None:
            cols.truncate(end_offset)
        return cols
    cols = MessageColumns(ms.topic, ms.partition, ms.fetch_offset)
    cols.high_watermark, cols.log_start_offset = ms.high_watermark, ms.log_start_offset
    entries = decode_entries(
        ms.buffer,
        ms.visible,
        _entry_columns,
        start_offset=ms.fetch_offset,
        validate_crc=False,
        max_decompressed=ms.max_decompressed,
        context=ms.context,
    )
    try:
        for entry in entries:
            cols._add(entry)
    except CorruptRecordError as exc:  # an entry that passed its CRC but does not decode
        if not cols.values:
            raise
        cols.error = exc
        cols.next_offset = cols.offsets[-1] + 1
    else:
        cols.next_offset = ms.next_offset
        cols.error = ms.error
    if end_offset is not None:
        cols.truncate(end_offset)
    return cols
