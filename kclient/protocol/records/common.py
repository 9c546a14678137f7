"""Constants and value types shared by the record-format codecs (message format v0, v1, v2).

Every log entry, whatever its format, starts with ``offset: int64`` and ``size: int32`` (the
12-byte log overhead) and has its magic byte at position 16; that is what lets one reader walk a
buffer of mixed formats.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from typing import Any, NamedTuple

from kclient.protocol.errors import CorruptRecordError

#: offset (int64) + size (int32) in front of every entry.
LOG_OVERHEAD = 12
#: Position of the magic byte from the start of any entry.
MAGIC_OFFSET = 16
#: Smallest v0 / v1 message (crc, magic, attributes, [timestamp], key length, value length).
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
#: Size of a v2 record batch header (baseOffset .. recordsCount).
BATCH_HEADER_SIZE = 61
#: Smallest ``size`` field of a v2 batch (its header minus the log overhead).
BATCH_OVERHEAD_V2 = BATCH_HEADER_SIZE - LOG_OVERHEAD
#: Bytes after the batch's size field that are not covered by the v2 CRC (leader epoch, magic, crc).
V2_CRC_START = 21

MIN_ENTRY_SIZE = {0: RECORD_OVERHEAD_V0, 1: RECORD_OVERHEAD_V1, 2: BATCH_OVERHEAD_V2}

NO_TIMESTAMP = -1
NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1
TIMESTAMP_TYPE_NAMES = {
    NO_TIMESTAMP_TYPE: "NoTimestampType",
    CREATE_TIME: "CreateTime",
    LOG_APPEND_TIME: "LogAppendTime",
}

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

Header = tuple[str, bytes | None]
#: Builds the records of one decoded entry from its columns (see :func:`make_records`).
RecordFactory = Callable[..., Iterable[Any]]


class Record:
    """One record as a consumer sees it (offset absolute, timestamp resolved).

    A ``__slots__`` class rather than a NamedTuple: it is cheaper to create and to read in the
    decode hot loop.  It still unpacks like a tuple (``offset, ts, ts_type, key, value, headers
    = rec``) and compares by value.  ``headers`` is a list of ``(str, bytes | None)`` pairs,
    created on first access when the record has none.
    """

    __slots__ = ("offset", "timestamp", "timestamp_type", "key", "value", "_headers")

    def __init__(
        self,
        offset: int,
        timestamp: int = NO_TIMESTAMP,
        timestamp_type: int = NO_TIMESTAMP_TYPE,
        key: bytes | None = None,
        value: bytes | None = None,
        headers: list[Header] | None = None,
    ) -> None:
        """Build a record; ``headers`` None means no headers."""
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self._headers = headers

    @property
    def headers(self) -> list[Header]:
        """The record's headers as a list of ``(key, value)`` pairs (empty list if none)."""
        h = self._headers
        if h is None:
            h = self._headers = []
        return h

    def as_tuple(self) -> tuple[int, int, int, bytes | None, bytes | None, list[Header]]:
        """``(offset, timestamp, timestamp_type, key, value, headers)``."""
        return (
            self.offset,
            self.timestamp,
            self.timestamp_type,
            self.key,
            self.value,
            self.headers,
        )

    def replace(self, **changes: Any) -> Record:
        """A copy with some fields changed (like ``NamedTuple._replace``)."""
        fields: dict[str, Any] = dict(
            zip(
                ("offset", "timestamp", "timestamp_type", "key", "value", "headers"),
                self.as_tuple(),
            )
        )
        fields.update(changes)
        return Record(**fields)

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the fields, so records unpack like tuples."""
        return iter(self.as_tuple())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return self.as_tuple() == other.as_tuple()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(
            (
                self.offset,
                self.timestamp,
                self.timestamp_type,
                self.key,
                self.value,
                tuple(self.headers),
            )
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (Record, self.as_tuple())

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, "
            f"timestamp_type={self.timestamp_type}, key={self.key!r}, value={self.value!r}, "
            f"headers={self.headers!r})"
        )


class BatchInfo(NamedTuple):
    """What a record's log entry says about it (shared by all records of one entry)."""

    magic: int
    codec: int = 0
    is_transactional: bool = False
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH


#: One shared info per (magic, codec) of the old formats, which carry no producer fields.
LEGACY_INFO = {(m, c): BatchInfo(m, c) for m in (0, 1) for c in range(8)}


