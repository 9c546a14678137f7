"""Timers and append watchers: what delayed operations (a parked Fetch, a delayed fault, a
rebalance delay) wait on, shared by the broker and its handlers."""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["AppendWatchers", "Scheduler"]

log = logging.getLogger("kclient.broker")


class Scheduler:
    """A timer thread: ``call_later(seconds, fn)`` runs ``fn`` once unless cancelled first."""

    def __init__(self, name: str = "kclient-broker-timer"):
        self._heap: list = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._running = True
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def call_later(self, seconds: float, fn: Callable[[], Any]) -> list:
        """Schedule ``fn``; returns a handle for :meth:`cancel`."""
        entry = [time.monotonic() + max(0.0, seconds), next(self._seq), fn]
        with self._cond:
            heapq.heappush(self._heap, entry)
            self._cond.notify()
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        """Cancel a scheduled call (harmless if it already ran)."""
        entry[2] = None

    def _run(self) -> None:
        """Pop due entries and run them, sleeping until the next one."""
        while True:
            with self._cond:
                while self._running and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(wait)
                if not self._running:
                    return
                fn = heapq.heappop(self._heap)[2]
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

    def watch(self, keys: Iterable[tuple[str, int]], callback: Callable[[int], None]) -> list:
        """Call ``callback(nbytes)`` on every append to one of ``keys``; returns a token."""
        keys = list(keys)
        with self._lock:
            for key in keys:
                self._by_tp.setdefault(key, set()).add(callback)
        return [keys, callback]

    def unwatch(self, token: list) -> None:
        """Stop calling a watcher."""
        keys, callback = token
        with self._lock:
            for key in keys:
                waiting = self._by_tp.get(key)
                if waiting is not None:
                    waiting.discard(callback)
                    if not waiting:
                        del self._by_tp[key]

    def notify(self, topic: str, partition: int, nbytes: int) -> None:
        """Tell the watchers of a partition that ``nbytes`` were appended."""
        if not self._by_tp:
            return
        with self._lock:
            callbacks = list(self._by_tp.get((topic, partition), ()))
        for callback in callbacks:
            callback(nbytes)
