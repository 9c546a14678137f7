"""ProducerData's behaviour beyond its slots, written once for both of its classes: the Python
one in :mod:`kclient.producer.data` and the C one in ``_speedups.pyx`` call these."""
from __future__ import annotations

from typing import Any

__all__ = ["FIELDS", "get_extra", "set_extra", "describe", "equal"]

#: the optional fields, in the order ``_extra`` packs them
FIELDS = ("key", "partition", "timestamp", "headers")
_NONE4 = (None, None, None, None)


def get_extra(d: Any, index: int) -> Any:
    """One optional field (None when not given)."""
    extra = d._extra
    return None if extra is None else extra[index]


def set_extra(d: Any, index: int, value: Any) -> None:
    """Set one optional field; ``_extra`` goes back to None when all four are None."""
    extra = list(d._extra or _NONE4)
    extra[index] = value
    d._extra = None if tuple(extra) == _NONE4 else tuple(extra)


def describe(d: Any) -> str:
    """``ProducerData('topic', b'value', key=...)``, long values cut at 40 characters."""
    extra = "".join(f", {name}={value!r}" for name, value in zip(FIELDS, d._extra or _NONE4)
                    if value is not None)
    value = d.value
    if isinstance(value, bytes) and len(value) > 40:
        value = value[:37] + b"..."
    elif isinstance(value, str) and len(value) > 40:
        value = value[:37] + "..."
    return f"ProducerData({d.topic!r}, {value!r}{extra})"


def equal(a: Any, b: Any) -> Any:
    """Compared by value, like a dataclass (NotImplemented for other types)."""
    if not isinstance(b, type(a)):
        return NotImplemented
    return (a.topic, a.value, a._extra) == (b.topic, b.value, b._extra)
