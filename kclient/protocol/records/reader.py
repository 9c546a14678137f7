"""Read a records buffer (a Fetch response's ``records`` field, a log segment slice, a Produce
request's payload) entry by entry, whatever mix of message formats it holds.

Every entry starts with ``offset int64, size int32`` and has its magic byte at position 16, so the
walk needs no format knowledge beyond that; each complete entry is then decoded by the v0/v1 or
v2 codec.  A partial entry at the end (normal: fetches cut through entries) stops the walk
cleanly; :attr:`RecordsReader.valid_bytes` and :attr:`RecordsReader.incomplete_size` tell a
consumer what was usable and how large the first incomplete entry is.  A bad CRC or an
inconsistent entry raises CorruptRecordError naming the entry's offset, after the entries in
front of it have been delivered.

:func:`decode_entries` is the one decoding loop: it hands each entry's records to a *factory*
column by column (:func:`~kclient.protocol.records.common.make_records` builds
:class:`Record` objects; ``kclient.simple`` passes its own to build its message tuples).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, NamedTuple

from kclient.protocol.compression import DEFAULT_MAX_DECOMPRESSED
from kclient.protocol.errors import CorruptRecordError, ProtocolDecodeError
from kclient.protocol.records import legacy, v2
from kclient.protocol.records.common import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MIN_ENTRY_SIZE,
    RECORD_OVERHEAD_V0,
    Batch,
    Record,
    RecordFactory,
    corrupt,
    make_records,
)
from kclient.protocol.varint import Buffer

_LOG_HEAD = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_new = tuple.__new__
#: What a malformed entry can raise while it is decoded (turned into CorruptRecordError).
_MALFORMED = (IndexError, struct.error, ProtocolDecodeError)


class EntrySpan(NamedTuple):
    """Where one complete entry sits in a buffer."""

    position: int
    size: int  # whole entry, log overhead included
    magic: int
    offset: int  # the entry's offset field (v2: baseOffset; v0/v1 wrapper: last offset)


class Scan(NamedTuple):
    """Result of walking entry headers: the complete entries and what stopped the walk."""

    entries: list[EntrySpan]
    valid_bytes: int  # bytes covered by the complete entries
    incomplete_size: int | None  # total size the trailing partial entry needs, if known
    truncated: bool  # trailing bytes that are not a complete entry
    error: CorruptRecordError | None


def as_bytes(buf: Buffer) -> bytes:
    """The buffer as ``bytes`` (one copy for bytearray / memoryview input)."""
    return buf if isinstance(buf, bytes) else bytes(buf)


def in_place(buf: Buffer | None) -> Buffer:
    """The buffer to decode in place: ``bytes`` as they are, anything else as a read-only
    byte view of it, not a copy (a Fetch answer's records are a view of the frame they came
    in; the C record walker takes each value out of it once)."""
    if buf is None:
        return b""
    if isinstance(buf, bytes):
        return buf
    view = memoryview(buf)
    return (view if view.format == "B" else view.cast("B")).toreadonly()


def scan_entries(buf: Buffer) -> Scan:
    """Walk entry headers only (offset, size, magic) without decoding or checking CRCs.

    Stops at a partial trailing entry (``truncated``) or at an entry whose size or magic is
    impossible (``error``, a CorruptRecordError naming its offset, not raised here).
    """
    entries: list[EntrySpan] = []
    pos, end = 0, len(buf)
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            return Scan(entries, pos, None, True, None)
        offset, size = _LOG_HEAD.unpack_from(buf, pos)
        if size < RECORD_OVERHEAD_V0:
            return Scan(entries, pos, None, False, corrupt(offset, f"invalid entry size {size}"))
        total = LOG_OVERHEAD + size
        if pos + total > end:
            return Scan(entries, pos, total, True, None)
        magic = buf[pos + MAGIC_OFFSET]
        if magic not in MIN_ENTRY_SIZE:
            return Scan(entries, pos, None, False, corrupt(offset, f"unknown magic byte {magic}"))
        if size < MIN_ENTRY_SIZE[magic]:
            return Scan(
                entries,
                pos,
                None,
                False,
                corrupt(offset, f"entry size {size} too small for magic {magic}"),
            )
        entries.append(_new(EntrySpan, (pos, total, magic, offset)))
        pos += total
    return _new(Scan, (entries, pos, None, False, None))  # Scan(...), without its __new__


def check_crcs(buf: Buffer, spans: Sequence[EntrySpan]) -> tuple[int, CorruptRecordError | None]:
    """Check every entry's CRC; ``(number of good entries before the first bad one, error)``."""
    for i, (pos, total, magic, offset) in enumerate(spans):
        codec = v2 if magic == 2 else legacy
        try:
            codec.check_crc(
                buf,
                pos,
                total - LOG_OVERHEAD,
                codec.STORED_CRC.unpack_from(buf, pos + codec.CRC_OFFSET)[0],
                offset,
            )
        except CorruptRecordError as exc:
            return i, exc
    return len(spans), None


