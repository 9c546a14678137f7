"""AIOConsumer driven from threads as kclient.Consumer is, so the group scenarios (cooperative
handover, static restart, mixed groups with Java) and the consumer tests run against both
drivers: the consumer lives on its own event loop in a thread; ``poll`` is ``getmany`` and every
other call (commit, committed, close, ...) runs on that loop."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

from kclient.aio import AIOConsumer

from .coop_scenario import Member


class _Blocking:
    """AIOConsumer's methods as blocking calls from another thread (coroutines run on the
    member's loop; plain methods are called there too)."""

    def __init__(self, consumer: AIOConsumer, loop: asyncio.AbstractEventLoop) -> None:
        self._consumer, self._loop = consumer, loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._consumer, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            async def run() -> Any:
                result = attr(*args, **kwargs)
                return await result if inspect.isawaitable(result) else result

            return asyncio.run_coroutine_threadsafe(run(), self._loop).result(60)

        return call


class BlockingAIOConsumer(_Blocking):
    """An AIOConsumer driven from a test's thread as kclient.Consumer is: ``poll(timeout_ms)``
    is ``getmany``; every other method runs on the consumer's own loop (coroutines awaited)."""

    def __init__(self, *args: Any, **config: Any) -> None:
        loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, daemon=True, name="aio-loop")
        self._thread.start()

        async def make() -> AIOConsumer:
            return AIOConsumer(*args, **config)

        super().__init__(asyncio.run_coroutine_threadsafe(make(), loop).result(30), loop)
        self._done = False

    @property
    def aio(self) -> AIOConsumer:
        return self._consumer

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> Any:
        return self.getmany(timeout_ms=timeout_ms, max_records=max_records)

    def close(self, autocommit: bool = True) -> None:
        if self._done:
            return
        self._done = True
        try:
            self.__getattr__("close")(autocommit)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


def aio_member(name: str, conf: dict[str, Any], events: list) -> Member:
    """A scenario member whose consumer is an AIOConsumer (polled from the member's thread)."""
    return Member(name, BlockingAIOConsumer(dict(conf)), events)  # type: ignore[arg-type]
