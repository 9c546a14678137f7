"""A cancellation that comes in the loop turn a bounded wait ends is never lost (issue 25).

Before Python 3.12, ``asyncio.wait_for`` returns the result when the awaited one finished in the
same turn as the cancel, and the cancelled task goes on (CPython gh-86296). The AIOConsumer's
fetch task, cancelled by close() while it reconnected after a broken Fetch answer (the hostile
broker's ``garbage`` and ``short``), went on to wait for work for ever, and close() with it.
Every bounded wait of the asyncio driver goes through :func:`kclient.aio.timeouts.within`."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

import kclient
from kclient.aio.timeouts import within


@pytest.mark.parametrize("bound", [None, 10.0])
def test_a_cancel_as_the_wait_ends_is_raised_and_the_late_result_discarded(bound):
    async def main() -> tuple[bool, bool, list[str]]:
        inner: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        went_on = asyncio.Event()
        late: list[str] = []

        async def waiter() -> None:
            await within(inner, bound, late.append)
            went_on.set()
            await asyncio.Event().wait()  # a task whose cancel was lost waits here for ever

        task = asyncio.create_task(waiter())
        for _ in range(3):
            await asyncio.sleep(0)  # the task waits in within()
        inner.set_result("a stream opened")  # the wait ends ...
        task.cancel()  # ... and the cancel comes in the same loop turn
        done, _ = await asyncio.wait({task}, timeout=10)
        return task in done and task.cancelled(), went_on.is_set(), late

    assert asyncio.run(main()) == (True, False, ["a stream opened"])


def test_a_timeout_cancels_what_it_waited_for():
    async def main() -> bool:
        slow = asyncio.ensure_future(asyncio.sleep(3600))
        with pytest.raises(asyncio.TimeoutError):
            await within(slow, 0.01)
        await asyncio.sleep(0)
        return slow.cancelled()

    assert asyncio.run(main())


def test_the_asyncio_driver_bounds_no_wait_with_asyncio_wait_for():
    aio = Path(kclient.__file__).parent / "aio"
    users = [p.name for p in aio.glob("*.py") if re.search(r"\bwait_for\(", p.read_text())]
    assert users == [], f"use kclient.aio.timeouts.within, not asyncio.wait_for: {users}"
