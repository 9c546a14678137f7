"""Which ``send()``, ``produce()`` and ``send_values()`` a Producer instance runs: chosen here, once.

The class's methods of those names only document the calls; :func:`bind` gives each instance
the functions its configuration calls for, so the common case pays for no test it does not need
(no mode switch, no hook check, no transaction check per message).  The choice:

=========  =========================  ==========  ==================  ====================
mode       CallbackHandler hooks      C build     ``send``            ``produce``
=========  =========================  ==========  ==================  ====================
sync       none (and no tracing)      any         :func:`sync_send`   ``_produce_sync``
sync       any                        any         ``_send_sync``      ``_produce_sync``
async      before/after_enqueue       any         ``_send_hooked``    refuses (hooks)
async      a queue hook               built       C ``FastSend``      refuses (hooks)
async      none                       built       C ``FastSend``      ``FastSend.produce`` *
async      none or a queue hook       not built   :func:`fast_send`   :func:`fast_produce` *
=========  =========================  ==========  ==================  ====================

(* behind a first call that switches future resolution on, then replaced by the function
itself.)  ``KCLIENT_PURE_PYTHON=1`` makes "not built" (the Python twins of the C code).  On top
of the chosen functions, in this order: tracing (a tracer provider set: a span per message,
:func:`kclient.observability.clients.trace_producer`), then a ``transactional.id`` guard (every
send checks the transaction state first).  ``Producer.send_path`` names the result, e.g.
``"async-c"`` or ``"sync+traced+transactional"``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import sleep as _yield
from typing import TYPE_CHECKING, Any, Protocol

from kclient._args import one_of

from .data import DeliveryReport, Entry, Header, ProducerData, speedups
from .data_methods import NO, wrong_call, wrong_send
from .event_handler import DefaultEventHandler
from .future import DeliveryCallback, DeliveryFuture

if TYPE_CHECKING:
    from .buffers import BytesLike
    from .send_thread import ProducerSendThread
    from .transactions import Transactions

__all__ = ["bind", "choose", "fast_send", "fast_produce"]

#: CallbackHandler hooks that take ProducerData off or onto the queue: produce() cannot run them
QUEUE_HOOKS = frozenset(
    {"before_enqueue", "after_enqueue", "after_dequeuing_existing_data", "before_sending_data"}
)
ENQUEUE_HOOKS = frozenset({"before_enqueue", "after_enqueue"})

SendFn = Callable[..., "list[DeliveryReport] | None"]
ProduceFn = Callable[..., DeliveryFuture]


class Producer(Protocol):
    """What the choice reads of a :class:`kclient.producer.producer.Producer` (the Producer
    module imports this one, so not the class itself)."""

    sync: bool
    _hooks: Any
    _queue: Any
    _fast_limit: int
    _tracing: Any
    _spans: Any
    _txn: Transactions | None
    _futures: bool
    _closed: bool
    event_handler: Any
    max_message_bytes: int
    stats: dict[str, int]
    _stats_lock: Any
    _sync_lock: Any
    on_delivery: Callable[[DeliveryReport], Any] | None

    def _deliver(self, reports: list[DeliveryReport], keep_failures: bool = True) -> None: ...

    def _sync_outcome(self, reports: list[DeliveryReport]) -> list[DeliveryReport]: ...

    def send(self, *args: Any, **kwargs: Any) -> list[DeliveryReport] | None: ...

    def produce(self, *args: Any, **kwargs: Any) -> DeliveryFuture: ...

    def send_values(self, *args: Any, **kwargs: Any) -> list[DeliveryReport] | None: ...

    def _send_sync(self, *args: Any, **kwargs: Any) -> Any: ...

    def _produce_sync(self, *args: Any, **kwargs: Any) -> Any: ...

    def _send_hooked(self, *args: Any, **kwargs: Any) -> Any: ...

    def _produce_hooked(self, *args: Any, **kwargs: Any) -> Any: ...

    def _check_size(self, d: ProducerData) -> None: ...

    def _enqueue_slow(self, entries: list[Entry]) -> None: ...

    def _send_many(self, data: Any) -> None: ...

    @property
    def _sender(self) -> ProducerSendThread: ...


def choose(p: Producer) -> tuple[str, SendFn, ProduceFn]:
    """The table of the module docstring: (name, send, produce) for ``p``'s configuration."""
    if p.sync:
        handler = type(p.event_handler)
        if p._hooks or p._tracing is not None or handler.handle is not DefaultEventHandler.handle:
            return "sync", p._send_sync, p._produce_sync  # (a handler's own handle() runs)
        return "sync-lane", sync_send(p), p._produce_sync
    c = "c" if speedups is not None else "python"
    if p._hooks & ENQUEUE_HOOKS:
        return "async-hooked", p._send_hooked, p._produce_hooked
    send = fast_send(p)
    if p._hooks & QUEUE_HOOKS:
        return f"async-{c}-hooked", send, p._produce_hooked
    return f"async-{c}", send, _first_produce(p, fast_produce(p))


