"""AIOProducer: ``await producer.send(topic, value)`` returns the message's RecordMetadata.

    async with AIOProducer(bootstrap_servers="127.0.0.1:9092", linger_ms=5) as p:
        md = await p.send("events", b"hello", key=b"k")
        futs = [await p.enqueue("events", v) for v in values]   # many in flight
        await p.flush()

Theory of operation: ``send``/``enqueue`` serialize and partition the message in the caller's
task and append it to an open batch of the :class:`Accumulator`, with an ``asyncio.Future``
for its outcome.  One sender task takes the ready batches (full, lingered, or all while a flush
waits), groups them by partition leader and writes one Produce request per broker through
:class:`AIOConnection` (up to ``max.in.flight.requests.per.connection`` per broker).  Responses
resolve the futures in a done-callback: offsets per message, or the partition's error for that
batch only; retriable errors put the batch back at the front of its partition's queue.

Idempotence and transactions (``enable.idempotence``, ``transactional.id``) are the core's
(:mod:`kclient.core.idempotence`, :mod:`kclient.core.transactions`), as for the threaded
producer: ``await init_transactions()``, ``begin_transaction()``, sends,
``send_offsets_to_transaction()``, ``commit_transaction()`` / ``abort_transaction()``; a newer
instance with the same ``transactional.id`` fences this one (ProducerFencedError).

Cancellation: a request frame is written whole by a synchronous call, so cancelling a task
never tears a frame.  Cancelling ``await send()`` cancels that message's future; if its batch
has not been written yet the message is left out, otherwise it is delivered (its outcome is
then not reported).  Cancelling ``flush()`` stops only the waiting; the sender carries on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from kclient._args import one_of, record_headers
from kclient.config import load_config
from kclient.core import transactions as txn_core
from kclient.core.idempotence import IdempotentState
from kclient.core.produce import still_appearing
from kclient.core.steps import Conversation
from kclient.core.transactions import (
    ABORTABLE_ERROR,
    IN_TRANSACTION,
    ProducerIdentity,
    TxnState,
)
from kclient.encoders import DefaultEncoder, for_topic
from kclient.errors import (
    IllegalStateError,
    InvalidConfigError,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    QueueFullError,
    UnknownTopicOrPartitionError,
)
from kclient.metrics import ClientMetrics, start_reporter
from kclient.observability import tracing_for
from kclient.producer.batches import RECORD_OVERHEAD
from kclient.producer.context import connection_settings, create_encoder
from kclient.producer.data import RecordMetadata
from kclient.producer.future import DeliveryCallback
from kclient.protocol.compression import CODEC_IDS, NONE

from .accumulator import Accumulator, AIOBatch, Headers
from .cluster import AIOCluster
from .driver import ClusterTransport, run
from .sender import Sender
from .timeouts import within

__all__ = ["AIOProducer"]

#: headers as send() takes them: a list of (name, value) pairs or a dict; str values UTF-8
HeadersArg = Iterable[tuple[str, Any]] | Mapping[str, Any] | None

log = logging.getLogger(__name__)
#: enqueue() gives the event loop a turn when it has run this long (seconds) without one
_SLICE = 0.005
_T = TypeVar("_T")

#: keys of the sync producer's machinery that have no meaning for the asyncio producer
_UNSUPPORTED = {
    "event.handler": "AIOProducer has its own sender task, no EventHandler",
    "callback.handler": "AIOProducer reports through futures, no CallbackHandler",
    "zookeeper.connect": "AIOProducer finds brokers with bootstrap.servers only",
}


class AIOProducer(ProducerIdentity):
    """An asyncio producer: batching per partition, per-message futures, flush and close."""

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        conf = load_config("producer", config, **overrides)
        for key, why in _UNSUPPORTED.items():
            if conf.is_set(key) and conf[key]:
                raise InvalidConfigError(f"{key}: {why}", key, conf[key])
        conf.require("metadata.broker.list")
        self.config = conf
        self._metrics = ClientMetrics()
        settings = connection_settings(conf).replace(metrics=self._metrics)
        self.cluster = AIOCluster([f"{h}:{p}" for h, p in conf["metadata.broker.list"]], settings)
        self._value_enc = _encoder(conf, "serializer.class")
        self._key_enc = _encoder(conf, "key.serializer.class")
        self._partitioner = conf.create("partitioner.class")
        self.max_message_bytes: int = conf["message.max.bytes"]
        self.capacity: int = conf["queue.buffering.max.messages"]
        self.enqueue_timeout_ms: int = conf["queue.enqueue.timeout.ms"]
        codec = CODEC_IDS[conf["compression.codec"]]
        only = set(conf["compressed.topics"])
        self._codec_of = (lambda t: codec if t in only else NONE) if only else (lambda t: codec)
        self.acc = Accumulator(
            conf["batch.num.messages"],
            conf["batch.size"],
            conf["queue.buffering.max.ms"] / 1000.0,
            conf["delivery.timeout.ms"] / 1000.0,
        )
        self._partitions: dict[str, int] = {}
        self._sticky: dict[str, int] = {}
        self._sender: Sender | None = None
        self._room: asyncio.Event | None = None
        self._closed = False
        self._started = False
        self._slice = 0.0
        #: per topic, the open batch of its sticky partition (enqueue's fast path)
        self._plain: dict[str, AIOBatch] = {}
        self._new_future: Callable[[], asyncio.Future[RecordMetadata]] = lambda: (
            asyncio.get_running_loop().create_future()
        )
        self._wake: Callable[[], None] = lambda: None
        #: idempotence / transactions state (the core's); None when neither is on
        self._txn: TxnState | None = None
        self._idem: IdempotentState | None = None
        if conf["transactional.id"]:
            self._idem = self._txn = TxnState(
                conf["transactional.id"],
                conf["transaction.timeout.ms"],
                conf["retry.backoff.ms"] / 1000.0,
            )
        elif conf["enable.idempotence"]:
            self._idem = IdempotentState()
        self._transport = ClusterTransport(self.cluster)
        self._txn_lock: asyncio.Lock | None = None
        self._reporter = start_reporter(
            conf["statistics.interval.ms"],
            conf["stats.cb"],
            self.metrics,
            conf["statistics.format"],
        )
        tracing = tracing_for(conf)
        if tracing is not None:
            from kclient.observability.clients import trace_aio_producer

            trace_aio_producer(self, tracing)

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect to a bootstrap broker and start the sender task (also done by the first send)."""
        if self._closed:
            raise IllegalStateError("start() on a closed AIOProducer")
        if self._started:
            return
        self._started = True
        await self.cluster.refresh([], allow_auto_create=False)
        conf = self.config
        self._room = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._new_future = functools.partial(asyncio.Future, loop=loop)
        self._sender = Sender(
            self,
            conf["request.required.acks"],
            conf["request.timeout.ms"],
            conf["max.in.flight.requests.per.connection"],
            conf["message.send.max.retries"],
            conf["retry.backoff.ms"] / 1000.0,
            self._codec_of,
            self._idem,
        )
        self._wake = self._sender.wake

    async def __aenter__(self) -> AIOProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def flush(self, timeout: float | None = None) -> None:
        """Send every queued message now and wait until each is acknowledged or failed."""
        if self._sender is None:
            return
        await self._sender.flush(timeout)

    async def close(self, timeout: float | None = None) -> None:
        """Flush (within ``timeout`` seconds, None: no limit), stop the sender, close sockets.

        Messages still unsent when the timeout runs out fail with KafkaTimeoutError."""
        if self._closed:
            return
        if self._txn is not None and self._txn.state in (IN_TRANSACTION, ABORTABLE_ERROR):
            try:  # as Java's producer: read_committed readers need not wait for it
                await self.abort_transaction(timeout)
            except KafkaError as exc:
                log.warning("closing %r: could not abort its transaction: %s", self, exc)
        self._closed = True
        self._reporter.stop()
        if self._sender is not None:
            try:
                await self._sender.flush(timeout)
            except (asyncio.TimeoutError, KafkaTimeoutError):
                pass
            await self._sender.stop(
                KafkaTimeoutError("the producer was closed before the message was sent")
            )
        await self.cluster.close()

    stop = close  # aiokafka's name

    # -- transactions ---------------------------------------------------------------------------
    async def run(self, conversation: Conversation[_T]) -> _T:
        """Run a core conversation on this producer's brokers, one at a time (the sender's
        InitProducerId and AddPartitionsToTxn, the transaction calls)."""
        if self._txn_lock is None:
            self._txn_lock = asyncio.Lock()
        async with self._txn_lock:
            return await run(conversation, self._transport)

    def _transactions(self) -> TxnState:
        if self._txn is None:
            raise IllegalStateError("transactions need the transactional.id config key")
        if self._closed:
            raise IllegalStateError("the AIOProducer is closed")
        return self._txn

    async def init_transactions(self) -> None:
        """Register ``transactional.id`` with its coordinator: get the producer id and epoch,
        fence older producers with this id and end the transaction they left open."""
        txn = self._transactions()
        if not self._started:
            await self.start()
        await self.run(txn_core.init_transactions(txn))

    async def begin_transaction(self) -> None:
        """Start a transaction: what is sent until commit or abort belongs to it."""
        self._transactions().begin()

    async def send_offsets_to_transaction(self, offsets: Mapping[Any, Any], group: Any) -> None:
        """Commit a consumer group's ``offsets`` (``{(topic, partition): next offset}``, or
        TopicPartition keys, OffsetAndMetadata values) as part of the transaction: the group
        sees them only if it commits.  ``group``: the group id, or an object with Java's
        ConsumerGroupMetadata fields, so that a zombie member's commit is refused."""
        txn = self._transactions()
        await self.run(txn_core.send_offsets(txn, txn_core.offsets_to_commit(offsets), group))

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Send everything queued, then commit.  A send that failed raises
        TransactionAbortableError (call abort_transaction()), or ProducerFencedError when a
        newer producer with this transactional.id took over (only close() is left)."""
        txn = self._transactions()
        txn.check(IN_TRANSACTION)
        await self.flush(timeout)
        txn.check(IN_TRANSACTION)  # a failed send made it abortable (or fatal)
        await self.run(txn_core.end_transaction(txn, commit=True))

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Wait for what was sent (its failures are expected), then abort: a read_committed
        consumer never sees the transaction's messages or offsets."""
        txn = self._transactions()
        txn.check(IN_TRANSACTION, ABORTABLE_ERROR)
        await self.flush(timeout)
        await self.run(txn_core.end_transaction(txn, commit=False))

    def _identity(self) -> IdempotentState | None:
        return self._idem

    # -- sending --------------------------------------------------------------------------------
    async def _wait_for_topic(self, topic: str) -> list[int]:
        """The partition ids of ``topic``; a topic the metadata does not show yet (being
        created) is asked for again every retry.backoff.ms up to
        topic.metadata.propagation.max.ms (core.produce.still_appearing)."""
        started = time.monotonic()
        limit = self.config["topic.metadata.propagation.max.ms"] / 1000.0
        while True:
            try:
                return await self.cluster.partitions_for(topic)
            except KafkaError as exc:
                if not still_appearing(exc, time.monotonic() - started, limit):
                    raise
            await asyncio.sleep(self.config["retry.backoff.ms"] / 1000.0)
            self.cluster.topics.pop(topic, None)

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: HeadersArg = None,
        *,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
        callback: DeliveryCallback | None = None,
    ) -> RecordMetadata:
        """Send one message and wait for its acknowledgement: its RecordMetadata, or its error
        raised (this message's alone: an unknown partition, a message over message.max.bytes,
        a topic authorization failure, ...).  Arguments as enqueue()."""
        fut = await self.enqueue(
            topic,
            value,
            key,
            partition,
            timestamp_ms,
            headers,
            timestamp=timestamp,
            on_delivery=on_delivery,
            callback=callback,
        )
        try:
            return await fut
        except asyncio.CancelledError:
            if self._sender is not None:
                self._sender.cancelled = True
            raise

    #: aiokafka's name for the same call
    send_and_wait = send

    async def enqueue(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: HeadersArg = None,
        *,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
        callback: DeliveryCallback | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue one message; returns its future at once (waits only while the queue is full,
        ``queue.buffering.max.messages``). Per-message errors are raised here or set on the
        future (and logged at WARNING); ``await fut`` gives the RecordMetadata.

        As kclient.Producer.produce: ``timestamp`` is an alias of ``timestamp_ms``, ``headers``
        a list of pairs or a dict (str values sent as UTF-8), ``on_delivery(err, metadata)``
        (alias ``callback``) is called once with the outcome."""
        if self._txn is not None:
            self._txn.check_send()  # inside a transaction this producer began
        if timestamp is not None or on_delivery is not None or callback is not None:
            queued = await self.enqueue(
                topic,
                value,
                key,
                partition,
                one_of("send()", timestamp_ms=timestamp_ms, timestamp=timestamp),
                headers,
            )
            report = one_of("send()", on_delivery=on_delivery, callback=callback)
            if report is not None:
                queued.add_done_callback(functools.partial(_report, report, topic))
            return queued
        if (
            key is None
            and partition is None
            and timestamp_ms is None
            and headers is None
            and type(value) is bytes
        ):
            # the common case - a bytes value to the topic's open sticky batch - in a few lines
            b = self._plain.get(topic)
            acc = self.acc
            if (
                b is not None
                and not b.sealed
                and b.keys is None
                and b.timestamps is None
                and b.headers is None
                and len(b.values) < acc.batch_messages
                and acc.pending < self.capacity
                and not self._closed
                and self._value_enc is None
            ):
                size = len(value) + RECORD_OVERHEAD
                if b.size + size <= acc.batch_bytes and size <= self.max_message_bytes:
                    fut: asyncio.Future[RecordMetadata] = self._new_future()
                    b.values.append(value)
                    b.futures.append(fut)
                    b.size += size
                    acc.pending += 1
                    if len(b.values) >= acc.batch_messages:
                        self._wake()
                    if time.monotonic() - self._slice > _SLICE:
                        await asyncio.sleep(0)
                        self._slice = time.monotonic()
                    return fut
        if not self._started:
            await self.start()
        if self._closed:
            raise IllegalStateError("send() on a closed AIOProducer")
        if type(topic) is not str or not topic:
            raise TypeError(
                f"send() needs a topic name (str) first, got {topic!r}; "
                "e.g. await producer.send('events', b'value', key=b'k')"
            )
        acc = self.acc
        if acc.pending >= self.capacity:
            await self._wait_room()
        if time.monotonic() - self._slice > _SLICE:
            # a tight send loop would otherwise hold the event loop (no await of send() ever
            # suspends while the queue has room): let the sender and others run
            await asyncio.sleep(0)
            self._slice = time.monotonic()
        v = (
            value
            if type(value) is bytes and self._value_enc is None
            else _encode(self._value_enc, value, topic)
        )
        k = (
            key
            if key is None or (type(key) is bytes and self._key_enc is None)
            else _encode(self._key_enc, key, topic)
        )
        size = (len(v) if v is not None else 0) + (len(k) if k is not None else 0)
        hdrs: Headers | None = None
        if headers is not None:
            pairs = record_headers(headers, "send()") or []
            size += sum(len(h) + (len(hv) if hv is not None else 0) for h, hv in pairs)
            hdrs = pairs
        if size + RECORD_OVERHEAD > self.max_message_bytes:
            raise MessageSizeTooLargeError(
                f"message of {size} bytes for topic {topic!r} exceeds message.max.bytes "
                f"({self.max_message_bytes})"
            )
        n = self._partitions.get(topic)
        if n is None:
            n = self._partitions[topic] = len(await self._wait_for_topic(topic))
        if partition is None:
            if k is None:
                partition = self._sticky.get(topic)
                if partition is None or partition >= n:
                    partition = self._sticky[topic] = self._partitioner(None, n)
            else:
                partition = self._partitioner(k, n)
        elif not 0 <= partition < n:
            n = self._partitions[topic] = len(await self.cluster.partitions_for(topic))
            if not 0 <= partition < n:
                raise UnknownTopicOrPartitionError(
                    f"topic {topic!r} has partitions 0..{n - 1}, not {partition}"
                )
        sender = self._sender
        assert sender is not None
        fut = sender.loop.create_future()
        batch, new = acc.batch_for(topic, partition, size, sender.loop.time())
        batch.append(v, k, timestamp_ms, hdrs, size + RECORD_OVERHEAD, fut)
        acc.pending += 1
        if key is None and self._sticky.get(topic) == partition:
            self._plain[topic] = batch  # the fast path above appends to it next
        if new or len(batch.values) >= acc.batch_messages or batch.size >= acc.batch_bytes:
            if new and len(acc.queues[(topic, partition)]) > 1:
                self.batch_left(topic, partition)  # the one before is full
            sender.wake()
        return fut

    async def _wait_room(self) -> None:
        """Wait until the queue has room (queue.enqueue.timeout.ms: -1 forever, 0 not at all)."""
        t = self.enqueue_timeout_ms
        if t == 0:
            raise QueueFullError(
                f"the queue holds queue.buffering.max.messages ({self.capacity}) messages"
            )
        room = self._room
        assert room is not None
        deadline = None if t < 0 else time.monotonic() + t / 1000.0
        while self.acc.pending >= self.capacity:
            room.clear()
            if self._sender is not None:
                self._sender.wake()
            if deadline is None:
                await room.wait()
                continue
            try:
                await within(room.wait(), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                raise QueueFullError(
                    f"the queue stayed full (queue.buffering.max.messages "
                    f"{self.capacity}) for queue.enqueue.timeout.ms "
                    f"({t} ms)"
                ) from None

    def released(self, n: int) -> None:
        """``n`` messages left the queue (acknowledged or failed): wake senders waiting for room."""
        acc = self.acc
        acc.pending -= n
        room = self._room
        if room is not None and acc.pending < self.capacity:
            room.set()

    def batch_left(self, topic: str, partition: int) -> None:
        """A batch of ``topic``/``partition`` is full or sent: keyless messages move on to the
        next partition (the sticky partitioner of KIP-480)."""
        if self._sticky.get(topic) == partition:
            self._sticky[topic] = (partition + 1) % max(1, self._partitions.get(topic, 1))

    def forget_topic(self, topic: str) -> None:
        """Drop the cached partition count of ``topic`` (its metadata changed)."""
        self._partitions.pop(topic, None)

    def metrics(self) -> dict[str, Any]:
        """Per-broker counts (docs/metrics.md), per partition the batches and messages queued
        and the open batch's bytes, and the messages pending (queued or in flight)."""
        parts = {
            f"{t}/{p}": {
                "queued_batches": len(q),
                "queued_messages": sum(len(b) for b in q),
                "open_batch_bytes": q[-1].size if q else 0,
            }
            for (t, p), q in self.acc.queues.items()
        }
        out = self._metrics.snapshot(
            type="producer",
            client_id=self.config["client.id"],
            partitions=self._metrics.with_messages(parts, "messages"),
            queue_depth=self.acc.pending,
        )
        out["queued_batches"] = self.acc.queued()
        out["pending_messages"] = self.acc.pending
        return out

    def __repr__(self) -> str:
        return f"AIOProducer({self.cluster.bootstrap}, pending={self.acc.pending})"


def _report(callback: DeliveryCallback, topic: str, fut: asyncio.Future[RecordMetadata]) -> None:
    """Call ``on_delivery(err, metadata)`` with a send's outcome (exceptions are logged)."""
    if fut.cancelled():
        return
    err = fut.exception()
    md = fut.result() if err is None else RecordMetadata(topic, -1, -1)
    try:
        callback(err, md)
    except Exception:
        log.exception("on_delivery callback raised")


def _encoder(conf: Any, key: str) -> Any:
    """The configured serializer's function; None for DefaultEncoder (bytes pass through)."""
    enc = create_encoder(conf, key)
    if type(enc) is DefaultEncoder:
        return None
    if hasattr(enc, "for_topic"):  # bound to each topic at send (kclient.encoders)
        return enc
    return getattr(enc, "to_message", enc)


def _encode(fn: Any, value: Any, topic: str) -> bytes | None:
    if value is None:
        return None
    if fn is None:
        return DefaultEncoder().to_message(value)
    out = fn(value) if not hasattr(fn, "for_topic") else for_topic(fn, topic).to_message(value)
    if out is not None and type(out) is not bytes:
        if not isinstance(out, (bytearray, memoryview)):
            raise TypeError(f"the serializer returned {type(out).__name__}, not bytes")
        out = bytes(out)
    return cast("bytes | None", out)
