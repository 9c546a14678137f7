"""DeliveryFuture: the outcome of one message sent with ``Producer.produce``.

A ``concurrent.futures.Future`` (``result``, ``exception``, ``done``, ``add_done_callback``,
``concurrent.futures.wait`` and ``as_completed``; ``asyncio.wrap_future`` and ``await`` work)
that resolves to a :class:`RecordMetadata` or raises the message's delivery error.

It is built for a million a second: creating one stores four fields (the base class's lock,
condition and lists are not made), and resolving one on the send thread stores two, its batch's
outcome (one tuple per :class:`DeliveryReport`: topic, partition, base offset, error, timestamps)
and its index in the batch; the RecordMetadata is made when asked for.  A future holds no
reference back to its report, so no reference cycle is made per message, and the C speed-ups
take futures and their queue entries out of the cycle collector (which otherwise cost more than
everything else in ``produce()``: 0.65 us of 2.2 us per message).  Only a future someone waits
on, or adds a callback to, gets a ``threading.Condition``.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from .data import DeliveryReport, RecordMetadata, speedups

__all__ = ["DeliveryFuture", "DeliveryCallback"]

log = logging.getLogger("kclient.producer")

#: ``on_delivery(error, metadata)``: error None when delivered; metadata always given (offset -1
#: on error), as confluent-kafka's ``on_delivery(err, msg)``
DeliveryCallback = Callable[[BaseException | None, RecordMetadata], Any]

#: (topic, partition, base_offset, error, log_append_time, create_time) of a report
Outcome = tuple[str, int, int, "BaseException | None", int, int]

_MAKE = threading.Lock()  # makes one future's condition (rare: only when someone waits)


class _FutureMethods(cf.Future[RecordMetadata]):
    """What a DeliveryFuture does; its fields come from the class below it (Python slots, or
    the C speed-ups' FutureCore)."""

    __slots__ = ()
    _outcome: Outcome | None
    _index: int
    _on_delivery: DeliveryCallback | None
    _ts: int | None
    _cond: threading.Condition | None

    # ------------------------------------------------------------------ resolving (send thread)
    def _finish(self) -> None:
        """After ``_outcome`` was set: the per-message callback, then waiters and callbacks."""
        cb = self._on_delivery
        if cb is not None:
            self._on_delivery = None  # (a closure over this future makes no lasting cycle)
            try:
                cb(self._error(), self._metadata())
            except Exception:
                log.exception("produce() on_delivery callback raised")
        cond = self._cond
        if cond is None:
            return
        with cond:
            listeners = getattr(self, "_listeners", None)
            self._listeners: list[Callable[[cf.Future[RecordMetadata]], object]] | None = None
            error = self._error()
            for w in getattr(self, "_cf_waiters", ()):
                w.add_exception(self) if error is not None else w.add_result(self)
            cond.notify_all()
        for fn in listeners or ():
            self._call(fn)

    def _set(self, report: DeliveryReport, index: int) -> None:
        """Resolve with message ``index`` of ``report`` (:func:`resolve` does it in bulk)."""
        self._index = index
        self._outcome = outcome(report)
        if self._cond is not None or self._on_delivery is not None:
            self._finish()

    def _error(self) -> BaseException | None:
        o = self._outcome
        return None if o is None else o[3]

    def _metadata(self) -> RecordMetadata:
        o = self._outcome
        assert o is not None
        topic, partition, base, error, append_time, create_time = o
        offset = base + self._index if error is None and base >= 0 else -1
        ts = append_time if append_time >= 0 else self._ts if self._ts is not None else create_time
        return RecordMetadata(topic, partition, offset, ts)

    # ------------------------------------------------------------------ waiting (any thread)
    def _condition_(self) -> threading.Condition:
        cond = self._cond
        if cond is None:
            with _MAKE:
                cond = self._cond
                if cond is None:
                    cond = self._cond = threading.Condition()
        return cond

    def _wait(self, timeout: float | None) -> Outcome:
        o = self._outcome
        if o is None:
            cond = self._condition_()
            with cond:  # the send thread stores _outcome before it looks for _cond
                if self._outcome is None:
                    cond.wait(timeout)
            o = self._outcome
            if o is None:
                raise cf.TimeoutError(f"message not delivered within {timeout}s")
        return o

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """The message's RecordMetadata once acknowledged; raises its delivery error, or
        ``concurrent.futures.TimeoutError`` after ``timeout`` seconds."""
        error = self._wait(timeout)[3]
        if error is not None:
            raise error
        return self._metadata()

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """kafka-python's name of :meth:`result`."""
        return self.result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The delivery error, or None once delivered (waits like :meth:`result`)."""
        return self._wait(timeout)[3]

    def done(self) -> bool:
        return self._outcome is not None

    def running(self) -> bool:
        return self._outcome is None

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        """A queued message cannot be taken back: always False."""
        return False

    def set_running_or_notify_cancel(self) -> bool:
        return True

    def add_done_callback(self, fn: Callable[[cf.Future[RecordMetadata]], object]) -> None:
        """Call ``fn(future)`` when resolved (on the send thread), or now if it is."""
        if self._outcome is None:
            cond = self._condition_()
            with cond:
                if self._outcome is None:
                    if getattr(self, "_listeners", None) is None:
                        self._listeners = []
                    assert self._listeners is not None
                    self._listeners.append(fn)
                    return
        self._call(fn)

    def _call(self, fn: Callable[[cf.Future[RecordMetadata]], object]) -> None:
        try:
            fn(self)
        except Exception:
            log.exception("exception calling callback for %r", self)

    def set_result(self, result: RecordMetadata) -> None:
        raise RuntimeError("a DeliveryFuture is resolved by its producer")

    def set_exception(self, exception: BaseException | None) -> None:
        raise RuntimeError("a DeliveryFuture is resolved by its producer")

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        """``await producer.produce(...)`` inside a coroutine (through asyncio.wrap_future)."""
        import asyncio

        return asyncio.wrap_future(self).__await__()

    def __repr__(self) -> str:
        o = self._outcome
        if o is None:
            return "<DeliveryFuture pending>"
        if o[3] is not None:
            return f"<DeliveryFuture failed: {o[3]!r}>"
        return f"<DeliveryFuture {self._metadata()!r}>"

    # ------------------------------------------------------------------ concurrent.futures
    # wait() and as_completed() use the base class's internals: these give them on demand
    @property
    def _condition(self) -> threading.Condition:  # type: ignore[override]
        return self._condition_()

    @property
    def _state(self) -> str:  # type: ignore[override]
        return "FINISHED" if self._outcome is not None else "RUNNING"

    @property
    def _waiters(self) -> list[Any]:  # type: ignore[override]
        cond = self._condition_()
        with cond:
            if getattr(self, "_cf_waiters", None) is None:
                self._cf_waiters: list[Any] = []
            return self._cf_waiters


class DeliveryFuture(_FutureMethods):
    """Where one produced message landed, or why it failed (see the module docstring)."""

    __slots__ = ("_outcome", "_index", "_on_delivery", "_ts", "_cond", "_listeners", "_cf_waiters")

    def __init__(
        self, on_delivery: DeliveryCallback | None = None, timestamp: int | None = None
    ) -> None:
        # the base class's __init__ is not run: its lock and lists are made when needed
        #: (topic, partition, base_offset, error, log_append_time, create_time) once resolved
        self._outcome = None
        self._on_delivery = on_delivery
        self._ts = timestamp
        self._cond = None


#: the Python class, whichever one ``DeliveryFuture`` names at run time
_PyDeliveryFuture = DeliveryFuture

if not TYPE_CHECKING and speedups is not None:

    class DeliveryFuture(speedups.FutureCore, _FutureMethods):
        # the fields in C: made without running Python code, resolved by C stores
        __slots__ = ("_listeners", "_cf_waiters")
        __doc__ = _PyDeliveryFuture.__doc__


def outcome(r: DeliveryReport) -> Outcome:
    """What the futures of a report's messages keep of it."""
    return (r.topic, r.partition, r.base_offset, r.error, r.timestamp, r.create_time)


def resolve(reports: list[DeliveryReport]) -> None:
    """Resolve the futures of ``produce()`` messages in ``reports`` (queue entries of three or
    seven fields carry their future last: see :mod:`kclient.producer.data`).  The C speed-ups
    have a twin of this (``_speedups.resolve``)."""
    for r in reports:
        es = r._entries
        if es is None:
            continue
        o = outcome(r)
        for i, e in enumerate(es):
            n = len(e)
            if n == 3 or n == 7:
                f = e[n - 1]
                f._index = i
                f._outcome = o
                if f._cond is not None or f._on_delivery is not None:
                    f._finish()
