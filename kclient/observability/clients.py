"""Tracing hooks of the faces: each wraps a client's public calls once, at construction.

A client calls these only when :func:`kclient.observability.tracing_for` gave it a Tracing, so
its own fast paths stay as they are when tracing is off.  Producers: every message gets a
``send`` span and its context in the headers; the span ends at the message's delivery report
(threaded Producer) or future (AIOProducer).  Consumers become their traced subclass
(:mod:`.traced`): a ``poll`` span per non-empty poll, a ``process`` span per record handed out
by iteration; the class switch costs the untraced ones nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from .tracing import Tracing

# (the faces are typed Any here: they import this module, so it must not import them)

__all__ = [
    "ProducerSpans",
    "trace_producer",
    "trace_consumer",
    "trace_aio_producer",
    "trace_aio_consumer",
    "traced_stream",
]


#: open send spans kept at most per producer (the queue holds 100,000 messages by default)
MAX_OPEN = 1_000_000


class _NoReport(Exception):
    """``error.type`` of a send span ended without its delivery report."""


class ProducerSpans:
    """The open ``send`` spans of a threaded Producer, found again by their message's headers
    list (the producer keeps that very list object from ``send()`` to the delivery report)."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing
        self._open: dict[int, tuple[Any, list[Any]]] = {}
        self._lock = threading.Lock()

    def start(
        self, topic: str, key: Any, partition: int | None, headers: Sequence[tuple[str, Any]] | None
    ) -> list[tuple[str, Any]]:
        """Start a message's span; the headers to send it with."""
        span, out = self.tracing.start_send(topic, key, partition, headers)
        stale = None
        with self._lock:
            self._open[id(out)] = (span, out)
            if len(self._open) > MAX_OPEN:  # a hook dropped messages: no report will come
                stale = self._open.pop(next(iter(self._open)))
        if stale is not None:
            self.tracing.end_send(
                stale[0],
                -1,
                -1,
                _NoReport(
                    f"more than {MAX_OPEN} messages awaited their delivery report; the oldest "
                    "span was ended without one"
                ),
            )
        return out

    def fail(self, headers: list[Any], error: BaseException) -> None:
        """A message that was not queued after all: end its span with ``error``."""
        with self._lock:
            entry = self._open.pop(id(headers), None)
        if entry is not None:
            self.tracing.end_send(entry[0], -1, -1, error)

    def wrap_deliver(self, deliver: Callable[..., None]) -> Callable[..., None]:
        """The producer's delivery, ending the reported messages' spans first."""

        def deliver_traced(reports: list[Any], keep_failures: bool = True) -> None:
            self.delivered(reports)
            deliver(reports, keep_failures)

        return deliver_traced

    def delivered(self, reports: list[Any]) -> None:
        """End the spans of the reported messages."""
        end = self.tracing.end_send
        for r in reports:
            for m, offset in r:
                h = m.headers
                if h is None:
                    continue
                with self._lock:
                    entry = self._open.pop(id(h), None)
                if entry is not None and entry[1] is h:
                    end(entry[0], r.partition, offset, r.error)


