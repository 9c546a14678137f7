"""ProducerSendThread: the async producer's background thread (0.7/0.8's name).

Callers append messages to a bounded ``deque`` without taking a lock; the thread drains it in
batches of up to ``batch.num.messages``, a batch leaving when it is full or when the first
message in it has waited ``queue.buffering.max.ms`` (or at once while a flush or close waits).

Waking the thread costs the caller a lock only when the thread asked for it: a caller that
finds ``len(queue) > wake_at`` after appending calls ``wake()``; ``wake_at`` is one less than the
queue length the sleeping thread waits for (0 when idle, the batch size - 1 while lingering,
infinity while it is busy), so a stream of ``send()`` calls is a ``len`` and an ``append`` each.

With the DefaultEventHandler the thread pipelines: it hands a batch over (``submit``) and goes
on draining while the broker works; responses are completed when the per-connection window is
full or when there is nothing else to do.  Any other EventHandler is called as 0.8 did:
``handle(batch)`` blocks until the batch is done.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from itertools import repeat, starmap
from typing import Any, cast

from kclient.errors import IllegalStateError, KafkaError, KafkaTimeoutError, QueueFullError

from .callback import overridden_hooks
from .data import DeliveryReport, Entry, ProducerData, failure_reports, from_entries, to_entries

__all__ = ["ProducerSendThread"]

log = logging.getLogger(__name__)

INF = float("inf")


class Chunk:
    """Part of one ``send(list)``: plain messages (bytes values, no key, partition, timestamp or
    headers) of one topic, checked by the caller and queued as one entry.

    The caller already has the values and their lengths in hand; the send thread passes them on
    to the EventHandler instead of taking messages apart again.
    """

    __slots__ = ("topic", "values", "lengths")

    def __init__(self, topic: str, values: list[bytes], lengths: list[int]) -> None:
        self.topic, self.values, self.lengths = topic, values, lengths

    def __len__(self) -> int:
        return len(self.values)

    def entries(self) -> list[Entry]:
        """The chunk's messages as queue entries."""
        topic = self.topic
        return [(topic, v) for v in self.values]


