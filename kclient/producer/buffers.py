"""Which bytes-like message values and keys the producer takes as they are (no copy to bytes).

``bytes`` and ``bytearray`` always; a ``memoryview`` when it is C-contiguous and its ``len`` is
its byte count (``memoryview(b)``, slices of it, ``.cast("B")``): the encoders measure records
with ``len`` and copy them with ``join``, so a view of wider items (``array("i")``) or a strided
one would be measured wrong or refused.  Anything else goes through the configured encoder.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["plain_lengths", "is_plain", "BytesLike"]

#: what ``Producer.send_values`` takes without a copy (memoryviews: byte-shaped ones)
BytesLike = bytes | bytearray | memoryview

_BYTES, _BYTEARRAY, _VIEW = bytes, bytearray, memoryview


def _byte_shaped(v: memoryview) -> bool:
    """A view the encoders can measure with ``len`` and copy with ``join``."""
    return v.c_contiguous and v.ndim == 1 and v.itemsize == 1


def plain_lengths(values: Sequence[Any]) -> list[int] | None:
    """The byte lengths of ``values`` when each is bytes, bytearray or a byte-shaped
    memoryview; None otherwise (None values included)."""
    types = list(map(type, values))
    n = len(types)
    plain = types.count(_BYTES)
    if plain != n:
        plain += types.count(_BYTEARRAY)
        if plain != n:
            views = [v for v, t in zip(values, types) if t is _VIEW]
            if plain + len(views) != n or not all(map(_byte_shaped, views)):
                return None
    return list(map(len, values))


def is_plain(column: Sequence[Any]) -> bool:
    """True when every item is None or taken as it is (see :func:`plain_lengths`)."""
    types = list(map(type, column))
    n = len(types)
    plain = types.count(_BYTES) + types.count(type(None))
    if plain != n:
        plain += types.count(_BYTEARRAY)
        if plain != n:
            views = [v for v, t in zip(column, types) if t is _VIEW]
            return plain + len(views) == n and all(map(_byte_shaped, views))
    return True