def bind(p: Producer) -> str:
    """Give ``p`` its send, produce and send_values (see the module docstring); the path's name."""
    name, send, produce = choose(p)
    _install(p, send=send, produce=produce)
    if p._tracing is not None:
        from kclient.observability.clients import trace_producer

        trace_producer(p, p._spans, ProducerData)
        name += "+traced"
    if p._txn is not None:
        _guard(p)
        name += "+transactional"
    return name


def _install(p: Producer, **functions: Callable[..., Any]) -> None:
    """Set instance attributes that shadow the class's methods (the one place that does)."""
    vars(p).update(functions)


def sync_send(p: Producer) -> SendFn:
    """The sync ``send`` without CallbackHandler hooks or tracing: one ProducerData goes
    straight to the handler's sync lane (sync_lane.py), and its acknowledgement is counted
    here; a list, a message the lane declines (nothing sent) and any other outcome take
    ``_send_sync``'s way (issue 23's sync latency: the fewest steps per message)."""
    lane: Callable[[ProducerData], list[DeliveryReport] | None] = p.event_handler.send_one
    general: SendFn = p._send_sync
    lock = p._sync_lock
    limit, stats, stats_lock, pd = p.max_message_bytes, p.stats, p._stats_lock, ProducerData

    def send(
        data: ProducerData | list[ProducerData], *wrong: Any, **wrong_kw: Any
    ) -> list[DeliveryReport] | None:
        if type(data) is not pd or wrong or wrong_kw or p._closed:
            return general(data, *wrong, **wrong_kw)
        v = data.value
        if type(v) is not bytes or len(v) > limit:  # the lane takes no key: this is its size
            return general(data)
        with lock:
            try:
                reports = lane(data)
            except Exception as exc:  # noqa: BLE001 - as _sync_reports: this message fails
                reports = [DeliveryReport(data.topic, -1, [data], -1, exc)]
        if reports is None:
            return general(data)
        if reports[0].error is None and len(reports) == 1 and not p._futures:
            if p.on_delivery is None:
                with stats_lock:
                    stats["acknowledged"] += 1
                    stats["batches"] += 1
                return reports
        p._deliver(reports, keep_failures=False)
        return p._sync_outcome(reports)

    send.__doc__ = type(p).send.__doc__
    return send


def fast_send(p: Producer) -> SendFn:
    """The async ``send``: a closure over its state, a few checks and a deque append.

    The queue gets a tuple ``(topic, value)`` (plus key, partition, timestamp, headers when
    set), not the ProducerData: see :mod:`kclient.producer.data` for why.  ``t.limit`` (not
    a constant) is read so that close() can make every later call take the slow path and be
    refused, even through a saved reference to ``send``.
    """
    q, t, limit = p._queue, p._sender, p._fast_limit
    check, slow, many, pd = p._check_size, p._enqueue_slow, p._send_many, ProducerData
    doc = type(p).send.__doc__
    if speedups is not None:  # the same steps in C (kclient/producer/_speedups.pyx)
        fast: SendFn = speedups.FastSend(q, t, limit, pd, check, slow, many, doc)
        return fast

    def send(
        data: ProducerData | list[ProducerData],
        value: Any = NO,
        key: Any = NO,
        partition: Any = NO,
        headers: Any = NO,
        timestamp: Any = NO,
        timestamp_ms: Any = NO,
        on_delivery: Any = NO,
    ) -> list[DeliveryReport] | None:
        # (the catch-all parameters make a kafka-python style call a clear error, at no
        # cost per call, where **kwargs would build a dict each time)
        if not (
            value is key is partition is headers is timestamp is timestamp_ms is on_delivery is NO
        ):
            raise wrong_call(
                data, value, key, partition, headers, timestamp, timestamp_ms, on_delivery
            )
        if type(data) is pd:
            v = data.value
            x = data._extra
            entry: Entry
            if x is None and (type(v) is bytes or type(v) is bytearray) and len(v) <= limit:
                entry = (data.topic, v)
            else:
                check(data)
                entry = (data.topic, v) if x is None else (data.topic, v) + x
            n = len(q)
            if n >= t.limit:
                return slow([entry])
            q.append(entry)
            if n >= t.wake_at:
                t.wake()
            elif not n & 1023:
                # let the send thread have the GIL if it waits for it (it does after every
                # socket call); without this it waits for the 5 ms switch interval
                _yield(0)
            return None
        return many(data)

    send.__doc__ = doc
    return send


