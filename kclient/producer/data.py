"""What goes into the producer (ProducerData) and what comes out of it (DeliveryReport).

``ProducerData`` is deliberately a small ``__slots__`` object: the async producer puts it on its
queue as it is, so creating one and sending it costs a few hundred nanoseconds.

A ``DeliveryReport`` covers one batch of messages sent to one partition in one request: all of
them were acknowledged together (consecutive offsets from ``base_offset``) or all failed with the
same ``error``.  One report per batch keeps delivery reporting off the per-message path; iterate
it to get ``(message, offset)`` pairs when you need them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kclient.protocol.speedups import load_speedup

from .data_methods import FIELDS, describe, equal, get_extra, set_extra

__all__ = [
    "ProducerData",
    "DeliveryReport",
    "RecordMetadata",
    "failure_reports",
    "to_entry",
    "to_entries",
    "from_entries",
    "Entry",
    "Header",
    "speedups",
]

#: A record header: name and value (None for a null value).
Header = tuple[str, bytes | None]
#: A message on the producer's queue: ``(topic, value)`` or ``(topic, value, key, partition,
#: timestamp, headers)`` (see "queue entries" below).
Entry = tuple[Any, ...]


def _extra_field(index: int) -> property:
    """A property reading and writing one of the optional fields packed in ``_extra``."""

    def get(self: ProducerData) -> Any:
        return get_extra(self, index)

    def set_(self: ProducerData, value: Any) -> None:
        set_extra(self, index, value)

    return property(get, set_, doc=f"The message's {FIELDS[index]} (None if not given).")


class ProducerData:
    """One message to send: ``ProducerData(topic, value, key=None)``.

    ``value`` and ``key`` are what the configured encoders accept (bytes for the default
    encoder); ``partition`` pins the message to a partition (otherwise the partitioner picks one
    from the key; null keys go to a partition that has a leader); ``timestamp`` is the create time
    in ms (default: when the batch is built); ``headers`` a list of ``(str, bytes)`` pairs
    (record batches only, i.e. brokers with Produce v3+).

    The four optional fields live together in one slot (``None`` when none is given), so the
    common message costs two attribute stores and the send thread tells plain messages apart
    with one look per message.  When kclient's C speed-ups are built, ``ProducerData`` is their
    twin of this class (``_speedups.pyx``, constructed in half the time), else this class.
    """

    __slots__ = ("topic", "value", "_extra")

    def __init__(
        self,
        topic: str,
        value: Any,
        key: Any = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> None:
        self.topic = topic
        self.value = value
        if key is None and partition is None and timestamp is None and headers is None:
            self._extra: tuple[Any, ...] | None = None
        else:
            self._extra = (key, partition, timestamp, headers)

    key = _extra_field(0)
    partition = _extra_field(1)
    timestamp = _extra_field(2)
    headers = _extra_field(3)

    def __repr__(self) -> str:
        return describe(self)

    def __eq__(self, other: object) -> bool:
        return equal(self, other)  # type: ignore[no-any-return]

    __hash__ = None  # type: ignore[assignment]  # compared by value, like a dataclass

    def __reduce__(self) -> tuple[Any, Entry]:
        # pickled as a call of _restore: loads in a process with the other class too
        return (_restore, (self.topic, self.value) + (self._extra or ()))


#: the Python class, whichever one ``ProducerData`` names at run time (type checkers and
#: their messages see this one, under its public name)
_PyProducerData = ProducerData


def _restore(*args: Any) -> ProducerData:
    """A ProducerData from its constructor arguments (what both classes pickle as)."""
    return ProducerData(*args)


#: the C speed-ups when built (see kclient/producer/_speedups.pyx), else None (not built, or
#: ``KCLIENT_PURE_PYTHON=1``: kclient.protocol.speedups)
speedups: Any = load_speedup("kclient.producer._speedups")

if not TYPE_CHECKING and speedups is not None:
    ProducerData = speedups.ProducerData


class RecordMetadata:
    """Where one message landed: ``topic``, ``partition``, ``offset`` (-1 when acks=0)."""

    __slots__ = ("topic", "partition", "offset", "timestamp")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int = -1) -> None:
        self.topic, self.partition, self.offset, self.timestamp = (
            topic,
            partition,
            offset,
            timestamp,
        )

    def __repr__(self) -> str:
        return f"RecordMetadata({self.topic!r}, {self.partition}, {self.offset})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RecordMetadata) and (self.topic, self.partition, self.offset) == (
            other.topic,
            other.partition,
            other.offset,
        )

    __hash__ = None  # type: ignore[assignment]


class DeliveryReport:
    """The outcome of one batch of messages for one topic partition.

    * ``messages``: the messages as :class:`ProducerData`, in the order they were written
      (equal to the ones sent; the async producer does not keep your objects alive, it rebuilds
      them from what it queued when you first read ``messages``);
    * ``topic``, ``partition`` (``-1`` when the message never got a partition, e.g. its topic
      does not exist or it could not be serialized);
    * ``error``: ``None`` when the broker acknowledged the batch, else the exception (the last
      one seen when retries ran out);
    * ``base_offset``: the offset of the first message (message *i* has ``base_offset + i``);
      ``-1`` on error and with ``request.required.acks=0`` (no acknowledgement, no offsets);
    * ``timestamp``: the broker's LogAppendTime if the topic uses it, else -1;
    * ``attempts``: how many times the batch was sent.
    """

    __slots__ = (
        "topic",
        "partition",
        "base_offset",
        "error",
        "timestamp",
        "attempts",
        "create_time",
        "_messages",
        "_entries",
        "_values",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        messages: Sequence[ProducerData] | None = None,
        base_offset: int = -1,
        error: BaseException | None = None,
        timestamp: int = -1,
        attempts: int = 1,
        *,
        entries: list[Entry] | None = None,
        values: list[Any] | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = base_offset
        self.error = error
        self.timestamp = timestamp
        self.attempts = attempts
        #: the CreateTime given to records without their own timestamp (-1: unknown)
        self.create_time = -1
        #: exactly one of: ProducerData objects, queue entries (tuples), bare values of `topic`
        self._messages = messages
        self._entries = entries
        self._values = values

    @property
    def messages(self) -> Sequence[ProducerData]:
        """The messages of the batch, in log order."""
        msgs = self._messages
        if msgs is None:
            if self._entries is not None:
                msgs = from_entries(self._entries)
            else:
                topic = self.topic
                msgs = [ProducerData(topic, v) for v in self._values or ()]
            self._messages = msgs
        return msgs

    @property
    def ok(self) -> bool:
        """True when the batch was written (acknowledged, or sent with acks=0)."""
        return self.error is None

    def __len__(self) -> int:
        for col in (self._messages, self._entries, self._values):
            if col is not None:
                return len(col)
        return 0

    @property
    def offsets(self) -> range:
        """The offsets the messages got (empty when unknown: on error or with acks=0)."""
        if self.error is not None or self.base_offset < 0:
            return range(0)
        return range(self.base_offset, self.base_offset + len(self))

    def __iter__(self) -> Iterator[tuple[ProducerData, int]]:
        """``(message, offset)`` pairs; the offset is -1 when unknown."""
        if self.error is not None or self.base_offset < 0:
            return ((m, -1) for m in self.messages)
        return zip(self.messages, range(self.base_offset, self.base_offset + len(self)))

    def metadata(self) -> list[RecordMetadata]:
        """One :class:`RecordMetadata` per message (only for acknowledged batches)."""
        if self.error is not None:
            return []
        offsets = self.offsets or [-1] * len(self)
        return [
            RecordMetadata(self.topic, self.partition, off, self.record_timestamp(i))
            for i, off in enumerate(offsets)
        ]

    def record_timestamp(self, index: int) -> int:
        """The timestamp message ``index`` has in the log: the broker's LogAppendTime if the
        topic uses it, else its own timestamp or the batch's CreateTime (-1 if unknown)."""
        if self.timestamp >= 0:
            return self.timestamp
        es = self._entries
        own = es[index][4] if es is not None and len(es[index]) > 5 else None
        if own is None and self._messages is not None and es is None:
            own = self._messages[index].timestamp
        return int(own) if own is not None else self.create_time

    @property
    def failed(self) -> list[tuple[ProducerData, BaseException]]:
        """``(message, error)`` pairs, as FailedToSendMessageError lists them (empty if ok)."""
        if self.error is None:
            return []
        return [(m, self.error) for m in self.messages]

    def __repr__(self) -> str:
        outcome = (
            f"error={self.error!r}" if self.error is not None else f"base_offset={self.base_offset}"
        )
        return (
            f"DeliveryReport({self.topic!r}, partition={self.partition}, "
            f"messages={len(self)}, {outcome}, attempts={self.attempts})"
        )


