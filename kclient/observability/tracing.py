"""The tracer facade every kclient face calls when tracing is on (imports OpenTelemetry).

Only :func:`kclient.observability.tracing_for` makes a :class:`Tracing`, and only when a tracer
provider is set; a client without one holds ``None`` and never reaches this module.

Spans follow the OpenTelemetry messaging semantic conventions for Kafka:

* ``send {topic}`` (PRODUCER) per message, from ``send()`` / ``produce()`` until its delivery
  report, with the partition and offset it got or ``error.type``; its context goes into the
  record's headers (W3C ``traceparent`` with the default propagator);
* ``poll {topic}`` (CLIENT; CONSUMER under the old names) per poll that returned records, with
  ``messaging.batch.message_count`` and a link to each record's producer span;
* ``process {topic}`` (CONSUMER) per record handed out by iteration (or :meth:`process`), a
  child of the record's producer span, so producer and consumer share one trace.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from kclient.errors import error_name

from .semconv import SYSTEM, Names

__all__ = ["Tracing", "HeaderGetter", "inject", "extract"]

Headers = Sequence[tuple[str, Any]]


class HeaderGetter(Getter[Headers]):
    """Reads a propagation field out of Kafka record headers (a list of ``(str, bytes)``)."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        out = [
            v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else str(v)
            for k, v in carrier or ()
            if k == key and v is not None
        ]
        return out or None

    def keys(self, carrier: Headers) -> list[str]:
        return [k for k, _ in carrier or ()]


_GETTER = HeaderGetter()


def inject(headers: Headers | Mapping[str, Any] | None, ctx: Any) -> list[tuple[str, Any]]:
    """``headers`` (pairs, or a dict) plus the propagation fields of ``ctx`` (replacing ones
    already there)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=ctx)
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    kept = [(k, v) for k, v in pairs if k not in carrier]
    return kept + [(k, v.encode()) for k, v in carrier.items()]


def extract(headers: Headers | None) -> Any:
    """The context a record's headers carry (the current one when they carry none)."""
    return propagate.extract(headers or [], getter=_GETTER)


def key_text(key: Any) -> str | None:
    """``messaging.kafka.message.key``: the key as text (bytes decoded as UTF-8)."""
    if key is None:
        return None
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key).decode("utf-8", "replace")
    return str(key)


def error_type(exc: BaseException) -> str:
    """``error.type``: Kafka's error name when it has one, else the exception's class."""
    return error_name(exc)


