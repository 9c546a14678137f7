"""ConsumerRecords from decoded columns: built in C calls, a fetched slice at a time, only for
what a consumer hands out (kclient.Consumer and AIOConsumer alike)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from itertools import repeat
from typing import Any

from kclient.protocol.speedups import load_speedup
from kclient.structs import ConsumerRecord, TopicPartition

from .columns import MessageColumns

__all__ = ["build_records", "NO_HEADERS"]

_walk = load_speedup("kclient.protocol.records._walk")
#: untracks records the cyclic collector need not scan (the C record walker's, when built)
_untrack = getattr(_walk, "untrack_flat", None)
#: builds the records from their columns in one C call, no temporary tuple per record
_build_rows = getattr(_walk, "build_rows", None)
#: ConsumerRecord from a tuple of its fields in one C call (``_make`` is a Python frame each)
_new = tuple.__new__
Decode = Callable[[Any], Any]
_NONE: Any = ()


class NoHeaders(list):  # type: ignore[type-arg]
    """The headers of a record that has none: an empty list (``== []``, as kafka-python's)
    that refuses changes, so every such record shares one (no list per record)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a record's empty headers are shared and cannot be changed")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore


#: the headers of every record without any (kclient.Consumer)
NO_HEADERS = NoHeaders()


def build_records(
    tp: TopicPartition,
    cols: MessageColumns,
    i: int,
    j: int,
    key: Decode | None,
    value: Decode | None,
    empty_lists: bool = False,
    cls: type[tuple[Any, ...]] = ConsumerRecord,
    tail: tuple[Any, ...] = (),
) -> list[Any]:
    """The records ``i:j`` of ``cols`` (``key``/``value``: decoders, None for bytes as they are).

    They are built with the cyclic collector paused: it would otherwise scan the batch being
    built again every 700 allocations (more than half the cost). They are reference-counted;
    nothing is left for it to free, so a record whose fields hold no references (bytes, str,
    int, None, no headers) is untracked (``_walk.untrack_flat``): the collector scans a tuple
    subclass in every collection while it lives.  A record's headers are a list of its own,
    or when it has none the empty tuple (as aiokafka's; immutable, so one can be shared), or
    with ``empty_lists`` :data:`NO_HEADERS`, an empty list that refuses changes (as
    kafka-python's ``[]``, shared as well).  ``cls`` and ``tail``: another record type whose fields are a
    ConsumerRecord's and then ``tail``, the same for every record (a ShareConsumerRecord and
    its delivery count)."""
    n = j - i
    if n == 1:  # a caught-up consumer's usual poll: one record, nothing to zip or to pause
        return _one(tp, cols, i, key, value, NO_HEADERS if empty_lists else _NONE, cls, tail)
    keys = cols.keys[i:j] if cols.keys is not None else repeat(None, n)
    values = cols.values[i:j]
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        empty = NO_HEADERS if empty_lists else _NONE
        hdrs = (
            [list(h) if h else empty for h in cols.headers[i:j]]
            if cols.headers is not None
            else repeat(empty, n)
        )
        if _build_rows is not None:
            records: list[Any] = _build_rows(
                cls,
                n,
                (
                    tp.topic,
                    tp.partition,
                    _listed(cols.offsets[i:j]),
                    _listed(cols.timestamps[i:j]),
                    _listed(cols.timestamp_types[i:j]),
                    _decoded(keys, key) if cols.keys is not None or key is not None else None,
                    _decoded(values, value),
                    hdrs if type(hdrs) is list else empty,
                    *tail,
                ),
            )
            if _untrack is not None:
                _untrack(records, NO_HEADERS)
            return records
        records = list(
            map(
                _new,
                repeat(cls, n),
                zip(
                    repeat(tp.topic, n),
                    repeat(tp.partition, n),
                    cols.offsets[i:j],
                    cols.timestamps[i:j],
                    cols.timestamp_types[i:j],
                    keys if key is None else map(key, keys),
                    values if value is None else map(value, values),
                    hdrs,
                    *(repeat(x, n) for x in tail),
                ),
            )
        )
        if _untrack is not None:
            _untrack(records, NO_HEADERS)
        return records
    finally:
        if paused:
            gc.enable()


def _listed(column: Any) -> list[Any]:
    """A column's slice as an exact list (what build_rows takes row by row)."""
    return column if type(column) is list else list(column)


def _decoded(column: Any, decode: Decode | None) -> list[Any]:
    return _listed(column) if decode is None else list(map(decode, column))


def _one(
    tp: TopicPartition,
    cols: MessageColumns,
    i: int,
    key: Decode | None,
    value: Decode | None,
    empty: Any,
    cls: type[tuple[Any, ...]],
    tail: tuple[Any, ...],
) -> list[Any]:
    """:func:`build_records` of the one record ``i`` (the same record, built directly)."""
    k = cols.keys[i] if cols.keys is not None else None
    v = cols.values[i]
    h = cols.headers[i] if cols.headers is not None else None
    records = [
        _new(
            cls,
            (
                tp.topic,
                tp.partition,
                cols.offsets[i],
                cols.timestamps[i],
                cols.timestamp_types[i],
                k if key is None else key(k),
                v if value is None else value(v),
                list(h) if h else empty,
                *tail,
            ),
        )
    ]
    if _untrack is not None:
        _untrack(records, NO_HEADERS)
    return records
