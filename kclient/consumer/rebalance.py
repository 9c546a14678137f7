"""The rebalance loop and the thread that runs it when a watcher fires.

``synced_rebalance`` is Kafka 0.8.2's ``syncedRebalance``: up to ``rebalance.max.retries``
attempts; after a failed attempt (an attempt returns False when an owner znode still belonged to
someone else, or raised because ZooKeeper changed under it) the fetchers are stopped and the
queues cleared again, then it waits ``rebalance.backoff.ms``.  When every attempt failed it raises
``ConsumerRebalanceFailedError``; an authorization failure (no ACL lets this principal use the
group or topic) is not retried: it is raised as it is, since another attempt cannot cure it.

``RebalanceExecutor`` is the ``watcher executor`` thread: ZooKeeper callbacks only ``trigger()``
it, so they never block kazoo's event thread; several triggers while a rebalance runs fold into
one more rebalance.  A rebalance that failed for good is handed to ``on_failure`` (the connector
surfaces it to every stream) and retried later by itself, so a group heals when the cause goes
away instead of leaving partitions unowned.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kclient.errors import (
    ClusterAuthorizationFailedError,
    ConsumerRebalanceFailedError,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)

__all__ = ["synced_rebalance", "RebalanceExecutor"]

log = logging.getLogger(__name__)

#: Refusals a retry cannot cure: raised at once.
_NOT_RETRIED = (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    ClusterAuthorizationFailedError,
    FencedInstanceIdError,
)


def synced_rebalance(
    name: str,
    attempt: Callable[[int], bool],
    after_failure: Callable[[], None],
    retries: int,
    backoff_ms: int,
    stopping: threading.Event,
) -> bool:
    """Run ``attempt(i)`` until it returns True; False if shut down; raise after ``retries``."""
    last: BaseException | None = None
    for i in range(max(1, retries)):
        if stopping.is_set():
            return False
        log.info("begin rebalancing consumer %s try #%d", name, i)
        try:
            if attempt(i):
                log.info("end rebalancing consumer %s try #%d: done", name, i)
                return True
            last = None
        except Exception as exc:
            # ZooKeeper may change while we read it (a node gone between listing and reading):
            # another rebalance is on its way; retry.
            log.info("exception during rebalance of %s: %r", name, exc)
            last = exc
            if isinstance(exc, _NOT_RETRIED):
                after_failure()
                raise
        if stopping.is_set():
            return False
        after_failure()
        if stopping.wait(backoff_ms / 1000.0):
            return False
    reason = (
        f": last error {last!r}"
        if last is not None
        else " (partition owner znodes were still held by other consumers)"
    )
    raise ConsumerRebalanceFailedError(
        f"{name} can't rebalance after {max(1, retries)} retries{reason}"
    ) from last


class RebalanceExecutor(threading.Thread):
    """Runs ``rebalance()`` whenever triggered; failures go to ``on_failure`` and are retried."""

    def __init__(
        self,
        name: str,
        rebalance: Callable[[], None],
        on_failure: Callable[[BaseException], None],
        stopping: threading.Event,
        retry_after_failure_s: float = 10.0,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(name=f"{name}_watcher_executor", daemon=True)
        self._rebalance, self._on_failure = rebalance, on_failure
        self._on_event = on_event
        self._stopping = stopping
        self._retry_after = retry_after_failure_s
        self._cond = threading.Condition()
        self._triggered = False
        self._events: list[str] = []
        self.rebalances = 0  # completed runs, for tests and metrics
        self._running = False

    def trigger(self, reason: str = "") -> None:
        with self._cond:
            self._triggered = True
            self._cond.notify_all()
        if reason:
            log.debug("%s: rebalance triggered (%s)", self.name, reason)

    def event(self, name: str) -> None:
        """Queue a named event (e.g. session lost / new session) handled before rebalancing."""
        with self._cond:
            self._events.append(name)
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._cond.notify_all()

    @property
    def idle(self) -> bool:
        """Nothing triggered, queued or running (the counts are final until a new trigger)."""
        with self._cond:
            return not (self._running or self._triggered or self._events)

    def run(self) -> None:
        retry_at: float | None = None
        while not self._stopping.is_set():
            with self._cond:
                timeout = 1.0
                if retry_at is not None:
                    timeout = max(0.0, min(timeout, retry_at - _now()))
                if not self._triggered and not self._events:
                    self._cond.wait(timeout)
                if retry_at is not None and _now() >= retry_at:
                    self._triggered, retry_at = True, None
                events, self._events = self._events, []
                run, self._triggered = self._triggered, False
                self._running = bool(events) or run
            try:
                if self._stopping.is_set():
                    return
                retry_at = self._handle(events, run, retry_at)
            finally:
                with self._cond:
                    self._running = False

    def _handle(self, events: list[str], run: bool, retry_at: float | None) -> float | None:
        """Handle the queued events, then rebalance if asked; returns when to retry."""
        for ev in events:
            try:
                if self._on_event is not None:
                    self._on_event(ev)
            except Exception:
                log.exception("%s: handling %s failed", self.name, ev)
                run = True
        if not run:
            return retry_at
        try:
            self._rebalance()
            self.rebalances += 1
        except Exception as exc:  # noqa: BLE001 - reported to the streams, retried
            if not self._stopping.is_set():
                self._on_failure(exc)
                return _now() + self._retry_after
        return retry_at


def _now() -> float:
    import time

    return time.monotonic()
