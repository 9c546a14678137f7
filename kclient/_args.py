"""Argument normalisers shared by the threaded and asyncio clients: what users type, one shape.

Users come with kafka-python's and confluent-kafka's habits: ``(topic, partition)`` tuples or
lists where kclient takes TopicPartitions, seconds where it takes milliseconds, headers as a
dict, str header values.  Each public call passes its arguments through one function here, so
the threaded ``kclient.Consumer`` / ``Producer`` and ``kclient.aio`` accept the same forms and
refuse the same mistakes with the same words.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kclient.structs import TopicPartition

__all__ = [
    "PartitionsArg",
    "topic_partition",
    "topic_partitions",
    "poll_timeout_ms",
    "record_headers",
    "takes_two_args",
    "one_of",
    "partition_list",
    "commit_offsets",
]

#: what a partition argument may be: a TopicPartition, a ``(topic, partition)`` tuple, or an
#: iterable of either
PartitionsArg = TopicPartition | tuple[str, int] | Iterable[Any]


def _is_pair(x: Any) -> bool:
    """``("topic", 0)``: a partition written as a tuple."""
    return (
        type(x) is tuple
        and len(x) == 2
        and isinstance(x[0], str)
        and isinstance(x[1], int)
        and not isinstance(x[1], bool)
    )


def topic_partition(x: Any, call: str = "this call") -> TopicPartition:
    """One partition from a TopicPartition or a ``(topic, partition)`` tuple (or an object
    with ``topic`` and ``partition`` attributes, as confluent-kafka's TopicPartition)."""
    if type(x) is TopicPartition:
        return x
    if _is_pair(x):
        return TopicPartition(x[0], x[1])
    topic, partition = getattr(x, "topic", None), getattr(x, "partition", None)
    if isinstance(topic, str) and isinstance(partition, int):
        return TopicPartition(topic, partition)
    raise TypeError(
        f"{call} takes a TopicPartition or a (topic, partition) tuple, or a list of them; got {x!r}"
    )


def topic_partitions(args: Iterable[Any], call: str = "this call") -> list[TopicPartition]:
    """Partitions from ``*args`` where each argument is one partition (TopicPartition or
    ``(topic, partition)``) or a list / set / tuple of them: ``pause(tp)``, ``pause(tp1, tp2)``,
    ``pause([tp1, tp2])``, ``pause(("t", 0))`` all mean the same."""
    out: list[TopicPartition] = []
    for a in args:
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            raise TypeError(
                f"{call} got {a!r} where partitions go: a wait is timeout={a!r} "
                f"(seconds) or timeout_ms={_ms_hint(a)} (milliseconds)"
            )
        if type(a) is TopicPartition or _is_pair(a) or hasattr(a, "partition"):
            out.append(topic_partition(a, call))
        elif isinstance(a, (str, bytes, Mapping)):
            raise TypeError(
                f"{call} takes a TopicPartition or a (topic, partition) tuple, or "
                f"a list of them; got {a!r}"
            )
        elif isinstance(a, Iterable):
            out.extend(topic_partition(x, call) for x in a)
        else:
            raise TypeError(
                f"{call} takes a TopicPartition or a (topic, partition) tuple, or "
                f"a list of them; got {a!r}"
            )
    return out


def partition_list(partitions: Any, call: str) -> tuple[list[TopicPartition], bool]:
    """``(partitions, one)``: one argument that is a single partition or a list of them, and
    whether it was a single one (then the call answers with one value, else a dict)."""
    single = (
        type(partitions) is TopicPartition
        or _is_pair(partitions)
        or (hasattr(partitions, "partition") and hasattr(partitions, "topic"))
    )
    return topic_partitions([partitions], call), single


def poll_timeout_ms(
    args: tuple[Any, ...],
    timeout: float | None,
    timeout_ms: int | None,
    call: str = "poll()",
    default_ms: int = 0,
) -> int:
    """Milliseconds to wait (-1: no limit) from ``poll(timeout_ms)``, ``poll(timeout_ms=...)``
    (kafka-python, ms) or ``poll(timeout=seconds)`` (confluent-kafka; None or negative: wait
    without limit).  A positional float is refused: 1.0 means one second to confluent-kafka
    users and one millisecond to kafka-python's signature, so kclient does not guess."""
    if len(args) > 1:
        raise TypeError(
            f"{call} takes at most one positional argument (timeout_ms), got {len(args)}"
        )
    if args and timeout_ms is not None:
        raise TypeError(f"{call} got timeout_ms twice (positionally and as a keyword)")
    if (args or timeout_ms is not None) and timeout is not None:
        raise TypeError(f"{call} takes timeout=<seconds> or timeout_ms=<milliseconds>, not both")
    if args:
        value = args[0]
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"{call} got a positional {value!r}: write {call[:-1]}timeout={value!r}) for "
                f"seconds (confluent-kafka) or {call[:-1]}timeout_ms={_ms_hint(value)}) for "
                "milliseconds (kafka-python); a positional number is taken as milliseconds "
                "only when it is an int"
            )
        return int(value)
    if timeout_ms is not None:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)):
            raise TypeError(
                f"{call}: timeout_ms must be a number of milliseconds, got {timeout_ms!r}"
            )
        return int(timeout_ms) if timeout_ms >= 0 else -1
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"{call}: timeout must be a number of seconds, got {timeout!r}")
        return int(timeout * 1000) if timeout >= 0 else -1
    return default_ms


