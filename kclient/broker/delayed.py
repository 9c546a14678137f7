"""Timers and append watchers: what delayed operations (a parked Fetch, a delayed fault, a
rebalance delay) wait on, shared by the broker and its handlers.

A response parked on them is a :class:`DelayedResponse`: when its connection closes the network
layer abandons it, and the operation lets go of its watchers and timer at once instead of
holding them until ``max_wait_ms`` (abandoned long polls must cost nothing).  Cancelled timers
are dropped from the heap once they are the majority, so they do not pile up either."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

__all__ = ["AppendWatchers", "DelayedResponse", "Scheduler"]

_COMPACT_AT = 1024  # cancelled timer entries tolerated before the heap is rebuilt


class DelayedResponse(Future[Any]):
    """A Future response parked on timers or watchers; :meth:`abandon` (its connection closed)
    cancels it and runs the operation's release callbacks."""

    def __init__(self) -> None:
        super().__init__()
        self._releases: list[Callable[[], None]] = []

    def on_abandon(self, release: Callable[[], None]) -> None:
        """Run ``release()`` if the response is abandoned before it completes."""
        self._releases.append(release)

    def abandon(self) -> None:
        """Nobody waits for this response any more: cancel it and release what it holds."""
        if self.cancel():
            for release in self._releases:
                release()


log = logging.getLogger("kclient.broker")


class Scheduler:
    """A timer thread: ``call_later(seconds, fn)`` runs ``fn`` once unless cancelled first."""

    def __init__(self, name: str = "kclient-broker-timer"):
        self._heap: list[Any] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._cancelled = 0
        self._running = True
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def call_later(self, seconds: float, fn: Callable[[], Any]) -> list[Any]:
        """Schedule ``fn``; returns a handle for :meth:`cancel`."""
        entry = [time.monotonic() + max(0.0, seconds), next(self._seq), fn]
        with self._cond:
            heapq.heappush(self._heap, entry)
            self._cond.notify()
        return entry

    def cancel(self, entry: list[Any]) -> None:
        """Cancel a scheduled call (harmless if it already ran)."""
        with self._cond:
            if entry[2] is None:
                return
            entry[2] = None
            self._cancelled += 1
            if self._cancelled > _COMPACT_AT and 2 * self._cancelled > len(self._heap):
                self._heap = [e for e in self._heap if e[2] is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def pending(self) -> int:
        """Scheduled calls still to run (cancelled ones not counted)."""
        with self._cond:
            return sum(1 for e in self._heap if e[2] is not None)

    def _run(self) -> None:
        """Pop due entries and run them, sleeping until the next one."""
        while True:
            with self._cond:
                while self._running and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(wait)
                if not self._running:
                    return
                entry = heapq.heappop(self._heap)
                fn, entry[2] = entry[2], None
                if fn is None:
                    self._cancelled = max(0, self._cancelled - 1)
            if fn is not None:
                try:
                    fn()
                except Exception:
                    log.exception("scheduled task failed")

    def close(self) -> None:
        """Stop the thread; pending calls are dropped."""
        with self._cond:
            self._running = False
            self._cond.notify()
        self._thread.join(5)


class AppendWatchers:
    """Callbacks waiting for appends to partitions (delayed fetches park here)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_tp: dict[tuple[str, int], set[Callable[[int], None]]] = {}

    def watch(self, keys: Iterable[tuple[str, int]], callback: Callable[[int], None]) -> list[Any]:
        """Call ``callback(nbytes)`` on every append to one of ``keys``; returns a token."""
        keys = list(keys)
        with self._lock:
            for key in keys:
                self._by_tp.setdefault(key, set()).add(callback)
        return [keys, callback]

    def unwatch(self, token: list[Any]) -> None:
        """Stop calling a watcher."""
        keys, callback = token
        with self._lock:
            for key in keys:
                waiting = self._by_tp.get(key)
                if waiting is not None:
                    waiting.discard(callback)
                    if not waiting:
                        del self._by_tp[key]

    def count(self) -> int:
        """Watchers registered, over all partitions (a parked fetch counts once per partition)."""
        with self._lock:
            return sum(len(w) for w in self._by_tp.values())

    def notify(self, topic: str, partition: int, nbytes: int) -> None:
        """Tell the watchers of a partition that ``nbytes`` were appended."""
        if not self._by_tp:
            return
        with self._lock:
            callbacks = list(self._by_tp.get((topic, partition), ()))
        for callback in callbacks:
            callback(nbytes)
