"""``foreach_partition_writer``: a Kafka sink for code that keeps ``df.foreachPartition``.

::

    from kclient.spark import foreach_partition_writer
    df.foreachPartition(foreach_partition_writer(
        {"kafka.bootstrap.servers": "broker:9092", "topic": "events"}))

Rows need a ``value`` field and may have ``key``, ``topic``, ``partition`` and ``headers``, as
for ``df.write.format("kclient")``.  Each Python worker keeps one Producer (per config); the
function flushes it at the end of the partition and raises if any message was not delivered, so
the task fails and Spark retries it (at-least-once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain, islice, repeat
from typing import Any

from kclient.producer import Producer, ProducerData

from . import pool
from .options import WriteOptions, parse_write_options

__all__ = ["foreach_partition_writer", "PartitionWriter"]

CHUNK = 10_000
#: value types Producer.send_values takes without a copy
_PLAIN = {bytes, bytearray}


def _chunks(rows: Iterable[Any]) -> Iterator[list[Any]]:
    """``rows`` in lists of CHUNK."""
    it = iter(rows)
    while True:
        chunk = list(islice(it, CHUNK))
        if not chunk:
            return
        yield chunk


def _bytes(v: Any) -> Any:
    """A row field as the producer takes it: bytes and bytearray as they are, str as UTF-8."""
    if v is None or type(v) is bytes or type(v) is bytearray:
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


class PartitionWriter:
    """The function ``foreach_partition_writer`` returns (picklable: options only)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def __call__(self, rows: Iterable[Any]) -> None:
        producer = pool.producer(self.opts.producer_config())
        tracing = producer._tracing  # a span per task when the executor traces
        if tracing is None:
            return self._write(producer, rows)
        with tracing.task("send", self.opts.topic):
            return self._write(producer, rows)

    def _write(self, producer: Producer, rows: Iterable[Any]) -> None:
        it = iter(rows)
        first = next(it, None)
        if first is None:
            return
        value_only = self._value_only(first)
        if value_only is not None:
            self._send_values(producer, value_only, chain((first,), it))
        else:
            build = self._builder(first)
            for chunk in _chunks(chain((first,), it)):
                producer.send([build(r) for r in chunk])
        producer.flush()

    def _value_only(self, row: Any) -> int | None:
        """The value's index when rows carry a value and nothing else the sink reads."""
        fields = {name.lower(): i for i, name in enumerate(row.__fields__)}
        if self.opts.topic is None or fields.keys() & {"key", "partition", "headers"}:
            return None
        return fields.get("value")

    def _send_values(self, producer: Producer, iv: int, rows: Iterable[Any]) -> None:
        """Send field ``iv`` of each row, CHUNK values at a time.

        No Python code runs per row: ``tuple.__getitem__`` is mapped over the rows (``Row``'s
        own ``__getitem__`` is a Python method) and each row is dropped once its value is out,
        so no list of Rows is kept for the garbage collector to walk."""
        topic = self.opts.topic
        assert topic is not None
        it = map(tuple.__getitem__, rows, repeat(iv))
        while values := list(islice(it, CHUNK)):
            # Spark hands BinaryType to Python as bytearray: send_values takes it as it is
            # (Spark does not touch a row's bytearray after handing it over)
            if not set(map(type, values)) <= _PLAIN:
                values = [_bytes(v) for v in values]
            producer.send_values(topic, values)

    def _builder(self, row: Any) -> Callable[[Any], ProducerData]:
        """A row -> ProducerData function for rows shaped like ``row``."""
        fields = {name.lower(): i for i, name in enumerate(row.__fields__)}
        if "value" not in fields:
            raise ValueError("Required attribute 'value' not found")
        iv = fields["value"]
        fixed = self.opts.topic
        if fixed is None and "topic" not in fields:
            raise ValueError(
                "topic option required when no 'topic' attribute is present. "
                "Use the topic option for setting a topic."
            )
        it, ik = fields.get("topic"), fields.get("key")
        ip, ih = fields.get("partition"), fields.get("headers")
        if ik is None and ip is None and ih is None and fixed is not None:
            return lambda r: ProducerData(fixed, _bytes(r[iv]))

        def build(r: Any) -> ProducerData:
            topic = fixed if fixed is not None else r[it]
            if topic is None:
                raise ValueError(
                    "null topic present in the data. Use the topic option for "
                    "setting a default topic."
                )
            hs = r[ih] if ih is not None else None
            return ProducerData(
                topic,
                _bytes(r[iv]),
                None if ik is None else _bytes(r[ik]),
                None if ip is None else r[ip],
                headers=[(h[0], _bytes(h[1])) for h in hs] if hs else None,
            )

        return build


def foreach_partition_writer(
    options: Mapping[str, str] | None = None, **more: str
) -> PartitionWriter:
    """A function for ``df.foreachPartition`` that sends each row to Kafka.

    ``options`` (and keyword ``more``) are the sink's options: ``kafka.bootstrap.servers``,
    ``topic`` and other ``kafka.*`` producer settings, validated here, on the driver.
    """
    return PartitionWriter(parse_write_options({**(options or {}), **more}))
