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


def _all_taken(values: Sequence[Any], none_ok: bool) -> bool:
    """Each item is bytes, bytearray or a byte-shaped memoryview (or None, if ``none_ok``)."""
    types = list(map(type, values))
    n = len(types)
    plain = types.count(_BYTES) + (types.count(type(None)) if none_ok else 0)
    if plain == n:
        return True
    plain += types.count(_BYTEARRAY)
    if plain == n:
        return True
    views = [v for v, t in zip(values, types) if t is _VIEW]
    return plain + len(views) == n and all(map(_byte_shaped, views))


def plain_lengths(values: Sequence[Any]) -> list[int] | None:
    """The byte lengths of ``values`` when each is bytes, bytearray or a byte-shaped
    memoryview; None otherwise (None values included)."""
    return list(map(len, values)) if _all_taken(values, False) else None


def is_plain(column: Sequence[Any]) -> bool:
    """True when every item is None or taken as it is (see :func:`plain_lengths`)."""
    return _all_taken(column, True)