def make_records(
    offsets: Iterable[int],
    timestamps: Iterable[int],
    timestamp_types: Iterable[int],
    keys: Iterable[bytes | None] | None,
    values: list[bytes | None],
    headers: Iterable[list[Header] | None] | None,
    infos: Iterable[BatchInfo],
) -> Iterator[Record]:
    """The default record factory of the decoders: the records of one decoded entry, as
    :class:`Record` objects created while the caller iterates.

    Every decoder hands an entry's records to a factory column by column, and the factory
    builds whatever the caller wants (``kclient.simple`` builds its messages in C with
    ``map(cls, zip(...))``).  ``values`` is a list whose length is the record count; the other
    columns are iterables at least that long (``itertools.repeat`` for what the whole entry
    shares); ``keys`` / ``headers`` are None when no record has one, else hold None or the
    key / the header list per record.  ``infos`` is not kept in a Record.
    """
    return _records(
        offsets,
        timestamps,
        timestamp_types,
        repeat(None) if keys is None else keys,
        values,
        repeat(None) if headers is None else headers,
    )


def _records(
    offsets: Iterable[int],
    timestamps: Iterable[int],
    timestamp_types: Iterable[int],
    keys: Iterable[bytes | None],
    values: list[bytes | None],
    headers: Iterable[list[Header] | None],
) -> Iterator[Record]:
    new = object.__new__
    for offset, timestamp, timestamp_type, key, value, hs in zip(
        offsets, timestamps, timestamp_types, keys, values, headers
    ):
        rec = new(Record)
        rec.offset = offset
        rec.timestamp = timestamp
        rec.timestamp_type = timestamp_type
        rec.key = key
        rec.value = value
        rec._headers = hs
        yield rec


class Batch:
    """One log entry (a v2 batch, or a v0/v1 message or compressed wrapper) and its records.

    ``position`` and ``size`` locate the whole entry (log overhead included) in the buffer it was
    read from.  Fields a format lacks hold Kafka's "none" values (-1).
    """

    __slots__ = (
        "magic",
        "position",
        "size",
        "base_offset",
        "last_offset",
        "codec",
        "timestamp_type",
        "is_transactional",
        "is_control",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "partition_leader_epoch",
        "first_timestamp",
        "max_timestamp",
        "record_count",
        "crc",
        "records",
    )

    def __init__(
        self,
        *,
        magic: int = 2,
        position: int = 0,
        size: int = 0,
        base_offset: int = 0,
        last_offset: int = 0,
        codec: int = 0,
        timestamp_type: int = CREATE_TIME,
        is_transactional: bool = False,
        is_control: bool = False,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        first_timestamp: int = NO_TIMESTAMP,
        max_timestamp: int = NO_TIMESTAMP,
        record_count: int = 0,
        crc: int = 0,
        records: list[Record] | None = None,
    ) -> None:
        """Set every field (defaults: Kafka's "none" values)."""
        self.magic = magic
        self.position = position
        self.size = size
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.codec = codec
        self.timestamp_type = timestamp_type
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.partition_leader_epoch = partition_leader_epoch
        self.first_timestamp = first_timestamp
        self.max_timestamp = max_timestamp
        self.record_count = record_count
        self.crc = crc
        self.records = [] if records is None else records

    @property
    def next_offset(self) -> int:
        """The offset following this entry's last one."""
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        """Sequence number of the last record (-1 without idempotence)."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset - self.base_offset) & 0x7FFFFFFF

    def __iter__(self) -> Iterator[Record]:
        """Iterate over the entry's records."""
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return (
            f"Batch(magic={self.magic}, position={self.position}, size={self.size}, "
            f"offsets={self.base_offset}..{self.last_offset}, codec={self.codec}, "
            f"records={self.record_count}, control={self.is_control})"
        )


def corrupt(offset: int | None, message: str) -> CorruptRecordError:
    """Build the CorruptRecordError for the entry at ``offset`` (caller raises it)."""
    return CorruptRecordError(message, offset=offset)


__all__ = [
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "RECORD_OVERHEAD_V0",
    "RECORD_OVERHEAD_V1",
    "BATCH_HEADER_SIZE",
    "BATCH_OVERHEAD_V2",
    "V2_CRC_START",
    "MIN_ENTRY_SIZE",
    "NO_TIMESTAMP",
    "NO_TIMESTAMP_TYPE",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "TIMESTAMP_TYPE_NAMES",
    "CODEC_MASK",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK",
    "CONTROL_MASK",
    "NO_PRODUCER_ID",
    "NO_PRODUCER_EPOCH",
    "NO_SEQUENCE",
    "NO_PARTITION_LEADER_EPOCH",
    "Header",
    "Record",
    "RecordFactory",
    "BatchInfo",
    "LEGACY_INFO",
    "make_records",
    "Batch",
    "corrupt",
]
