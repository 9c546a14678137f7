"""Producer: the one entry point for sending, sync or async (0.8's ``kafka.producer.Producer``).

::

    with Producer({"metadata.broker.list": "127.0.0.1:9092", "producer.type": "async"},
                  on_delivery=print) as p:
        p.send(ProducerData("events", b"hello", key=b"user-1"))
        p.send([ProducerData("events", v) for v in values])
        p.flush()

Delivery is never silent.  Every message ends in exactly one :class:`DeliveryReport` (one per
partition batch: acknowledged offsets or the error), which goes to ``on_delivery`` and to the
CallbackHandler's ``on_delivery`` hook.  In sync mode ``send`` returns the reports and raises
``FailedToSendMessageError`` naming the failed messages; in async mode the failures are also kept
and raised by the next ``flush()`` or ``close()``.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from time import sleep as _yield
from types import TracebackType
from typing import Any

from kclient._args import one_of
from kclient.config import load_config
from kclient.core.idempotence import IdempotentState
from kclient.encoders import for_topic
from kclient.errors import (
    FailedToSendMessageError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    QueueFullError,
)
from kclient.metrics import ClientMetrics, start_reporter
from kclient.observability import tracing_for
from kclient.protocol.error_codes import (
    ClusterAuthorizationFailedError,
    MessageSizeTooLargeError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

from . import send_path
from .buffers import BytesLike, plain_lengths
from .callback import overridden_hooks
from .compat import ProducerCompat, delivery_callbacks
from .context import ProducerContext, build_context
from .data import (
    DeliveryReport,
    Entry,
    Header,
    ProducerData,
    from_entries,
    speedups,
    to_entries,
    to_entry,
)
from .data_methods import wrong_send
from .event_handler import DefaultEventHandler
from .future import DeliveryCallback, DeliveryFuture
from .future import resolve as _py_resolve
from .send_thread import Chunk, ProducerSendThread
from .transactions import (
    ABORTABLE_ERROR,
    IN_TRANSACTION,
    ProducerIdentity,
    Transactions,
    offsets_to_commit,
)

__all__ = ["Producer"]

log = logging.getLogger(__name__)

#: failed messages kept for flush()/close() to raise (the count is always exact)
MAX_KEPT_FAILURES = 100_000

_LIVE: weakref.WeakSet[Producer] = weakref.WeakSet()


#: Broker refusals a retry cannot cure, raised as they are when every message met one.
_AUTHORIZATION = (
    TopicAuthorizationFailedError,
    ClusterAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)


class Producer(ProducerCompat, ProducerIdentity):
    """Send messages to Kafka; ``producer.type`` chooses sync or async (see module docstring).

    ``config`` holds producer keys (``metadata.broker.list``, ``producer.type``, ...); keyword
    ``overrides`` spell dots as underscores (``producer_type="async"``).  ``on_delivery(err,
    metadata)`` is called once per message, as produce()'s is; ``on_report`` once per partition
    batch with its :class:`DeliveryReport` (async: both on the send thread; keep them quick).
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        on_delivery: DeliveryCallback | None = None,
        on_report: Callable[[DeliveryReport], Any] | None = None,
        **overrides: Any,
    ) -> None:
        self.config = cfg = load_config("producer", config, **overrides)
        _prime_allocator()
        #: what _deliver calls with each DeliveryReport (on_delivery's per-message calls too)
        self.on_delivery: Callable[[DeliveryReport], Any] | None = delivery_callbacks(
            on_delivery, on_report
        )
        self._closed = False
        self._failures: list[tuple[ProducerData, BaseException]] = []
        self._failure_count = 0
        self._stats_lock = threading.Lock()
        self.stats = {"acknowledged": 0, "failed": 0, "batches": 0}
        self._metrics = ClientMetrics()
        self.context: ProducerContext = build_context(cfg, self._metrics)
        self._tracing = tracing_for(cfg)
        if self._tracing is not None:  # the send spans end at delivery: wrap it first
            from kclient.observability.clients import ProducerSpans

            self._spans = ProducerSpans(self._tracing)
            self._deliver = self._spans.wrap_deliver(self._deliver)  # type: ignore[method-assign]
        self._txn: Transactions | None = None
        if cfg["transactional.id"]:
            cluster = self.context.cluster
            self._txn = Transactions(
                cfg["transactional.id"],
                cfg["transaction.timeout.ms"],
                cluster.bootstrap,
                cluster.settings,
                cfg["retry.backoff.ms"],
            )
            self.context.transaction_manager = self._txn
        self.callbacks = _instance(cfg["callback.handler"])
        self._hooks = overridden_hooks(self.callbacks)
        if self.callbacks is not None and callable(getattr(self.callbacks, "init", None)):
            self.callbacks.init(cfg)
        handler = _instance(cfg["event.handler"])
        self.event_handler = handler if handler is not None else DefaultEventHandler()
        if callable(getattr(self.event_handler, "init", None)):
            self.event_handler.init(self.context)
        self.max_message_bytes = cfg["message.max.bytes"]
        self._enqueue_timeout = cfg["queue.enqueue.timeout.ms"]
        self.sync = cfg["producer.type"] == "sync"
        self._sync_lock = threading.Lock()
        self._thread: ProducerSendThread | None = None
        #: set once produce() queued a message: then delivery looks for futures in reports
        self._futures = False
        t: ProducerSendThread | None = None
        if not self.sync:
            self._thread = t = ProducerSendThread(
                self.event_handler,
                self._deliver,
                batch_size=cfg["batch.num.messages"],
                linger_ms=cfg["queue.buffering.max.ms"],
                capacity=cfg["queue.buffering.max.messages"],
                callbacks=self.callbacks,
            )
            self._queue = t.queue
            self._queue_size = cfg["queue.buffering.max.messages"]
            self._batch_size = cfg["batch.num.messages"]
            # the fast path checks values of bytes below this size without computing exactly
            self._fast_limit = self.max_message_bytes
        #: which send/produce this instance runs (kclient/producer/send_path.py's table)
        self.send_path = send_path.bind(self)
        if t is not None:
            t.start()
        self._reporter = start_reporter(
            cfg["statistics.interval.ms"], cfg["stats.cb"], self.metrics, cfg["statistics.format"]
        )
        _LIVE.add(self)

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> Producer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except Exception as err:  # noqa: BLE001 - do not hide the exception that is propagating
            log.error("closing the producer after %s: %s", exc_type.__name__, err)

    def __repr__(self) -> str:
        mode = "sync" if self.sync else "async"
        state = "closed" if self._closed else "open"
        return f"<Producer {mode} {state} brokers={self.context.cluster.bootstrap}>"

    # ------------------------------------------------------------------ sending
    def send(self, data: ProducerData | list[ProducerData]) -> list[DeliveryReport] | None:
        """Send one ProducerData or a list of them (replaced per instance: send_path.py).

        Sync: returns the delivery reports once acknowledged; raises FailedToSendMessageError.
        Async: queues and returns None; a full queue follows ``queue.enqueue.timeout.ms``.
        """
        raise NotImplementedError  # pragma: no cover - __init__ binds the real implementation

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Sequence[Header] | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
        callback: DeliveryCallback | None = None,
        timestamp_ms: int | None = None,
    ) -> DeliveryFuture:
        """Send one message; returns its :class:`DeliveryFuture` (replaced per instance:
        send_path.py).

        The future resolves to a RecordMetadata (topic, partition, offset, timestamp) or raises
        the message's delivery error; ``on_delivery(error, metadata)`` (alias ``callback``, as
        confluent-kafka's) is called once with the outcome (async: on the send thread; keep it
        quick).  ``headers``: a list of ``(name, value)`` pairs or a dict, str values sent as
        UTF-8; ``timestamp`` (alias ``timestamp_ms``): create time in ms.  Sync mode raises a
        failed message's error (what its future holds) and otherwise returns a resolved future;
        async failures are set on the future and logged at WARNING (docs/producer.md).
        As with send(), a message over ``message.max.bytes`` or a full queue raise here.
        """
        raise NotImplementedError  # pragma: no cover - __init__ binds the real implementation

    def _produce_hooked(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Sequence[Header] | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
        callback: DeliveryCallback | None = None,
        timestamp_ms: int | None = None,
    ) -> DeliveryFuture:
        """produce() with a CallbackHandler's queue hooks, which take and give ProducerData
        (they may change or drop messages): not supported."""
        raise IllegalStateError(
            "produce() does not run with a CallbackHandler's enqueue/dequeue hooks; use send()"
        )

    def _produce_sync(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Sequence[Header] | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
        callback: DeliveryCallback | None = None,
        timestamp_ms: int | None = None,
    ) -> DeliveryFuture:
        """Sync produce(): send now and return the resolved future; a failed message raises
        its error (the one its future holds) after on_delivery got it."""
        if callback is not None or timestamp_ms is not None:
            on_delivery = one_of("produce()", on_delivery=on_delivery, callback=callback)
            timestamp = one_of("produce()", timestamp=timestamp, timestamp_ms=timestamp_ms)
        f = DeliveryFuture(on_delivery, timestamp)
        d = ProducerData(topic, value, key, partition, timestamp, headers)
        self._check_open()
        self._check_size(d)
        reports = self._sync_reports([d])
        mine = next((r for r in reports if len(r)), None)
        if mine is None:
            mine = DeliveryReport(
                topic,
                -1,
                [d],
                -1,
                IllegalStateError("a CallbackHandler's before_sending_data dropped the message"),
            )
        f._set(mine, 0)
        if mine.error is not None:
            raise mine.error  # what f.result() would raise (on_delivery got it first)
        return f

    def send_values(self, topic: str, values: Sequence[BytesLike]) -> list[DeliveryReport] | None:
        """Send ``values`` (bytes-like, no key) to ``topic``: ``send([ProducerData(topic, v) ...])``
        without building a ProducerData per value (columnar callers such as the Spark sink).

        Values may be ``bytes``, ``bytearray`` or byte-shaped ``memoryview`` (Spark's
        BinaryType), taken without a copy: the producer keeps a reference until the value's
        batch is encoded (then copied into it; retries resend that copy), so change or reuse
        a buffer only after its delivery report or ``flush()``.
        Async: the list is checked once and queued in chunks; sync mode, callback hooks on
        enqueue, or other values (None, str, ...) or values over ``message.max.bytes`` take
        ``send``, which serializes them with the configured encoder or refuses them.
        """
        values = values if type(values) is list else list(values)
        if not values:
            return None
        if self.sync or self._hooks & {"before_enqueue", "after_enqueue"}:
            return self.send([ProducerData(topic, v) for v in values])
        lengths = plain_lengths(values)
        if lengths is None or max(lengths) > self.max_message_bytes:
            return self.send([ProducerData(topic, v) for v in values])
        self._check_open()
        self._queue_plain(topic, values, lengths)
        return None

    def _queue_plain(self, topic: str, values: list[Any], lengths: list[int]) -> None:
        """Queue checked bytes-like values of one topic as chunks of a batch each."""
        t = self._sender
        step = self._batch_size
        if len(values) <= step:
            chunks = [Chunk(topic, values, lengths)]
        else:
            chunks = [
                Chunk(topic, values[i : i + step], lengths[i : i + step])
                for i in range(0, len(values), step)
            ]
        if t.put_chunks(chunks, len(values)):
            _yield(0)
            return None
        self._queue_chunks_slow(chunks)
        return None

    def _queue_chunks_slow(self, chunks: list[Chunk]) -> None:
        """The queue is full: queue the chunks as room appears, as queue.enqueue.timeout.ms
        says.  They stay chunks (the send thread keeps their checked columns); one is split
        only to fill the room left when the caller will not wait, or when it is larger than
        the whole queue."""
        self._check_open()
        t = self._sender
        timeout = self._enqueue_timeout
        no_wait = timeout == 0 or threading.current_thread() is t
        pending, i = list(chunks), 0
        try:
            while i < len(pending):
                c = pending[i]
                need = min(len(c), max(t.capacity, 1))
                room = t.capacity - t.size()
                if room >= need or (no_wait and room > 0):
                    k = min(room, len(c))
                    head = c if k == len(c) else Chunk(c.topic, c.values[:k], c.lengths[:k])
                    if t.put_chunks([head], k):
                        if head is c:
                            i += 1
                        else:
                            pending[i] = Chunk(c.topic, c.values[k:], c.lengths[k:])
                    continue
                if no_wait:
                    raise QueueFullError(
                        f"the producer queue is full ({self._queue_size} messages, "
                        "queue.buffering.max.messages) and queue.enqueue.timeout.ms is 0"
                    )
                t.wait_for_room(need, timeout)
                self._check_open()
        except QueueFullError as exc:
            left = [e for c in pending[i:] for e in c.entries()]
            exc.not_queued = from_entries(left)
            total = sum(map(len, chunks))
            if total > 1:
                exc.args = (
                    f"{exc.args[0] if exc.args else exc}; {len(left)} of {total} "
                    "messages were not queued (see .not_queued)",
                )
            raise

    def _send_many(self, data: ProducerData | list[ProducerData]) -> None:
        """A list: plain single-topic lists go in as checked chunks, others message by message."""
        items, plain = self._as_list(data)
        if not items:
            return None
        t = self._sender
        if plain is not None:
            return self._queue_plain(*plain)
        entries = to_entries(items)
        q = self._queue
        if t.size() + len(entries) > t.capacity:
            return self._enqueue_slow(entries)
        q.extend(entries)
        if len(q) > t.wake_at:
            t.wake()
        return None

    def _enqueue_slow(self, entries: list[Entry]) -> None:
        """Queue full (or closed): block, wait or raise as queue.enqueue.timeout.ms says."""
        self._check_open()
        t = self._sender
        timeout = self._enqueue_timeout
        done = 0
        try:
            while done < len(entries):
                room = t.capacity - t.size()
                if room <= 0:
                    if timeout == 0 or threading.current_thread() is t:
                        # (a hook on the send thread must not wait for room only it can make)
                        raise QueueFullError(
                            f"the producer queue is full ({self._queue_size} messages, "
                            "queue.buffering.max.messages) and queue.enqueue.timeout.ms is 0"
                        )
                    t.wait_for_room(1, timeout)
                    self._check_open()
                    continue
                part = entries[done : done + room]
                self._queue.extend(part)
                done += len(part)
                if len(self._queue) > t.wake_at:
                    t.wake()
        except QueueFullError as exc:
            exc.not_queued = from_entries(entries[done:])
            if len(entries) > 1:
                exc.args = (
                    f"{exc.args[0] if exc.args else exc}; {len(entries) - done} of "
                    f"{len(entries)} messages were not queued (see .not_queued)",
                )
            raise
        return None

    def _send_hooked(
        self, data: ProducerData | list[ProducerData], *wrong: Any, **wrong_kw: Any
    ) -> None:
        """Async path with before_enqueue / after_enqueue hooks, one message at a time."""
        if wrong or wrong_kw:
            raise wrong_send((data, *wrong), wrong_kw)
        cb = self.callbacks
        items = [data] if type(data) is ProducerData else self._as_list(data)[0]
        for d in items:
            if type(d) is not ProducerData:
                raise _not_data(d)
            if "before_enqueue" in self._hooks:
                d = cb.before_enqueue(d)
                if d is None:
                    continue
            self._check_size(d)
            added = False
            try:
                entry = to_entry(d)
                self._enqueue_slow([entry]) if len(
                    self._queue
                ) >= self._sender.limit else self._queue.append(entry)
                added = True
            finally:
                if "after_enqueue" in self._hooks:
                    cb.after_enqueue(d, added)
            t = self._sender
            if len(self._queue) > t.wake_at:
                t.wake()
        return None

    def _send_sync(
        self, data: ProducerData | list[ProducerData], *wrong: Any, **wrong_kw: Any
    ) -> list[DeliveryReport]:
        """Sync: send now, wait for the acks, raise FailedToSendMessageError for failures."""
        if wrong or wrong_kw:
            raise wrong_send((data, *wrong), wrong_kw)
        self._check_open()
        if type(data) is ProducerData:
            self._check_size(data)
            items = [data]
        else:
            items = self._as_list(data)[0]
        return self._sync_outcome(self._sync_reports(items))

    def _sync_outcome(self, reports: list[DeliveryReport]) -> list[DeliveryReport]:
        """Sync: ``reports`` (delivered) returned; raises for their failed messages."""
        for r in reports:
            if r.error is not None:  # the failed messages of every report
                failed = [pair for r in reports if r.error is not None for pair in r.failed]
                if failed:
                    self._raise_sync(failed)
                break
        return reports

    @staticmethod
    def _raise_sync(failed: list[tuple[ProducerData, BaseException]]) -> None:
        """Sync mode: raise for the failed messages (FailedToSendMessageError, or a TLS / SASL /
        authorization refusal as it is)."""
        refused = failed[0][1]
        if (
            isinstance(refused, KafkaConnectionError)
            and not refused.retriable
            and all(exc is refused for _, exc in failed)
        ):  # TLS / SASL: raise it as it is
            raise refused from FailedToSendMessageError(failed)
        if all(isinstance(exc, _AUTHORIZATION) for _, exc in failed):
            raise refused from FailedToSendMessageError(failed)  # no ACL: say so
        raise FailedToSendMessageError(failed)

    def _sync_reports(self, items: list[ProducerData]) -> list[DeliveryReport]:
        """Sync: run before_sending_data, send, wait, deliver; the reports (never raises for
        a failed message)."""
        cb = self.callbacks
        if "before_sending_data" in self._hooks:
            items = list(cb.before_sending_data(items) or ())
        if not items:
            return []
        with self._sync_lock:
            try:
                reports = self.event_handler.handle(items)
            except Exception as exc:  # noqa: BLE001 - a handler's failure fails these messages only
                reports = [DeliveryReport(d.topic, -1, [d], -1, exc) for d in items]
        if reports is None:
            reports = [DeliveryReport(d.topic, -1, [d]) for d in items]
        self._deliver(reports, keep_failures=False)
        return reports

    def _as_list(
        self, data: object
    ) -> tuple[list[ProducerData], tuple[str, list[bytes], list[int]] | None]:
        """Check a list send: ``(items, (topic, values, lengths) or None)``.

        The second item is given when the list is plain (bytes-like values, nothing but topic and
        value set, one topic object): then the send thread need not look at each message
        again.  Raises TypeError for an item that is not a ProducerData,
        MessageSizeTooLargeError for a message over ``message.max.bytes``.
        """
        if isinstance(data, ProducerData):
            return [data], None
        if not isinstance(data, (list, tuple)) or (
            type(data) is tuple and data and isinstance(data[0], str)
        ):
            raise wrong_send(data if type(data) is tuple else (data,), {})
        items = data if type(data) is list else list(data)
        n = len(items)
        if not n:
            return items, None
        limit = self.max_message_bytes
        try:
            topic = items[0].topic
            # comprehensions read slots faster than attrgetter; one pass checks three things
            values = [d.value for d in items if d._extra is None and d.topic is topic]
        except AttributeError:
            values = None
        if values is not None and len(values) == n:
            lengths = plain_lengths(values)  # bytes, bytearray, byte-shaped memoryview
            if lengths is not None and max(lengths) <= limit:
                return items, (topic, values, lengths)
        for d in items:
            if not isinstance(d, ProducerData):
                raise _not_data(d)
            v = d.value
            if type(v) is not bytes or len(v) > limit or d._extra is not None:
                self._check_size(d)
        return items, None

    def _check_size(self, d: ProducerData) -> None:
        """Raise MessageSizeTooLargeError for a message over message.max.bytes (bytes/str)."""
        v = d.value
        size = len(v) if type(v) is bytes and d._extra is None else _size(v) + _size(d.key)
        if size > self.max_message_bytes:
            raise MessageSizeTooLargeError(
                f"message of {size} bytes for topic {d.topic!r} exceeds message.max.bytes "
                f"({self.max_message_bytes}); it was not queued"
            )

    @property
    def _sender(self) -> ProducerSendThread:
        """The send thread (async mode only)."""
        t = self._thread
        if t is None:
            raise IllegalStateError("a sync producer has no send thread")
        return t

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("send() after close()")
        t = self._thread
        if t is not None and t.crashed is not None:
            raise IllegalStateError(f"the producer's send thread died: {t.crashed!r}")

    # ------------------------------------------------------------------ delivery
    def _deliver(self, reports: list[DeliveryReport], keep_failures: bool = True) -> None:
        """Book-keep reports, resolve produce() futures, pass each report to the hooks
        (exceptions in hooks and callbacks are logged)."""
        if self._futures:
            (_py_resolve if speedups is None else speedups.resolve)(reports)
        acked = failed = 0
        kept: list[tuple[ProducerData, BaseException]] = []
        for r in reports:
            if r.error is None:
                acked += len(r)
            else:
                failed += len(r)
                if keep_failures:
                    if len(kept) < MAX_KEPT_FAILURES:
                        kept += r.failed
                    log.warning(
                        "failed to deliver %d message(s) to %s/%s: %s",
                        len(r),
                        r.topic,
                        r.partition,
                        r.error,
                    )
        with self._stats_lock:
            self.stats["acknowledged"] += acked
            self.stats["failed"] += failed
            self.stats["batches"] += len(reports)
            if keep_failures and failed:
                self._failure_count += failed
                room = MAX_KEPT_FAILURES - len(self._failures)
                if room > 0:
                    self._failures += kept[:room]
        if "on_delivery" in self._hooks:
            for r in reports:
                try:
                    self.callbacks.on_delivery(r)
                except Exception:
                    log.exception("CallbackHandler.on_delivery raised")
        if self.on_delivery is not None:
            for r in reports:
                try:
                    self.on_delivery(r)
                except Exception:
                    log.exception("on_delivery callback raised")

    def _raise_failures(self) -> None:
        with self._stats_lock:
            failures, count = self._failures, self._failure_count
            self._failures, self._failure_count = [], 0
        if count:
            more = f" ({count - len(failures)} more not listed)" if count > len(failures) else ""
            raise FailedToSendMessageError(failures, f"failed to send {count} message(s){more}")

    # ------------------------------------------------------------------ metrics
    def metrics(self) -> dict[str, Any]:
        """Counts since creation (docs/metrics.md): per broker requests, errors, round-trip
        p50/p99 (ms), bytes out and in, connection state; per partition batches, messages and
        bytes sent, average batch size and messages in flight; the queue depth, retries, errors
        by code and the delivery counts of ``stats``."""
        with self._stats_lock:
            stats = dict(self.stats)
        handler = self.event_handler
        sent: dict[tuple[str, int], list[int]] = dict(getattr(handler, "partition_stats", {}))
        flying = (
            handler.in_flight_by_partition() if isinstance(handler, DefaultEventHandler) else {}
        )
        partitions = {}
        for (topic, part), (batches, msgs, nbytes) in sorted(sent.items()):
            partitions[f"{topic}/{part}"] = {
                "topic": topic,
                "partition": part,
                "batches": batches,
                "messages": msgs,
                "bytes": nbytes,
                "avg_batch_messages": msgs / batches if batches else 0.0,
                "avg_batch_bytes": nbytes / batches if batches else 0.0,
                "in_flight": flying.get((topic, part), 0),
            }
        return self._metrics.snapshot(
            type="producer",
            client_id=self.config["client.id"],
            queue_depth=self.queued,
            delivery=stats,
            partitions=partitions,
        )

    # ------------------------------------------------------------------ flush / close
    @property
    def queued(self) -> int:
        """Messages waiting in the queue or taken by the send thread and not yet reported."""
        t = self._thread
        return 0 if t is None else len(t.queue) + t.outstanding

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued and wait for its outcome.

        Raises KafkaTimeoutError if ``timeout`` (seconds) passes first, and
        FailedToSendMessageError naming the messages that failed since the last flush.
        """
        t = self._thread
        if t is not None and not t.flush(timeout):
            raise KafkaTimeoutError(
                f"flush timed out after {timeout}s with {self.queued} message(s) undelivered"
            )
        self._raise_failures()

    def close(self, timeout: float | None = None, *, abort_transaction: bool = True) -> None:
        """Drain the queue, send the last batch, release connections.

        After ``timeout`` seconds what is still undelivered is reported failed.  Raises
        FailedToSendMessageError if messages failed since the last flush.  Idempotent.
        A transaction still open is aborted, as Java's producer does, so read_committed
        consumers need not wait for its timeout; ``abort_transaction=False`` leaves it open
        for another process to resume (docs/producer.md, "Resuming a transaction").
        """
        if self._closed:
            return
        self._closed = True
        _LIVE.discard(self)
        if self._reporter is not None:
            self._reporter.stop()
        try:
            if self._thread is not None:
                self._thread.refuse()  # any later send() takes the slow path and is refused
                self._thread.close(timeout)
                self._thread.fail_leftovers()
        finally:
            if self._txn is not None and abort_transaction:
                self._abort_open_transaction(self._txn)
            if self.callbacks is not None and "close" in self._hooks:
                try:
                    self.callbacks.close()
                except Exception:
                    log.exception("CallbackHandler.close raised")
            try:
                self.event_handler.close()
            finally:
                self.context.cluster.close()
                if self._txn is not None:
                    self._txn.close()
        self._raise_failures()

    @property
    def closed(self) -> bool:
        return self._closed

    @staticmethod
    def _abort_open_transaction(txn: Transactions) -> None:
        """close(): abort what is open (a failure is logged; closing goes on)."""
        if txn.state not in (IN_TRANSACTION, ABORTABLE_ERROR):
            return
        try:
            log.info("closing transactional producer %r: aborting its open transaction", txn.tid)
            txn.end(commit=False)
        except KafkaError as exc:
            log.warning("closing %r: could not abort its transaction: %s", txn.tid, exc)

    # ------------------------------------------------------------------ transactions
    @property
    def _transactions(self) -> Transactions:
        if self._txn is None:
            raise IllegalStateError("transactions need the transactional.id config key")
        self._check_open()
        return self._txn

    def init_transactions(self) -> None:
        """Register ``transactional.id`` with its coordinator: get the producer id and epoch,
        fence older producers with this id and end the transaction they left open."""
        self._transactions.init_transactions()

    def begin_transaction(self) -> None:
        """Start a transaction: what is sent until commit or abort belongs to it."""
        self._transactions.begin()

    def send_offsets_to_transaction(self, offsets: Mapping[Any, Any], group: Any) -> None:
        """Commit a consumer group's ``offsets`` as part of the transaction (visible to the
        group only if it commits): consume-transform-produce.

        ``offsets`` maps ``(topic, partition)`` (or a TopicAndPartition) to the next offset to
        consume, an int or an object with ``offset`` and ``metadata``; ``group`` is the group id
        or an object with ``group_id``, ``generation_id``, ``member_id``, ``group_instance_id``
        (Java's ConsumerGroupMetadata) so that a zombie member's commit is refused.
        """
        self._transactions.send_offsets(offsets_to_commit(offsets), group)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Send everything queued, then commit.  A send that failed raises
        TransactionAbortableError (call abort_transaction()), or ProducerFencedError when a
        newer producer with this transactional.id took over (only close() is left)."""
        txn = self._transactions
        txn.check(IN_TRANSACTION)
        try:
            self.flush(timeout)
        except FailedToSendMessageError as exc:
            txn.record_failure(exc)  # state is abortable, or fatal if fenced
            txn.check(IN_TRANSACTION)  # raises the state's error
            raise
        txn.end(commit=True)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Wait for what was sent (its failures are expected and dropped), then abort: a
        read_committed consumer never sees the transaction's messages or offsets."""
        txn = self._transactions
        txn.check(IN_TRANSACTION, ABORTABLE_ERROR)
        try:
            self.flush(timeout)
        except FailedToSendMessageError as exc:
            log.info("aborting transaction of %r: %s", txn.tid, exc)
        txn.end(commit=False)

    def resume_transaction(self, producer_id: int, epoch: int) -> None:
        """Take over the open transaction another producer with this ``transactional.id``
        wrote as ``producer_id`` / ``epoch`` (see :attr:`producer_id_and_epoch`), to commit or
        abort it; instead of init_transactions(), which would abort it.  Contract in
        docs/producer.md ("Resuming a transaction")."""
        self._transactions.resume(producer_id, epoch)

    def _identity(self) -> IdempotentState | None:
        if self._txn is not None:
            return self._txn
        txn: IdempotentState | None = getattr(self.event_handler, "txn", None)
        return txn

    def partition_for(self, topic: str, key: Any) -> int:
        """The partition a message with ``key`` goes to (murmur2 by default), as send() picks."""
        handler = self.event_handler
        if not isinstance(handler, DefaultEventHandler):
            raise TypeError("partition_for needs the DefaultEventHandler")
        parts, _ = handler._partitions(topic)
        encoder = self.context.key_encoder
        encoder = for_topic(encoder, topic)
        kb = getattr(encoder, "to_message", encoder)(key)  # an Encoder or a plain callable
        index: int = self.context.partitioner.partition(kb, len(parts))
        return parts[index]


_PRIMED = False


def _prime_allocator() -> None:
    """Let glibc recycle request-sized buffers instead of mapping fresh pages for each.

    Buffers above malloc's mmap threshold (128 KB at start) are mapped and unmapped per request,
    and every page of a fresh mapping costs a page fault when first written: with 1 MB batches
    that doubled the send thread's cost.  glibc raises the threshold (and the heap trim
    threshold to twice that) when a mapped chunk is freed, so allocating and freeing one 8 MB
    buffer once makes later buffers of up to 8 MB come from the heap.  At most 16 MB of freed
    heap stays with the process.  Harmless elsewhere.
    """
    global _PRIMED
    if not _PRIMED:
        _PRIMED = True
        bytearray(8 << 20)  # allocated (mapped) and freed at once


def _not_data(d: Any) -> TypeError:
    """The error of a list item that is not a ProducerData (a tuple shows the call meant)."""
    if type(d) is tuple and d and isinstance(d[0], str):
        args = ", ".join(repr(x) for x in d)
        return TypeError(
            f"send() takes ProducerData objects, not the tuple ({args}): write ProducerData({args})"
        )
    return TypeError(
        f"send() takes ProducerData objects, got {type(d).__name__}: write "
        "ProducerData(topic, value, key=None)"
    )


def _size(x: Any) -> int:
    if x is None:
        return 0
    if type(x) is bytes or isinstance(x, bytearray):
        return len(x)
    if isinstance(x, memoryview):
        return x.nbytes
    if isinstance(x, str):
        return len(x) if x.isascii() else len(x.encode("utf-8", "replace"))
    return 0  # other objects are checked after serialization (reported failed)


def _instance(value: Any) -> Any:
    """A config value naming a class (instantiate it) or an object (use it)."""
    if value is None:
        return None
    return value() if isinstance(value, type) else value


@atexit.register
def _close_all() -> None:
    """At interpreter exit, drain producers that were not closed (nothing queued is lost)."""
    for producer in list(_LIVE):
        try:
            producer.close(timeout=60)
        except Exception as exc:  # noqa: BLE001 - one producer's failure must not stop the others
            log.error("closing %r at exit: %s", producer, exc)