def trace_producer(p: Any, spans: ProducerSpans, ProducerData: Any) -> None:  # noqa: N803
    """Wrap ``p.send``, ``p.produce`` and ``p.send_values`` of a Producer: a span per message
    (``spans.wrap_deliver`` ends them; the producer wraps its delivery with it first)."""
    send, produce = p.send, p.produce

    def traced(d: Any) -> Any:
        if not isinstance(d, ProducerData):
            return d  # the producer's own check says what is wrong
        h = spans.start(d.topic, d.key, d.partition, d.headers)
        return ProducerData(d.topic, d.value, d.key, d.partition, d.timestamp, h)

    def send_traced(data: Any, *wrong: Any, **wrong_kw: Any) -> Any:
        if wrong or wrong_kw:
            return send(data, *wrong, **wrong_kw)
        items = (
            [traced(data)]
            if isinstance(data, ProducerData)
            else [traced(d) for d in data]
            if isinstance(data, (list, tuple))
            else None
        )
        if items is None:
            return send(data)
        try:
            return send(items[0] if isinstance(data, ProducerData) else items)
        except Exception as exc:
            for d in items:
                if isinstance(d, ProducerData) and d.headers is not None:
                    spans.fail(d.headers, exc)
            raise

    def produce_traced(
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Any = None,
        timestamp: int | None = None,
        on_delivery: Any = None,
    ) -> Any:
        h = spans.start(topic, key, partition, headers)
        try:
            return produce(topic, value, key, partition, h, timestamp, on_delivery)
        except Exception as exc:
            spans.fail(h, exc)
            raise

    def send_values_traced(topic: str, values: Sequence[Any]) -> Any:
        return send_traced([ProducerData(topic, v) for v in values])

    _doc(send_traced, send)
    _doc(produce_traced, produce)
    p.send = send_traced  # type: ignore[method-assign]
    p.produce = produce_traced  # type: ignore[method-assign]
    p.send_values = send_values_traced  # type: ignore[method-assign]


def trace_consumer(c: Any, tracing: Tracing) -> None:
    """Switch a kclient.Consumer to its traced class: a ``poll`` span per poll that returned
    records, a ``process`` span per record of ``for record in c``."""
    from .traced import TracedPoll, traced_class

    c._tracing = tracing
    c.__class__ = traced_class(TracedPoll, type(c))


def trace_aio_producer(p: Any, tracing: Tracing) -> None:
    """Wrap ``p.enqueue`` (``send()`` goes through it): the span ends with the future."""
    enqueue = p.enqueue

    async def enqueue_traced(
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Any = None,
        **more: Any,
    ) -> Any:
        span, h = tracing.start_send(topic, key, partition, headers)
        try:
            fut = await enqueue(topic, value, key, partition, timestamp_ms, h, **more)
        except BaseException as exc:
            tracing.end_send(span, -1, -1, exc)
            raise
        fut.add_done_callback(lambda f: _end_aio(tracing, span, f))
        return fut

    _doc(enqueue_traced, enqueue)
    p.enqueue = enqueue_traced  # type: ignore[method-assign]


def _end_aio(tracing: Tracing, span: Any, fut: Any) -> None:
    if fut.cancelled():
        tracing.end_send(span, -1, -1, _Cancelled("the send was cancelled"))
    elif fut.exception() is not None:
        tracing.end_send(span, -1, -1, fut.exception())
    else:
        md = fut.result()
        tracing.end_send(span, md.partition, md.offset, None)


class _Cancelled(Exception):
    """``error.type`` of a cancelled send."""


def trace_aio_consumer(c: Any, tracing: Tracing) -> None:
    """Switch an AIOConsumer to its traced class (``poll`` spans for getmany, ``process``
    spans for ``async for``)."""
    from .traced import TracedAsync, traced_class

    c._tracing = tracing
    c.__class__ = traced_class(TracedAsync, type(c))


def trace_share_consumer(c: Any, tracing: Tracing) -> None:
    """Switch a ShareConsumer or AIOShareConsumer to its traced class (``poll`` spans,
    ``process`` spans for iteration)."""
    from .traced import TracedShareAsync, TracedSharePoll, traced_class

    mixin = TracedShareAsync if hasattr(type(c), "__aiter__") else TracedSharePoll
    c._tracing = tracing
    c.__class__ = traced_class(mixin, type(c))


def traced_stream(cls: type, tracing: Tracing, *args: Any) -> Any:
    """A traced ``cls(*args)`` (a KafkaStream: a ``process`` span per message it hands out;
    made as such, since a KafkaStream's class cannot be switched)."""
    from .traced import TracedStream, traced_class

    s = traced_class(TracedStream, cls)(*args)
    s._tracing = tracing
    return s


def _doc(wrapper: Callable[..., Any], inner: Callable[..., Any]) -> None:
    wrapper.__doc__ = inner.__doc__
    wrapper.__name__ = getattr(inner, "__name__", wrapper.__name__)