def fast_produce(p: Producer) -> ProduceFn:
    """The async ``produce``: send()'s fast path with a future on the queue entry."""
    q, t, limit = p._queue, p._sender, p._fast_limit
    slow, check, new = p._enqueue_slow, p._check_size, DeliveryFuture
    doc = type(p).produce.__doc__
    if speedups is not None:  # the same steps in C (kclient/producer/_speedups.pyx)
        fast: ProduceFn = speedups.FastSend(
            q, t, limit, ProducerData, check, slow, None, doc, new
        ).produce
        return fast

    def produce(
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Sequence[Header] | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
        callback: DeliveryCallback | None = None,
        timestamp_ms: int | None = None,
    ) -> DeliveryFuture:
        entry: Entry
        if callback is not None or timestamp_ms is not None:
            on_delivery = one_of("produce()", on_delivery=on_delivery, callback=callback)
            timestamp = one_of("produce()", timestamp=timestamp, timestamp_ms=timestamp_ms)
        if key is None and partition is None and timestamp is None and headers is None:
            f = new(on_delivery)
            if (type(value) is not bytes and type(value) is not bytearray) or len(value) > limit:
                check(ProducerData(topic, value))
            entry = (topic, value, f)
        else:
            f = new(on_delivery, timestamp)
            check(ProducerData(topic, value, key))
            entry = (topic, value, key, partition, timestamp, headers, f)
        n = len(q)
        if n >= t.limit:
            slow([entry])
            return f
        q.append(entry)
        if n >= t.wake_at:
            t.wake()
        elif not n & 1023:
            _yield(0)
        return f

    produce.__doc__ = doc
    return produce


def _first_produce(p: Producer, produce: ProduceFn) -> ProduceFn:
    """``produce`` behind a first call that switches future resolution on: a producer that
    only send()s never looks for futures in its reports."""

    def first_produce(*args: Any, **kwargs: Any) -> DeliveryFuture:
        p._futures = True
        if p._txn is None and p._tracing is None:  # (a guard or tracing stays in front)
            _install(p, produce=produce)
        return produce(*args, **kwargs)

    first_produce.__doc__ = type(p).produce.__doc__
    return first_produce


def _guard(p: Producer) -> None:
    """A transactional producer sends only inside a transaction it began."""
    txn = p._txn
    assert txn is not None
    send, send_values, produce = p.send, p.send_values, p.produce
    cls = type(p)

    def guarded_send(
        data: ProducerData | list[ProducerData], *wrong: Any, **wrong_kw: Any
    ) -> list[DeliveryReport] | None:
        if wrong or wrong_kw:
            raise wrong_send((data, *wrong), wrong_kw)
        txn.check_send()
        return send(data)

    def guarded_produce(*args: Any, **kwargs: Any) -> DeliveryFuture:
        txn.check_send()
        return produce(*args, **kwargs)

    def guarded_send_values(topic: str, values: Sequence[BytesLike]) -> list[DeliveryReport] | None:
        txn.check_send()
        return send_values(topic, values)

    guarded_send.__doc__ = cls.send.__doc__
    guarded_send_values.__doc__ = cls.send_values.__doc__
    guarded_produce.__doc__ = cls.produce.__doc__
    _install(p, send=guarded_send, produce=guarded_produce, send_values=guarded_send_values)
