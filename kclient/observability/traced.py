"""Traced variants of the consumers, as mixins: an instance is switched at construction, when
tracing is on (:mod:`.clients`), to a subclass of its own class with one of these in front.

The classes users construct keep their untouched code, and this module imports none of them
(the faces import the observability package, not the other way round).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from .tracing import Tracing, now_ns

__all__ = [
    "TracedAsync",
    "TracedPoll",
    "TracedShareAsync",
    "TracedSharePoll",
    "TracedStream",
    "traced_class",
]

_CLASSES: dict[tuple[type, type], type] = {}


def traced_class(mixin: type, cls: type) -> type:
    """``class Traced<cls>(mixin, cls)``, made once per pair."""
    made = _CLASSES.get((mixin, cls))
    if made is None:
        made = _CLASSES[(mixin, cls)] = type(
            f"Traced{cls.__name__}", (mixin, cls), {"__doc__": cls.__doc__}
        )
    return made


class TracedPoll:
    """kclient.Consumer: a ``poll`` span per poll that returned records, a ``process`` span
    per record of ``for record in consumer``."""

    _tracing: Tracing

    def poll(self, *args: Any, **kwargs: Any) -> Any:
        """(traced) see Consumer.poll."""
        start = now_ns()
        out = super().poll(*args, **kwargs)  # type: ignore[misc]
        self._tracing.received_batches(out, start)
        return out

    def __iter__(self) -> Iterator[Any]:
        return self._tracing.each(super().__iter__())  # type: ignore[misc]


class TracedAsync:
    """AIOConsumer: ``poll`` spans for getmany, ``process`` spans for ``async for`` (each
    ended when the next record is asked for, or at close)."""

    _tracing: Tracing
    _processing: tuple[Any, Any, float] | None = None

    async def getmany(self, *partitions: Any, **kwargs: Any) -> Any:
        """(traced) see AIOConsumer.getmany."""
        start = now_ns()
        out = await super().getmany(*partitions, **kwargs)  # type: ignore[misc]
        self._tracing.received_batches(out, start)
        return out

    async def __anext__(self) -> Any:
        self._processing = self._tracing.end_open(self._processing)
        rec = await super().__anext__()  # type: ignore[misc]
        self._processing = self._tracing.start_process(rec)
        return rec

    async def close(self, autocommit: bool = True) -> None:
        """(traced) see AIOConsumer.close."""
        self._processing = self._tracing.end_open(self._processing)
        await super().close(autocommit)  # type: ignore[misc]

    stop = close


class TracedStream:
    """KafkaStream: a ``process`` span per message handed out."""

    _tracing: Tracing
    _span: tuple[Any, Any, float] | None = None

    def __iter__(self) -> Iterator[Any]:
        self._span = self._tracing.end_open(self._span)
        return self._tracing.each(super().__iter__())  # type: ignore[misc]

    def __next__(self) -> Any:
        self._span = self._tracing.end_open(self._span)
        m = super().__next__()  # type: ignore[misc]
        self._span = self._tracing.start_process(m)
        return m

    next = __next__


class TracedSharePoll:
    """ShareConsumer: a ``poll`` span per poll that returned records, a ``process`` span per
    record of ``for record in consumer``."""

    _tracing: Tracing

    def poll(self, *args: Any, **kwargs: Any) -> Any:
        """(traced) see ShareConsumer.poll."""
        start = now_ns()
        out = super().poll(*args, **kwargs)  # type: ignore[misc]
        self._tracing.received(out, start)
        return out

    def __iter__(self) -> Iterator[Any]:
        return self._tracing.each(super().__iter__())  # type: ignore[misc]


class TracedShareAsync:
    """AIOShareConsumer: ``poll`` spans, and ``process`` spans for ``async for`` (each ended
    when the next record is asked for, or at close)."""

    _tracing: Tracing
    _processing: tuple[Any, Any, float] | None = None
    _records: AsyncIterator[Any] | None = None

    async def poll(self, *args: Any, **kwargs: Any) -> Any:
        """(traced) see AIOShareConsumer.poll."""
        start = now_ns()
        out = await super().poll(*args, **kwargs)  # type: ignore[misc]
        self._tracing.received(out, start)
        return out

    def __aiter__(self) -> AsyncIterator[Any]:
        self._records = super().__aiter__()  # type: ignore[misc]
        return self  # type: ignore[return-value]

    async def __anext__(self) -> Any:
        self._processing = self._tracing.end_open(self._processing)
        assert self._records is not None
        rec = await self._records.__anext__()
        self._processing = self._tracing.start_process(rec)
        return rec

    async def close(self, *args: Any, **kwargs: Any) -> None:
        """(traced) see AIOShareConsumer.close."""
        self._processing = self._tracing.end_open(self._processing)
        await super().close(*args, **kwargs)  # type: ignore[misc]