def entry_next_offset(buf: Buffer, span: EntrySpan) -> int:
    """The offset after an entry's last record (v2: base + lastOffsetDelta + 1)."""
    if span.magic == 2:
        last_delta: int = _LAST_DELTA.unpack_from(buf, span.position + 23)[0]
        return span.offset + last_delta + 1
    return span.offset + 1


def next_fetch_offset(buf: Buffer) -> int:
    """Where a fetch continues after the complete entries of ``buf``, from their headers alone
    (no CRC checked, nothing decoded); -1 when it has none or a header is impossible."""
    scan = scan_entries(buf)
    if scan.error is not None or not scan.entries:
        return -1
    return entry_next_offset(buf, scan.entries[-1])


def decode_entries(
    buf: Buffer,
    spans: Sequence[EntrySpan],
    factory: RecordFactory = make_records,
    *,
    start_offset: int | None = None,
    skip_control: bool = True,
    validate_crc: bool = True,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    error: BaseException | None = None,
    context: str | None = None,
) -> Iterator[Any]:
    """Lazily decode complete entries (found by :func:`scan_entries`) into the records
    ``factory`` builds, in order.

    ``skip_control`` hides transaction markers (control batches) as Kafka consumers do;
    ``start_offset`` drops records below it (v2 batches and v0/v1 wrappers can start before the
    fetch offset).  A malformed entry raises CorruptRecordError naming its offset (its text
    prefixed with ``context``, when given), after every record in front of it; ``error``, if
    given, is raised after the last record.
    """
    return chain.from_iterable(
        _decode_all(
            buf,
            spans,
            factory,
            start_offset,
            skip_control,
            validate_crc,
            max_decompressed,
            error,
            context,
        )
    )


def _corrupt(exc: Exception, offset: int, context: str | None) -> CorruptRecordError:
    """``exc`` (raised decoding the entry at ``offset``) as the CorruptRecordError to raise."""
    prefix = f"{context}: " if context else ""
    if isinstance(exc, CorruptRecordError):
        return CorruptRecordError(prefix + exc.context, offset=exc.offset) if context else exc
    return CorruptRecordError(f"{prefix}malformed entry: {exc}", offset=offset)


def _decode_all(
    buf: Buffer,
    spans: Sequence[EntrySpan],
    factory: RecordFactory,
    start_offset: int | None,
    skip_control: bool,
    validate_crc: bool,
    max_decompressed: int,
    error: BaseException | None,
    context: str | None,
) -> Iterator[Iterable[Any]]:
    """Each v2 batch's records; each run of consecutive v0/v1 entries' records together."""
    i, n = 0, len(spans)
    while i < n:
        pos, total, magic, offset = spans[i]
        if magic == 2:
            try:
                records = v2.batch_records(
                    buf,
                    pos,
                    total - LOG_OVERHEAD,
                    factory,
                    start_offset,
                    skip_control,
                    validate_crc,
                    max_decompressed,
                )
            except (CorruptRecordError,) + _MALFORMED as exc:
                raise _corrupt(exc, offset, context) from None
            i += 1
            yield records
            continue
        rows: list[tuple[Any, ...]] = []
        failure = None
        while i < n and spans[i].magic != 2:
            pos, total, magic, offset = spans[i]
            entry = buf if type(buf) is bytes else bytes(buf[pos : pos + total])
            try:
                rows += legacy.message_rows(
                    entry,
                    pos if entry is buf else 0,
                    total - LOG_OVERHEAD,
                    validate_crc,
                    max_decompressed,
                    start_offset,
                )
            except (CorruptRecordError,) + _MALFORMED as exc:
                failure = _corrupt(exc, offset, context)
                break
            i += 1
        yield legacy.rows_records(rows, factory)
        if failure is not None:
            raise failure
    if error is not None:
        raise error