class ProducerSendThread(threading.Thread):
    """Drains the producer queue into the EventHandler; delivers reports through ``deliver``."""

    def __init__(
        self,
        handler: Any,
        deliver: Callable[[list[DeliveryReport]], None],
        *,
        batch_size: int,
        linger_ms: int,
        capacity: int,
        callbacks: Any = None,
        name: str = "kclient-producer-send",
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.queue: deque[Entry | Chunk] = deque()
        self.lock = threading.Lock()
        self.wakeup = threading.Condition(self.lock)  # the thread waits here for work
        self.not_full = threading.Condition(self.lock)  # callers wait here for room
        self.drained = threading.Condition(self.lock)  # flush() waits here
        #: queue length (entries) above which a caller must wake the thread; ``wake_msgs`` is
        #: the same in messages (see the module docstring)
        self.wake_at: float = INF
        self.wake_msgs: float = INF
        #: chunk entries in the queue and the messages they hold beyond one per entry: the queue
        #: holds ``len(queue) + extra`` messages; single sends compare ``len(queue)`` to ``limit``
        self.chunks = 0
        self.extra = 0
        self.limit = capacity
        self.batch_size = batch_size
        self.linger = linger_ms / 1000.0
        self.capacity = capacity
        self.full_waiters = 0
        self.flushing = 0
        self.closing = False
        self.abort_error: BaseException | None = None
        self.crashed: BaseException | None = None
        #: messages taken off the queue whose reports have not been delivered yet
        self.outstanding = 0
        self.handler = handler
        self.pipelined = all(
            callable(getattr(handler, name, None))
            for name in ("submit", "receive_one", "resend_due", "take_reports")
        )
        #: when the thread first saw the batch being handed over queued (delivery.timeout.ms
        #: counts from it; handlers whose submit() takes ``since`` get it)
        self.since: float | None = None
        self._pass_since = self.pipelined and _takes_since(handler.submit)
        self.callbacks = callbacks
        self.hooks = overridden_hooks(callbacks)
        self.deliver = deliver

    # ------------------------------------------------------------------ caller side
    def wake(self) -> None:
        """Wake the thread (called by a producer when ``len(queue) > wake_at``)."""
        self.wake_at = self.wake_msgs = INF
        with self.lock:
            self.wakeup.notify()

    def size(self) -> int:
        """Messages in the queue."""
        return len(self.queue) + self.extra

    def put_chunks(self, chunks: list[Chunk], total: int) -> bool:
        """Queue ``chunks`` (``total`` messages) if all fit; False, queuing nothing, if not."""
        with self.lock:
            q = self.queue
            if len(q) + self.extra + total > self.capacity:
                return False
            q.extend(chunks)
            self.chunks += len(chunks)
            self.extra += total - len(chunks)
            self.limit = self.capacity - self.extra
            if len(q) + self.extra > self.wake_msgs:
                self.wake_at = self.wake_msgs = INF
                self.wakeup.notify()
            elif self.wake_msgs != INF:
                self.wake_at = self.wake_msgs - self.extra
        return True

    def refuse(self) -> None:
        """Make every later send() take the slow path (where it is refused): close() calls it."""
        with self.lock:
            self.capacity = self.limit = -1

    def is_drained(self) -> bool:
        return not self.queue and self.outstanding == 0

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the queue is empty and every taken message is reported; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            self.flushing += 1
            self.wakeup.notify()
            try:
                while not self.is_drained():
                    if not self.is_alive():
                        return self.is_drained()
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self.drained.wait(0.5 if remaining is None else min(remaining, 0.5))
                return True
            finally:
                self.flushing -= 1

    def wait_for_room(self, needed: int, timeout_ms: int) -> None:
        """Block until ``needed`` more messages fit (-1: forever, else up to ``timeout_ms``)."""
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000.0
        with self.lock:
            while len(self.queue) + self.extra + needed > max(self.capacity, 0):
                if self.closing or self.crashed is not None:
                    raise IllegalStateError("the producer is closed")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise QueueFullError(
                        f"the producer queue stayed full ({self.capacity} messages, "
                        f"queue.buffering.max.messages) for {timeout_ms} ms "
                        "(queue.enqueue.timeout.ms)"
                    )
                self.full_waiters += 1
                try:
                    self.wakeup.notify()
                    self.not_full.wait(remaining)
                finally:
                    self.full_waiters -= 1

    def close(self, timeout: float | None = None) -> None:
        """Drain, send the last batch, stop; after ``timeout`` fail whatever is left."""
        with self.lock:
            self.closing = True
            self.wakeup.notify()
            self.not_full.notify_all()
        self.join(timeout)
        if self.is_alive():
            self.abort_error = KafkaTimeoutError(
                f"producer closed before delivery finished (close timeout {timeout}s)"
            )
            with self.lock:
                self.wakeup.notify()
            interrupt = getattr(self.handler, "interrupt", None)
            if callable(interrupt):  # wake a request waiting on a broker: fail it now
                try:
                    interrupt()
                except Exception:
                    log.exception("interrupting the EventHandler failed")
            self.join()

    # ------------------------------------------------------------------ the thread
    def run(self) -> None:
        try:
            self._loop()
            if self.abort_error is None:
                self._last_batch()
        except BaseException as exc:  # never die silently: report what is left as failed
            log.exception("producer send thread crashed")
            self.crashed = exc
            self._fail_everything(exc)
        finally:
            with self.lock:
                self.closing = True
                self.drained.notify_all()
                self.not_full.notify_all()

    def _loop(self) -> None:
        q = self.queue
        h = self.handler
        pipelined = self.pipelined
        first_seen: float | None = None
        while True:
            if self.abort_error is not None:
                self._fail_everything(self.abort_error)
                return
            n = len(q) + self.extra
            now = time.monotonic()
            if n:
                if first_seen is None:
                    first_seen = now
                if (
                    n >= self.batch_size
                    or self.flushing
                    or self.closing
                    or now - first_seen >= self.linger
                ):
                    self.since = first_seen
                    self._process(*self._take(min(n, self.batch_size)))
                    first_seen = now if q else None
                    continue
            if pipelined and h.pending:
                h.resend_due()
                self._deliver_reports()
                if h.inflight:
                    h.receive_one()
                    self._deliver_reports()
                    continue
                if q:
                    continue
            if not q and (not pipelined or not h.pending):
                if self.outstanding == 0:
                    self._signal_drained()
                if self.closing:
                    with self.lock:  # a send() may have slipped in since `not q`
                        if not q:
                            return
                    continue
            # nothing to do right now: sleep until data, linger deadline or a retry is due
            timeout: float | None = None
            if n and first_seen is not None:  # (n implies first_seen is set)
                timeout = max(0.0, first_seen + self.linger - now)
            if pipelined:
                due = h.next_due()
                if due is not None:
                    pause = max(0.0, due - now)
                    timeout = pause if timeout is None else min(timeout, pause)
            target = self.batch_size if n else 1
            with self.lock:
                # flush/close only cancel the linger: with an empty queue we still sleep
                # (until data, a retry's due time, or a wake-up) rather than spin
                if (
                    len(q) + self.extra < target
                    and self.abort_error is None
                    and not (q and (self.flushing or self.closing))
                ):
                    self.wake_msgs = target - 1
                    self.wake_at = target - 1 - self.extra
                    if len(q) + self.extra < target:  # again: a send may have seen INF
                        self.wakeup.wait(timeout)
                    self.wake_at = self.wake_msgs = INF

    def _take(self, k: int) -> tuple[list[Entry] | None, Chunk | None]:
        """Up to ``k`` messages off the queue: ``(messages, chunk or None)``.

        Without chunks in the queue this is one C-level loop of ``popleft``.  A chunk is never
        split: the batch stops before a chunk that does not fit (chunks are at most a batch).
        A batch of chunks of one topic comes back as one chunk, so its checked columns are used.
        """
        q = self.queue
        with self.lock:
            if not self.chunks:
                # all in C; without chunks every queued item is a message tuple
                batch = cast("list[Entry] | None", list(starmap(q.popleft, repeat((), k))))
                taken, chunk = k, None
            else:
                entries: list[Entry | Chunk] = []
                taken = 0
                while q and taken < k:
                    e = q[0]
                    if type(e) is Chunk:
                        m = len(e.values)
                        if taken and taken + m > k:
                            break
                        self.chunks -= 1
                        self.extra -= m - 1
                        taken += m
                    else:
                        taken += 1
                    entries.append(q.popleft())
                self.limit = self.capacity - self.extra
                batch, chunk = _merge(entries)
            self.outstanding += taken
            if self.full_waiters:
                self.not_full.notify_all()
        return batch, chunk

    def _process(self, batch: list[Entry] | None, chunk: Chunk | None = None) -> None:
        """Run the dequeue hooks and hand the batch (queue entries, or a chunk) over."""
        taken = len(chunk) if chunk is not None else len(batch or ())
        hooks = self.hooks & {"after_dequeuing_existing_data", "before_sending_data"}
        if hooks:
            # hooks may change the batch: a chunk's checked columns go
            entries = chunk.entries() if chunk is not None else batch or []
            chunk = None
            try:
                batch = self._run_dequeue_hooks(entries)
            except Exception as exc:
                log.exception("CallbackHandler hook failed; the batch is reported failed")
                self._deliver(failure_reports(entries, exc))
                return
            self.outstanding += len(batch) - taken
            if not batch:
                self._signal_drained()
                return
        self._hand_over(batch, chunk)

    def _run_dequeue_hooks(self, entries: list[Entry]) -> list[Entry]:
        """after_dequeuing_existing_data per message, then before_sending_data per batch."""
        cb = self.callbacks
        msgs = from_entries(entries)
        if "after_dequeuing_existing_data" in self.hooks:
            expanded: list[ProducerData] = []
            for d in msgs:
                expanded += cb.after_dequeuing_existing_data(d) or ()
            msgs = expanded
        if "before_sending_data" in self.hooks:
            msgs = list(cb.before_sending_data(msgs) or ())
        return to_entries(msgs)

    def _hand_over(self, batch: list[Entry] | None, chunk: Chunk | None = None) -> None:
        h = self.handler
        if self.pipelined:
            if self._pass_since:
                h.submit(batch, chunk, since=self.since)
            elif chunk is not None:
                h.submit(None, chunk)
            else:
                h.submit(batch)
            self._deliver_reports()
            return
        entries = chunk.entries() if chunk is not None else batch or []
        msgs = from_entries(entries)
        try:
            reports = h.handle(msgs)
        except Exception as exc:  # noqa: BLE001 - a handler's failure fails this batch only
            log.warning("EventHandler failed a batch of %d messages: %s", len(entries), exc)
            reports = failure_reports(entries, exc)
        if reports is None:  # a handler that reports nothing: delivered, offsets unknown
            reports = [DeliveryReport(d.topic, -1, [d]) for d in msgs]
        self._deliver(list(reports), expected=len(entries))

    def _deliver_reports(self) -> None:
        reports = self.handler.take_reports()
        if reports:
            self._deliver(reports)

    def _deliver(self, reports: list[DeliveryReport], expected: int | None = None) -> None:
        done = sum(len(r) for r in reports)
        if expected is not None and done != expected:
            log.warning("EventHandler reported %d of %d messages", done, expected)
            done = expected
        try:
            self.deliver(reports)
        finally:
            self.outstanding -= done
            if self.outstanding <= 0 and not self.queue:
                self.outstanding = max(self.outstanding, 0)
                self._signal_drained()

    def _signal_drained(self) -> None:
        if self.flushing:
            with self.lock:
                self.drained.notify_all()

    def _last_batch(self) -> None:
        """At close: the CallbackHandler's last batch, then wait for everything to finish."""
        if "last_batch_before_close" in self.hooks:
            try:
                last = list(self.callbacks.last_batch_before_close() or ())
            except Exception:
                log.exception("CallbackHandler.last_batch_before_close failed")
                last = []
            if last:
                self.outstanding += len(last)
                self.since = None
                self._hand_over(to_entries(last))
        if self.pipelined:
            while self.handler.pending and self.abort_error is None:
                self.handler.complete(deadline=time.monotonic() + 0.2)
                self._deliver_reports()
            if self.abort_error is not None:
                self._fail_everything(self.abort_error)

    def fail_leftovers(self) -> None:
        """After the thread ended: report messages that raced with close() as failed."""
        if self.queue:
            self._fail_everything(
                IllegalStateError("send() raced with close(); the message was not sent")
            )

    def _fail_everything(self, error: BaseException) -> None:
        """Report every queued, taken or in-flight message failed with ``error``."""
        with self.lock:
            rest = _flatten(self.queue)
            self.queue.clear()
            self.chunks = self.extra = 0
            self.outstanding += len(rest)
        reports = failure_reports(rest, error)
        if self.pipelined:
            try:
                self.handler.abort(error)
                reports += self.handler.take_reports()
            except Exception:
                log.exception("aborting the EventHandler failed")
        if reports:
            try:
                self._deliver(reports)
            except Exception:
                log.exception("delivering failure reports failed")
        if isinstance(error, KafkaError):
            log.error("producer stopped with undelivered messages: %s", error)


def _takes_since(submit: Callable[..., Any]) -> bool:
    """Whether an EventHandler's ``submit`` accepts ``since`` (the DefaultEventHandler's does)."""
    try:
        return "since" in inspect.signature(submit).parameters
    except (TypeError, ValueError):
        return False


def _merge(entries: list[Entry | Chunk]) -> tuple[list[Entry] | None, Chunk | None]:
    """``(None, chunk)`` when the entries are chunks of one topic (joined into one), else
    ``(message tuples, None)``."""
    first = entries[0]
    if type(first) is Chunk:
        if len(entries) == 1:
            return None, first
        topic = first.topic
        if all(type(e) is Chunk and e.topic == topic for e in entries):
            values: list[bytes] = []
            lengths: list[int] = []
            for e in entries:
                assert type(e) is Chunk  # (checked above: narrows for the type checker)
                values += e.values
                lengths += e.lengths
            return None, Chunk(topic, values, lengths)
    return _flatten(entries), None


def _flatten(entries: Iterable[Entry | Chunk]) -> list[Entry]:
    """Queue entries (message tuples and chunks) as one list of message tuples."""
    out: list[Entry] = []
    for e in entries:
        if isinstance(e, Chunk):
            out += e.entries()
        else:
            out.append(e)
    return out
