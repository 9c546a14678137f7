"""ProducerData's behaviour beyond its slots, written once for both of its classes: the Python
one in :mod:`kclient.producer.data` and the C one in ``_speedups.pyx`` call these."""

from __future__ import annotations

from typing import Any

__all__ = [
    "FIELDS",
    "get_extra",
    "set_extra",
    "describe",
    "equal",
    "wrong_send",
    "wrong_call",
    "NO",
]

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
    extra = "".join(
        f", {name}={value!r}"
        for name, value in zip(FIELDS, d._extra or _NONE4)
        if value is not None
    )
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


#: the default of send()'s catch-all parameters: anything else means a wrong call
NO: Any = object()
_CAUGHT = ("value", "key", "partition", "headers", "timestamp", "timestamp_ms", "on_delivery")


def wrong_call(data: Any, *caught: Any) -> TypeError:
    """:func:`wrong_send` for the fast send()'s parameters (``NO`` where not given): they catch
    kafka-python's and confluent-kafka's arguments without a ``**kwargs`` dict per call."""
    return wrong_send((data,), {name: v for name, v in zip(_CAUGHT, caught) if v is not NO})


def wrong_send(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TypeError:
    """The error of a ``send()`` called as kafka-python's ``send(topic, value, key=...)`` or with
    a plain tuple: it shows the call meant (``send(ProducerData(...))`` or ``produce(...)``)."""
    kwargs = dict(kwargs)
    if len(args) == 1 and "value" in kwargs:
        args += (kwargs.pop("value"),)
    if "timestamp_ms" in kwargs:  # kafka-python's name of ProducerData's timestamp
        kwargs["timestamp"] = kwargs.pop("timestamp_ms")
    shown = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    inner = ", ".join(shown) or "topic, value"
    data = (
        ", ".join(
            [_short(a) for a in args]
            + [f"{k}={_short(v)}" for k, v in kwargs.items() if k != "on_delivery"]
        )
        or "topic, value"
    )
    return TypeError(
        f"send() takes one ProducerData or a list of them, not send({inner}): write "
        f"p.send(ProducerData({data})), or p.produce({inner}) for a future per message "
        "(kafka-python's send(topic, value) and confluent-kafka's produce(topic, value))"
    )


def _short(x: Any) -> str:
    """``repr(x)``, cut at 40 characters."""
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."
