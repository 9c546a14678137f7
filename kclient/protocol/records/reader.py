"""Read a records buffer (a Fetch response's ``records`` field, a log segment slice, a Produce
request's payload) entry by entry, whatever mix of message formats it holds.

Every entry starts with ``offset int64, size int32`` and has its magic byte at position 16, so the
walk needs no format knowledge beyond that; each complete entry is then decoded by the v0/v1 or
v2 codec.  A partial entry at the end (normal: fetches cut through entries) stops the walk
cleanly; :attr:`RecordsReader.valid_bytes` and :attr:`RecordsReader.incomplete_size` tell a
consumer what was usable and how large the first incomplete entry is.  A bad CRC or an
inconsistent entry raises CorruptRecordError naming the entry's offset, after the entries in
front of it have been delivered.
"""
from __future__ import annotations

import struct
from functools import partial
from itertools import chain
from typing import Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

from kclient.protocol.compression import DEFAULT_MAX_DECOMPRESSED
from kclient.protocol.errors import CorruptRecordError
from kclient.protocol.records import legacy, v2
from kclient.protocol.records.common import (
    LOG_OVERHEAD, MAGIC_OFFSET, MIN_ENTRY_SIZE, RECORD_OVERHEAD_V0, Batch, Record, corrupt,
)

Buffer = Union[bytes, bytearray, memoryview]
_LOG_HEAD = struct.Struct(">qi")
_new = tuple.__new__


class EntrySpan(NamedTuple):
    """Where one complete entry sits in a buffer."""

    position: int
    size: int        # whole entry, log overhead included
    magic: int
    offset: int      # the entry's offset field (v2: baseOffset; v0/v1 wrapper: last offset)


class Scan(NamedTuple):
    """Result of walking entry headers: the complete entries and what stopped the walk."""

    entries: List[EntrySpan]
    valid_bytes: int                 # bytes covered by the complete entries
    incomplete_size: Optional[int]   # total size the trailing partial entry needs, if known
    truncated: bool                  # trailing bytes that are not a complete entry
    error: Optional[CorruptRecordError]


def as_bytes(buf: Buffer) -> bytes:
    """The buffer as ``bytes`` (one copy for bytearray / memoryview input)."""
    return buf if isinstance(buf, bytes) else bytes(buf)


def scan_entries(buf: Buffer) -> Scan:
    """Walk entry headers only (offset, size, magic) without decoding or checking CRCs.

    Stops at a partial trailing entry (``truncated``) or at an entry whose size or magic is
    impossible (``error``, a CorruptRecordError naming its offset, not raised here).
    """
    entries: List[EntrySpan] = []
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
            return Scan(entries, pos, None, False,
                        corrupt(offset, f"entry size {size} too small for magic {magic}"))
        entries.append(_new(EntrySpan, (pos, total, magic, offset)))
        pos += total
    return Scan(entries, pos, None, False, None)


def read_entry(buf: bytes, span: EntrySpan, *, validate_crc: bool = True,
               max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> Batch:
    """Decode one complete entry found by :func:`scan_entries`."""
    if span.magic == 2:
        return v2.read_batch(buf, span.position, span.size - LOG_OVERHEAD,
                             validate_crc=validate_crc, max_decompressed=max_decompressed)
    return legacy.read_message(buf, span.position, span.size - LOG_OVERHEAD,
                               validate_crc=validate_crc, max_decompressed=max_decompressed)


class RecordsReader:
    """Iterate the batches or records of a records buffer (bytes, bytearray or memoryview).

    ``valid_bytes`` / ``incomplete_size`` / ``truncated`` are known right after construction
    (only entry headers are walked then); decoding happens while iterating.
    """

    def __init__(self, buf: Buffer, *, validate_crc: bool = True,
                 max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> None:
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

    def records(self, *, skip_control: bool = True, start_offset: Optional[int] = None
                ) -> Iterator[Record]:
        """Yield every record of every entry, in order.

        ``skip_control`` hides transaction markers (control batches) as Kafka consumers do;
        ``start_offset`` drops records below it (v0 wrappers can start before the fetch offset).
        v2 records are streamed, so records the caller drops are freed at once.
        """
        streams = map(partial(self._entry_records, skip_control, start_offset), self.entries)
        return chain.from_iterable(chain(streams, self._raise_error()))

    def _raise_error(self) -> Iterator[list]:
        """Raise the scan error (if any) once every entry before it has been delivered."""
        if self.error is not None:
            raise self.error
        return
        yield  # pragma: no cover - makes this a generator

    def _entry_records(self, skip_control: bool, start_offset: Optional[int],
                       span: EntrySpan) -> Iterable[Record]:
        """One entry's records (see :meth:`records`): a stream for v2, a list for v0/v1."""
        pos, size, magic, _ = span
        buf = self.buffer
        if magic == 2:
            records = v2.open_batch(buf, pos, size - LOG_OVERHEAD, self.validate_crc,
                                    self.max_decompressed, skip_control)
            first = span[3]
        else:
            msg = legacy.parse_message(buf, pos, size - LOG_OVERHEAD, self.validate_crc)
            if not msg[2] & 0x07:
                return (legacy.plain_record(msg),)
            records = legacy.wrapper_records(msg, self.max_decompressed, self.validate_crc)
            first = records[0].offset
        if start_offset is not None and first < start_offset:
            return [r for r in records if r.offset >= start_offset]
        return records

    def __iter__(self) -> Iterator[Record]:
        """Same as :meth:`records` with its defaults."""
        return self.records()


def iter_batches(buf: Buffer, *, validate_crc: bool = True,
                 max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> Iterator[Batch]:
    """Yield the decoded entries of ``buf``; a partial trailing entry is silently skipped."""
    return RecordsReader(buf, validate_crc=validate_crc,
                         max_decompressed=max_decompressed).batches()


def iter_records(buf: Buffer, *, validate_crc: bool = True, skip_control: bool = True,
                 start_offset: Optional[int] = None,
                 max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> Iterator[Record]:
    """Yield the records of ``buf`` across entries; a partial trailing entry is skipped."""
    reader = RecordsReader(buf, validate_crc=validate_crc, max_decompressed=max_decompressed)
    return reader.records(skip_control=skip_control, start_offset=start_offset)


def read_records(buf: Buffer, **options) -> Tuple[List[Record], int, Optional[int]]:
    """Decode all complete entries: ``(records, valid_bytes, incomplete_size)``."""
    reader = RecordsReader(buf, **{k: v for k, v in options.items()
                                   if k in ("validate_crc", "max_decompressed")})
    records = list(reader.records(**{k: v for k, v in options.items()
                                     if k in ("skip_control", "start_offset")}))
    return records, reader.valid_bytes, reader.incomplete_size


__all__ = ["EntrySpan", "Scan", "as_bytes", "scan_entries", "read_entry", "RecordsReader",
           "iter_batches", "iter_records", "read_records"]
