"""Waiting on something observable instead of sleeping a fixed time (issue 25): a test states
what it waits for, polls it, and fails naming it and its last value when the time runs out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T], timeout: float = 20.0, what: str = "", interval: float = 0.01
) -> T:
    """Poll ``predicate`` until it returns a true value and return that value; after
    ``timeout`` seconds raise AssertionError naming ``what`` and the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for "
                f"{what or getattr(predicate, '__name__', predicate)}: "
                f"last value {value!r}"
            )
        time.sleep(interval)


async def async_wait_until(
    predicate: Callable[[], T | Awaitable[T]],
    timeout: float = 20.0,
    what: str = "",
    interval: float = 0.01,
) -> T:
    """:func:`wait_until` for asyncio tests: ``predicate`` may be a plain or async callable."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for "
                f"{what or getattr(predicate, '__name__', predicate)}: "
                f"last value {value!r}"
            )
        await asyncio.sleep(interval)


def still(
    predicate: Callable[[], object], duration: float, what: str = "", interval: float = 0.01
) -> None:
    """Assert ``predicate`` stays true for ``duration`` seconds (a negative check: nothing
    happens in that window, e.g. a blocked call stays blocked)."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        assert predicate(), f"{what or predicate} stopped holding before {duration} s"
        time.sleep(interval)


#: Seconds of scheduling delay an upper time bound allows for on a loaded machine (2 cores,
#: load 6): a bound is what the code promises plus LOAD_SLACK, and must stay below what the bug
#: it guards against would take (a full timeout, a hang).
LOAD_SLACK = 8.0


def next_millisecond(after: int | None = None) -> int:
    """Wait until the wall clock's millisecond (a record timestamp) is past ``after`` (default:
    now) and return it: records written before and after it get different timestamps."""
    start = int(time.time() * 1000) if after is None else after
    return wait_until(
        lambda: (now := int(time.time() * 1000)) > start and now, 5, "the next millisecond"
    )