class Tracing:
    """One client's tracer, the names it writes and the attributes every span of it has."""

    def __init__(
        self,
        provider: Any,
        names: Names,
        client_id: str | None,
        servers: Sequence[tuple[str, int]],
        group: str | None = None,
        metrics: Any = None,
    ) -> None:
        self.tracer = provider.get_tracer("kclient", _version())
        self.names = names
        self.group = group or None
        #: the client's ClientMetrics: process spans' durations go to its histogram
        self.metrics = metrics
        host, port = servers[0] if servers else (None, None)
        self.common = {
            "messaging.system": SYSTEM,
            "messaging.client.id": client_id or None,
            "server.address": host,
            "server.port": port,
        }
        self.receive_kind = SpanKind.CLIENT if names.receive_kind_is_client() else SpanKind.CONSUMER

    # -- names ------------------------------------------------------------------------------------
    def span_name(self, operation: str, topic: str | None) -> str:
        """``send orders`` (new conventions) or ``orders publish`` (old)."""
        if self.names.mode == "old":
            old = {"send": "publish", "poll": "receive"}.get(operation, operation)
            return f"{topic} {old}" if topic else old
        return f"{operation} {topic}" if topic else operation

    def attributes(
        self,
        op_name: str,
        op_type: str,
        topic: str | None,
        partition: int | None = None,
        **more: Any,
    ) -> dict[str, Any]:
        attrs = dict(self.common)
        attrs.update(
            {
                "messaging.operation.name": op_name,
                "messaging.operation.type": op_type,
                "messaging.destination.name": topic,
                "messaging.destination.partition.id": None
                if partition is None or partition < 0
                else str(partition),
            }
        )
        attrs.update(more)
        return self.names.attributes(attrs)

    # -- producing --------------------------------------------------------------------------------
    def start_send(
        self,
        topic: str,
        key: Any,
        partition: int | None,
        headers: Headers | Mapping[str, Any] | None,
    ) -> tuple[Any, list[tuple[str, Any]]]:
        """A started ``send`` span and the headers carrying its context."""
        span = self.tracer.start_span(
            self.span_name("send", topic),
            kind=SpanKind.PRODUCER,
            attributes=self.attributes(
                "send", "send", topic, partition, **{"messaging.kafka.message.key": key_text(key)}
            ),
        )
        return span, inject(headers, trace.set_span_in_context(span))

    def end_send(self, span: Any, partition: int, offset: int, error: BaseException | None) -> None:
        """End a ``send`` span with what its delivery report says."""
        if error is not None:
            span.set_attribute("error.type", error_type(error))
            span.set_status(Status(StatusCode.ERROR, str(error)))
        else:
            attrs: dict[str, Any] = {
                "messaging.destination.partition.id": None if partition < 0 else str(partition),
                "messaging.kafka.offset": offset if offset >= 0 else None,
            }
            span.set_attributes(self.names.attributes(attrs))
        span.end()

    # -- consuming --------------------------------------------------------------------------------
    def received(self, records: Iterable[Any], start_ns: int) -> None:
        """One ``poll`` span for a batch of records (each with ``topic``, ``partition`` and
        ``headers``), linked to each record's producer span."""
        links, topics, partitions, n = [], set(), set(), 0
        for r in records:
            n += 1
            topics.add(r.topic)
            partitions.add(r.partition)
            sc = trace.get_current_span(extract(r.headers)).get_span_context()
            if sc.is_valid:
                links.append(Link(sc))
        if not n:
            return
        topic = next(iter(topics)) if len(topics) == 1 else None
        part = next(iter(partitions)) if topic is not None and len(partitions) == 1 else None
        span = self.tracer.start_span(
            self.span_name("poll", topic),
            kind=self.receive_kind,
            start_time=start_ns,
            links=links,
            attributes=self.attributes(
                "poll",
                "receive",
                topic,
                part,
                **{"messaging.batch.message_count": n, "messaging.consumer.group.name": self.group},
            ),
        )
        span.end()

    def received_batches(self, batches: Mapping[Any, list[Any]], start_ns: int) -> None:
        """:meth:`received` for a ``{TopicPartition: [record]}`` answer of poll()/getmany()."""
        if batches:
            self.received((r for rs in batches.values() for r in rs), start_ns)

    def start_process(self, record: Any) -> tuple[Any, Any, float]:
        """A ``process`` span for ``record`` (a child of its producer span), made current;
        returns ``(span, token, start)`` for :meth:`end_process`."""
        parent = extract(record.headers)
        span = self.tracer.start_span(
            self.span_name("process", record.topic),
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes=self.attributes(
                "process",
                "process",
                record.topic,
                record.partition,
                **{
                    "messaging.kafka.offset": record.offset,
                    "messaging.kafka.message.key": key_text(record.key),
                    "messaging.consumer.group.name": self.group,
                },
            ),
        )
        return span, otel_context.attach(trace.set_span_in_context(span)), time.monotonic()

    def end_process(
        self, span: Any, token: Any, start: float, error: BaseException | None = None
    ) -> None:
        """Detach and end a ``process`` span (recording ``error`` if processing raised), and
        count its duration in the client's messaging.process.duration histogram."""
        try:
            otel_context.detach(token)
        finally:
            if error is not None:
                span.set_attribute("error.type", error_type(error))
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, str(error)))
            span.end()
            if self.metrics is not None:
                topic = (
                    span.attributes.get("messaging.destination.name")
                    if hasattr(span, "attributes")
                    else None
                )
                self.metrics.processed(topic or "", time.monotonic() - start)

    def end_open(self, started: tuple[Any, Any, float] | None) -> tuple[Any, Any, float] | None:
        """End a ``(span, token)`` of :meth:`start_process` if there is one; returns None (for
        ``self._open = tracing.end_open(self._open)``)."""
        if started is not None:
            self.end_process(*started)
        return None

    @contextmanager
    def process(self, record: Any) -> Iterator[Any]:
        """``with tracing.process(record):`` the record's ``process`` span around a block."""
        span, token, start = self.start_process(record)
        error: BaseException | None = None
        try:
            yield span
        except BaseException as exc:
            error = exc
            raise
        finally:
            self.end_process(span, token, start, error)

    @contextmanager
    def task(
        self, operation: str, topic: str | None, partition: int | None = None, **attrs: Any
    ) -> Iterator[dict[str, Any]]:
        """A span around one Spark task (``send`` for the sink: current while it runs, so the
        messages' spans are its children; ``receive`` for the source: not made current, as it
        spans a generator); set ``count`` in the yielded dict to record
        ``messaging.batch.message_count``."""
        sink = operation == "send"
        span = self.tracer.start_span(
            self.span_name(operation, topic),
            kind=SpanKind.PRODUCER if sink else SpanKind.CONSUMER,
            attributes=self.attributes(
                operation, "send" if sink else "receive", topic, partition, **attrs
            ),
        )
        token = otel_context.attach(trace.set_span_in_context(span)) if sink else None
        done: dict[str, Any] = {"count": None}
        try:
            yield done
        except BaseException as exc:
            span.set_attribute("error.type", error_type(exc))
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            raise
        finally:
            if token is not None:
                otel_context.detach(token)
            if done["count"] is not None:
                span.set_attribute("messaging.batch.message_count", done["count"])
            span.end()

    def each(self, records: Iterable[Any]) -> Iterator[Any]:
        """Yield ``records``, each inside its ``process`` span (ended when the next is asked
        for, or when the iteration stops)."""
        for r in records:
            started = self.start_process(r)
            try:
                yield r
            finally:
                self.end_process(*started)


def _version() -> str | None:
    """kclient's installed version, for the tracer's instrumentation scope."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kclient")
    except PackageNotFoundError:
        return None


def now_ns() -> int:
    """A span start time (epoch ns)."""
    return time.time_ns()
