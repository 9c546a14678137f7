"""ConsumerRecords from decoded columns: built in C calls, a fetched slice at a time."""
from __future__ import annotations

import gc
from collections.abc import Callable
from itertools import repeat
from typing import Any

from kclient.consumer.modern import ConsumerRecord
from kclient.core.columns import MessageColumns
from kclient.encoders import DefaultDecoder
from kclient.structs import TopicPartition

__all__ = ["build_records", "decoder"]

#: ConsumerRecord from a tuple of its fields in one C call (``_make`` is a Python frame each)
_new = tuple.__new__
Decode = Callable[[Any], Any]
_NONE: Any = ()


def build_records(tp: TopicPartition, cols: MessageColumns, i: int, j: int,
                  key: Decode | None, value: Decode | None) -> list[ConsumerRecord]:
    """The records ``i:j`` of ``cols`` (``key``/``value``: decoders, None for bytes as they are).

    They are built with the cyclic collector paused: it would otherwise scan the batch being
    built again every 700 allocations (more than half the cost). They are reference-counted;
    nothing is left for it to free.  A record's headers are a list of its own, or the empty
    tuple when it has none (as aiokafka's; immutable, so one can be shared)."""
    n = j - i
    keys = cols.keys[i:j] if cols.keys is not None else repeat(None, n)
    values = cols.values[i:j]
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        hdrs = [list(h) if h else _NONE for h in cols.headers[i:j]] \
            if cols.headers is not None else repeat(_NONE, n)
        return list(map(_new, repeat(ConsumerRecord, n),
                        zip(repeat(tp.topic, n), repeat(tp.partition, n),
                            cols.offsets[i:j], cols.timestamps[i:j],
                            cols.timestamp_types[i:j],
                            keys if key is None else map(key, keys),
                            values if value is None else map(value, values), hdrs)))
    finally:
        if paused:
            gc.enable()


def decoder(dec: Any) -> Decode | None:
    """The decoder's function, None passed through; None for DefaultDecoder (bytes as they are)."""
    if type(dec) is DefaultDecoder:
        return None
    fn = getattr(dec, "from_message", dec)

    def decode(b: bytes | None) -> Any:
        return None if b is None else fn(b)
    return decode
