"""``asyncio.wait_for`` without its lost cancellations, for every bounded wait of the asyncio driver.

Before Python 3.12, ``asyncio.wait_for`` returns the awaited result when it finished in the same
loop turn as a cancellation of the caller, and the cancelled task goes on as if nothing had
happened (CPython gh-86296).  A task that should stop then waits forever at its next ``await``:
``AIOConsumer.close()`` waited for ever for its fetch task, cancelled while reconnecting after a
broken Fetch answer (issue 25, the hostile broker's ``garbage`` and ``short`` answers).
:func:`within` waits with ``asyncio.wait`` instead, so a cancellation always raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["within"]

T = TypeVar("T")


async def within(
    aw: Awaitable[T], timeout: float | None, discard: Callable[[T], None] | None = None
) -> T:
    """Await ``aw`` for at most ``timeout`` seconds (None: unbounded); raise
    ``asyncio.TimeoutError`` after that (``aw`` cancelled).  A cancellation of the caller is
    raised, never lost; ``discard`` is given a result that arrives when nobody takes it any
    more (a stream opened just as its caller was cancelled or timed out)."""
    fut = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait({fut}, timeout=timeout)
    except asyncio.CancelledError:
        _abandon(fut, discard)
        raise
    if not done:
        _abandon(fut, discard)
        raise asyncio.TimeoutError()
    return fut.result()


def _abandon(fut: asyncio.Future[T], discard: Callable[[T], None] | None) -> None:
    """Cancel ``fut``; whatever it still ends with is retrieved (a result given to ``discard``)."""

    def settle(f: asyncio.Future[T]) -> None:
        if f.cancelled() or f.exception() is not None:
            return
        if discard is not None:
            discard(f.result())

    fut.cancel()
    fut.add_done_callback(settle)