# ----------------------------------------------------------------------------- queue entries
# Inside the producer a message travels as a plain tuple, ``(topic, value)`` or
# ``(topic, value, key, partition, timestamp, headers)``; a message of ``Producer.produce`` has
# its DeliveryFuture as a last field: ``(topic, value, future)`` or ``(topic, value, key,
# partition, timestamp, headers, future)``.  A tuple of str and bytes is dropped by
# Python's garbage collector from its lists at its first collection, so a queue of 100,000
# entries costs the collector nothing, while 100,000 queued objects would be traversed again
# and again (a third of the producer's time in measurements).


def to_entry(d: ProducerData) -> Entry:
    """The queue entry of a message."""
    x = d._extra
    return (d.topic, d.value) if x is None else (d.topic, d.value) + x


def to_entries(items: Sequence[ProducerData]) -> list[Entry]:
    """Queue entries of messages."""
    return [
        (d.topic, d.value) if d._extra is None else (d.topic, d.value) + d._extra for d in items
    ]


def from_entries(entries: Sequence[Entry]) -> list[ProducerData]:
    """ProducerData objects of queue entries (a ``produce()`` entry's future left out)."""
    return [
        ProducerData(*e) if len(e) != 3 and len(e) != 7 else ProducerData(*e[: len(e) - 1])
        for e in entries
    ]


def failure_reports(
    entries: Sequence[Entry], error: BaseException, attempts: int = 0
) -> list[DeliveryReport]:
    """Failed reports (partition -1) for queue entries that never reached a partition."""
    groups: dict[str, list[Entry]] = {}
    for e in entries:
        g = groups.get(e[0])
        if g is None:
            groups[e[0]] = g = []
        g.append(e)
    return [
        DeliveryReport(topic, -1, None, -1, error, -1, attempts, entries=es)
        for topic, es in groups.items()
    ]