def _ms_hint(value: Any) -> str:
    try:
        return str(int(float(value) * 1000))
    except (TypeError, ValueError):
        return "..."


def record_headers(headers: Any, call: str = "produce()") -> list[tuple[str, bytes | None]] | None:
    """Headers as the wire takes them, a list of ``(str, bytes | None)``, from a list of pairs
    or a dict; str values are encoded as UTF-8, bytes-like values copied to bytes."""
    if headers is None:
        return None
    if isinstance(headers, Mapping):
        pairs: Iterable[Any] = headers.items()
    elif isinstance(headers, (str, bytes)) or not isinstance(headers, Iterable):
        raise TypeError(
            f"{call}: headers must be a list of (name, value) pairs or a dict, got {headers!r}"
        )
    else:
        pairs = headers
    out: list[tuple[str, bytes | None]] = []
    for pair in pairs:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise TypeError(f"{call}: each header is a (name, value) pair, got {pair!r}") from None
        if isinstance(name, (bytes, bytearray)):
            name = bytes(name).decode("utf-8")
        if not isinstance(name, str):
            raise TypeError(f"{call}: header name {name!r} is not a str")
        if value is None or type(value) is bytes:
            out.append((name, value))
        elif isinstance(value, str):
            out.append((name, value.encode("utf-8")))
        elif isinstance(value, (bytearray, memoryview)):
            out.append((name, bytes(value)))
        else:
            raise TypeError(
                f"{call}: header {name!r} has a {type(value).__name__} value; "
                "header values are bytes, str (sent as UTF-8) or None"
            )
    return out


def one_of(call: str, **given: Any) -> Any:
    """The one value among aliases (``on_delivery`` / ``callback``, ``timestamp`` /
    ``timestamp_ms``) that is not None; two different ones are an error naming both."""
    set_ = {k: v for k, v in given.items() if v is not None}
    if len(set_) > 1:
        values = list(set_.values())
        if any(v is not values[0] and v != values[0] for v in values[1:]):
            names = " and ".join(set_)
            raise TypeError(f"{call} got {names}: they are aliases; give one")
    return next(iter(set_.values()), None)


def takes_two_args(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` can be called with two positional arguments (``(err, metadata)``)
    rather than only one (a DeliveryReport); builtins whose signature is unknown: one."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    try:
        sig.bind(None, None)
    except TypeError:
        return False
    return True


def commit_offsets(
    offsets: Mapping[Any, Any], call: str = "commit()"
) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` from a mapping keyed by TopicPartition or
    ``(topic, partition)`` whose values are ints or OffsetAndMetadata-like objects."""
    if not isinstance(offsets, Mapping):
        raise TypeError(
            f"{call} takes offsets as a mapping {{TopicPartition: offset}}, got {offsets!r}"
        )
    out = {}
    for key, value in offsets.items():
        tp = topic_partition(key, call)
        off = value if isinstance(value, int) else getattr(value, "offset", None)
        if isinstance(off, bool) or not isinstance(off, int):
            raise TypeError(
                f"{call}: the offset of {tp} must be an int or have .offset, got {value!r}"
            )
        out[(tp.topic, tp.partition)] = off
    return out