def read_entry(
    buf: bytes,
    span: EntrySpan,
    *,
    validate_crc: bool = True,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> Batch:
    """Decode one complete entry found by :func:`scan_entries`."""
    if span.magic == 2:
        return v2.read_batch(
            buf,
            span.position,
            span.size - LOG_OVERHEAD,
            validate_crc=validate_crc,
            max_decompressed=max_decompressed,
        )
    return legacy.read_message(
        buf,
        span.position,
        span.size - LOG_OVERHEAD,
        validate_crc=validate_crc,
        max_decompressed=max_decompressed,
    )


class RecordsReader:
    """Iterate the batches or records of a records buffer (bytes, bytearray or memoryview).

    ``valid_bytes`` / ``incomplete_size`` / ``truncated`` are known right after construction
    (only entry headers are walked then); decoding happens while iterating.
    """

    def __init__(
        self,
        buf: Buffer,
        *,
        validate_crc: bool = True,
        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    ) -> None:
        """Walk the entry headers of ``buf``; nothing is decoded yet."""
        self.buffer = as_bytes(buf)
        self.validate_crc = validate_crc
        self.max_decompressed = max_decompressed
        scan = scan_entries(self.buffer)
        self.entries = scan.entries
        self.valid_bytes = scan.valid_bytes
        self.incomplete_size = scan.incomplete_size
        self.truncated = scan.truncated
        self.error = scan.error

    def batches(self) -> Iterator[Batch]:
        """Yield each complete entry decoded as a Batch; raise the scan error, if any, last."""
        buf, crc, limit = self.buffer, self.validate_crc, self.max_decompressed
        for span in self.entries:
            yield read_entry(buf, span, validate_crc=crc, max_decompressed=limit)
        if self.error is not None:
            raise self.error

    def records(
        self, *, skip_control: bool = True, start_offset: int | None = None
    ) -> Iterator[Record]:
        """Yield every record of every entry, in order.

        ``skip_control`` hides transaction markers (control batches) as Kafka consumers do;
        ``start_offset`` drops records below it (v0 wrappers can start before the fetch offset).
        Records are built while the caller iterates, so those the caller drops are freed at once.
        """
        return decode_entries(
            self.buffer,
            self.entries,
            make_records,
            start_offset=start_offset,
            skip_control=skip_control,
            validate_crc=self.validate_crc,
            max_decompressed=self.max_decompressed,
            error=self.error,
        )

    def __iter__(self) -> Iterator[Record]:
        """Same as :meth:`records` with its defaults."""
        return self.records()


def iter_batches(
    buf: Buffer, *, validate_crc: bool = True, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
) -> Iterator[Batch]:
    """Yield the decoded entries of ``buf``; a partial trailing entry is silently skipped."""
    return RecordsReader(
        buf, validate_crc=validate_crc, max_decompressed=max_decompressed
    ).batches()


def iter_records(
    buf: Buffer,
    *,
    validate_crc: bool = True,
    skip_control: bool = True,
    start_offset: int | None = None,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> Iterator[Record]:
    """Yield the records of ``buf`` across entries; a partial trailing entry is skipped."""
    reader = RecordsReader(buf, validate_crc=validate_crc, max_decompressed=max_decompressed)
    return reader.records(skip_control=skip_control, start_offset=start_offset)


def read_records(buf: Buffer, **options: Any) -> tuple[list[Record], int, int | None]:
    """Decode all complete entries: ``(records, valid_bytes, incomplete_size)``."""
    reader = RecordsReader(
        buf, **{k: v for k, v in options.items() if k in ("validate_crc", "max_decompressed")}
    )
    records = list(
        reader.records(
            **{k: v for k, v in options.items() if k in ("skip_control", "start_offset")}
        )
    )
    return records, reader.valid_bytes, reader.incomplete_size


__all__ = [
    "EntrySpan",
    "Scan",
    "as_bytes",
    "in_place",
    "scan_entries",
    "check_crcs",
    "entry_next_offset",
    "next_fetch_offset",
    "decode_entries",
    "read_entry",
    "RecordsReader",
    "iter_batches",
    "iter_records",
    "read_records",
]
