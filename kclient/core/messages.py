"""The values a fetch hands out: :class:`Message` and :class:`MessageAndOffset`.

The classic API iterates a message set as ``MessageAndOffset(message, offset)`` with
``next_offset = offset + 1``; a :class:`Message` carries the key, the value (``payload``), the
timestamp and, from message format v2 on, headers.

Both are tuple subclasses with one shared layout, so a decoded record costs one allocation and the
fetch path can build them in C (``map(MessageAndOffset, zip(...))``)::

    (offset, key, value, timestamp, timestamp_type, headers, info)

``info`` is a :class:`BatchInfo` shared by every record of one log entry (magic, codec, producer
id, ...).  ``MessageAndOffset.message`` is the object itself: it *is* the message, seen with its
offset.  Neither class overrides ``__new__`` (that would put a Python call on the hot path):
``Message.create(key=..., value=...)`` and ``MessageAndOffset.create(message, offset)`` build
them by hand; calling the class takes the 7-field tuple.

Decoding is ``kclient.protocol.records``' (:func:`~kclient.protocol.records.decode_entries`):
it hands each log entry's records over column by column, and :func:`messages_from_columns`, the
factory this package gives it, zips the columns into MessageAndOffset tuples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, TypeVar

from kclient.protocol.records.common import (
    CREATE_TIME,
    LEGACY_INFO,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    BatchInfo,
    Header,
)
from kclient.protocol.records.common import (
    TIMESTAMP_TYPE_NAMES as _TS_NAMES,
)

__all__ = [
    "BatchInfo",
    "Message",
    "MessageAndOffset",
    "NO_TIMESTAMP",
    "NO_TIMESTAMP_TYPE",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "LEGACY_INFO",
    "messages_from_columns",
]

_CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_STANDALONE = BatchInfo(2)

_offset = property(itemgetter(0), doc="The message's offset in its partition (-1 if unknown).")
_key = property(itemgetter(1), doc="The key (bytes) or None.")
_value = property(itemgetter(2), doc="The value (bytes) or None (a tombstone).")
_timestamp = property(itemgetter(3), doc="Timestamp in ms (-1 for message format v0).")
_ts_type = property(itemgetter(4), doc="0 CreateTime, 1 LogAppendTime, -1 none (format v0).")
_info = property(itemgetter(6), doc="The :class:`BatchInfo` of the entry the message came in.")

_M = TypeVar("_M", bound="Message")


class Message(tuple[int, bytes | None, bytes | None, int, int, tuple[Header, ...], BatchInfo]):
    """A message: key, value (also ``payload``, its 0.8 name), timestamp, headers."""

    __slots__ = ()

    @classmethod
    def create(
        cls: type[_M],
        key: bytes | None = None,
        value: bytes | None = None,
        timestamp: int = NO_TIMESTAMP,
        timestamp_type: int = NO_TIMESTAMP_TYPE,
        headers: Iterable[Header] = (),
        offset: int = -1,
        info: BatchInfo = _STANDALONE,
    ) -> _M:
        """Build a message by hand (decoding builds them in bulk, without this call)."""
        return cls((offset, key, value, timestamp, timestamp_type, tuple(headers), info))

    if TYPE_CHECKING:  # what the itemgetter properties below return

        @property
        def key(self) -> bytes | None: ...
        @property
        def value(self) -> bytes | None: ...
        @property
        def payload(self) -> bytes | None: ...
        @property
        def timestamp(self) -> int: ...
        @property
        def timestamp_type(self) -> int: ...
        @property
        def info(self) -> BatchInfo: ...
    else:
        key = _key
        value = _value
        payload = _value
        timestamp = _timestamp
        timestamp_type = _ts_type
        info = _info

    @property
    def headers(self) -> list[tuple[str, bytes | None]]:
        """The record headers as ``(str, bytes | None)`` pairs (empty before format v2)."""
        return list(self[5])

    @property
    def has_key(self) -> bool:
        return self[1] is not None

    @property
    def magic(self) -> int:
        """The message format version it was stored in (0, 1 or 2)."""
        return self[6].magic

    @property
    def compression_codec(self) -> int:
        """The codec of the entry it arrived in (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
        return self[6].codec

    @property
    def timestamp_type_name(self) -> str:
        return _TS_NAMES.get(self[4], str(self[4]))

    @property
    def size(self) -> int:
        """Key plus value bytes."""
        return len(self[1] or b"") + len(self[2] or b"")

    def _fields_repr(self) -> str:
        ts = f", timestamp={self[3]}" if self[3] != NO_TIMESTAMP else ""
        hs = f", headers={list(self[5])!r}" if self[5] else ""
        codec = self[6].codec
        cs = f", codec={_CODEC_NAMES.get(codec, codec)}" if codec else ""
        return f"key={_short(self[1])}, value={_short(self[2])}{ts}{hs}{cs}"

    def __repr__(self) -> str:
        return f"Message({self._fields_repr()})"


class MessageAndOffset(Message):
    """A message with its offset: ``message``, ``offset`` and ``next_offset`` (offset + 1).

    ``message`` returns the object itself (a MessageAndOffset is a Message), so
    ``mo.message.value`` and the shorter ``mo.value`` read the same field.
    """

    __slots__ = ()

    # the 0.8 API's MessageAndOffset(message, offset), not Message.create's fields: by design
    @classmethod
    def create(cls, message: Message, offset: int) -> MessageAndOffset:  # type: ignore[override]
        """``MessageAndOffset(message, offset)`` of the classic API."""
        return cls((offset,) + tuple(message)[1:])

    if TYPE_CHECKING:

        @property
        def offset(self) -> int: ...
    else:
        offset = _offset

    @property
    def message(self) -> MessageAndOffset:
        return self

    @property
    def next_offset(self) -> int:
        """The offset to fetch next to continue after this message."""
        return self[0] + 1

    def __repr__(self) -> str:
        return f"MessageAndOffset(offset={self[0]}, {self._fields_repr()})"


def _header_tuple(headers: list[Header] | None) -> tuple[Header, ...]:
    return tuple(headers) if headers else ()


def messages_from_columns(
    offsets: Iterable[int],
    timestamps: Iterable[int],
    timestamp_types: Iterable[int],
    keys: Sequence[bytes | None] | None,
    values: list[bytes | None],
    headers: Iterable[list[Header] | None] | None,
    infos: Iterable[BatchInfo],
) -> Iterable[MessageAndOffset]:
    """Record factory for ``kclient.protocol.records.decode_entries``: one entry's records as
    MessageAndOffset tuples, built in C (``map`` over ``zip``) while the caller iterates."""
    return map(
        MessageAndOffset,
        zip(
            offsets,
            repeat(None) if keys is None else keys,
            values,
            timestamps,
            timestamp_types,
            repeat(()) if headers is None else map(_header_tuple, headers),
            infos,
        ),
    )


def _short(b: bytes | None, limit: int = 40) -> str:
    if b is None:
        return "None"
    if len(b) <= limit:
        return repr(b)
    return repr(b[:limit])[:-1] + f"...'({len(b)} bytes)"
