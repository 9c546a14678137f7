"""The chaos harness's clients, each a thread that writes what it did into a
:class:`~kclient.bench.chaos_history.History`: an idempotent ``Producer``, a transactional
``Producer`` (every fourth transaction aborted), an idempotent ``AIOProducer``, and read_committed
group consumers (``kclient.Consumer`` and ``AIOConsumer``, classic group protocol)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kclient import AIOConsumer, AIOProducer, Consumer, Producer
from kclient.errors import KafkaError

from .chaos_history import History, encode

__all__ = [
    "Worker",
    "IdempotentProducer",
    "TransactionalProducer",
    "AIOIdempotentProducer",
    "GroupConsumer",
    "AIOGroupConsumer",
    "read_log",
]

log = logging.getLogger(__name__)

#: client settings: short timeouts so that faults show as retries, not stalls
CLIENT = {"retry.backoff.ms": 100, "reconnect.backoff.max.ms": 1000}
#: retries bounded by delivery.timeout.ms (Java's default), not by a count
PRODUCER = {**CLIENT, "request.timeout.ms": 5000, "message.send.max.retries": 1_000_000}
CONSUMER = {**CLIENT, "socket.timeout.ms": 5000}


class Worker(threading.Thread):
    """A client loop on its own thread until :meth:`finish`; a crash is recorded, not raised."""

    def __init__(
        self, name: str, history: History, bootstrap: str, topic: str, partitions: int
    ) -> None:
        super().__init__(name=f"chaos-{name}", daemon=True)
        self.label, self.history, self.bootstrap = name, history, bootstrap
        self.topic, self.partitions = topic, partitions
        self.stopping = threading.Event()
        self.crash: BaseException | None = None

    def run(self) -> None:
        try:
            self.loop()
        except BaseException as exc:  # noqa: BLE001 - recorded and reported by the harness
            log.exception("chaos worker %s crashed", self.label)
            self.crash = exc
            self.history.error(f"{self.label} crashed: {type(exc).__name__}: {exc}")

    def loop(self) -> None:
        raise NotImplementedError

    def finish(self, timeout: float) -> None:
        self.stopping.set()
        self.join(timeout)


class _Pacer:
    """``rate`` items a second, evenly."""

    def __init__(self, rate: float, stopping: threading.Event) -> None:
        self.period, self.stopping, self.next = 1.0 / rate, stopping, time.monotonic()

    def wait(self) -> bool:
        self.next += self.period
        return not self.stopping.wait(max(0.0, self.next - time.monotonic()))


class IdempotentProducer(Worker):
    """``Producer.produce`` with idempotence and acks=all, one record per tick, round-robin
    over the partitions; each delivery report is an ack or a failure in the history."""

    rate = 40.0

    def loop(self) -> None:
        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "producer.type": "async",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "delivery.timeout.ms": 60000,
                **PRODUCER,
            }
        )
        pacer, seq = _Pacer(self.rate, self.stopping), 0
        try:
            while pacer.wait():
                record = (self.label, seq)
                p.produce(
                    self.topic,
                    encode(*record),
                    partition=seq % self.partitions,
                    on_delivery=self._report(record),
                )
                seq += 1
            try:
                p.flush(90)
            except KafkaError:
                pass  # each failed send is in the history (its delivery report)
        finally:
            p.close(timeout=30)

    def _report(self, record: tuple[str, int]) -> Callable[[Any, Any], None]:
        def report(err: Any, md: Any) -> None:
            if err is None:
                self.history.ack(record, md.partition, md.offset)
            else:
                self.history.fail(record, err)

        return report


class TransactionalProducer(Worker):
    """Transactions of ``size`` records over every partition; every fourth one aborted. A
    failure aborts (abortable) or starts a new producer with the same transactional.id (which
    fences the old one); a commit that raised leaves its records in doubt."""

    size, pause = 8, 0.2

    def loop(self) -> None:
        seq, n, p = 0, 0, None
        while not self.stopping.is_set():
            if p is None:
                p = self._producer()
                if p is None:
                    continue
            records = [(self.label, seq + i) for i in range(self.size)]
            seq += self.size
            n += 1
            p = self._transaction(p, records, abort=n % 4 == 0)
            self.stopping.wait(self.pause)
        if p is not None:
            p.close(timeout=30)

    def _producer(self) -> Producer | None:
        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "producer.type": "async",
                "transactional.id": f"chaos-{self.label}",
                "acks": "all",
                "transaction.timeout.ms": 20000,
                "linger.ms": 5,
                **PRODUCER,
            }
        )
        try:
            p.init_transactions()
            return p
        except KafkaError as exc:
            self.history.error(f"init_transactions: {type(exc).__name__}")
            p.close(timeout=5)
            self.stopping.wait(1.0)
            return None

    def _transaction(
        self, p: Producer, records: list[tuple[str, int]], abort: bool
    ) -> Producer | None:
        stage = "begin"
        try:
            p.begin_transaction()
            stage = "send"
            futures = [
                p.produce(self.topic, encode(*r), partition=r[1] % self.partitions) for r in records
            ]
            if abort:
                stage = "abort"
                p.abort_transaction(timeout=60)
                self.history.transaction(records, "aborted")
                return p
            stage = "commit"
            p.commit_transaction(timeout=60)
        except KafkaError as exc:
            self.history.error(f"transaction {stage}: {type(exc).__name__}")
            # a commit that raised may have committed; an unsent or aborted one did not
            self.history.transaction(records, "in_doubt" if stage == "commit" else "aborted")
            try:
                p.abort_transaction(timeout=30)
                return p
            except KafkaError:
                p.close(timeout=5)
                return None
        self.history.transaction(records, "committed")
        for r, f in zip(records, futures):
            md = f.result(timeout=0)
            self.history.ack(r, md.partition, md.offset)
        return p


class AIOIdempotentProducer(Worker):
    """``AIOProducer.send`` (idempotent, acks=all) on an event loop of its own thread."""

    rate = 40.0

    def loop(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        async with AIOProducer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                **PRODUCER,
            }
        ) as p:
            pending: set[asyncio.Task[None]] = set()
            seq, period, next_at = 0, 1.0 / self.rate, time.monotonic()
            while not self.stopping.is_set():
                next_at += period
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                task = asyncio.create_task(self._send(p, (self.label, seq)))
                pending.add(task)
                task.add_done_callback(pending.discard)
                seq += 1
            await asyncio.gather(*pending)

    async def _send(self, p: AIOProducer, record: tuple[str, int]) -> None:
        try:
            md = await p.send(self.topic, encode(*record), partition=record[1] % self.partitions)
        except KafkaError as exc:
            self.history.fail(record, exc)
        else:
            self.history.ack(record, md.partition, md.offset)


class _Epochs:
    """A rebalance listener that counts assignments: deliveries between two are in order."""

    def __init__(self) -> None:
        self.epoch = 0

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.epoch += 1

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.epoch += 1

    def on_partitions_lost(self, lost: Any) -> None:
        self.epoch += 1


def _consumer_conf(bootstrap: str, group: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 500,
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 1000,
        **CONSUMER,
    }


class GroupConsumer(Worker):
    """``kclient.Consumer`` in group ``group`` (read_committed), polling until stopped."""

    group = "chaos-sync"

    def loop(self) -> None:
        epochs = _Epochs()
        c = Consumer(
            **{
                k.replace(".", "_"): v
                for k, v in _consumer_conf(self.bootstrap, self.group).items()
            }
        )
        try:
            c.subscribe([self.topic], listener=epochs)
            while not self.stopping.is_set():
                try:
                    batch = c.poll(timeout=0.5)
                except KafkaError as exc:
                    self.history.error(f"{self.label} poll: {type(exc).__name__}")
                    continue
                for tp, records in batch.items():
                    for r in records:
                        self.history.deliver(
                            self.label, self.group, epochs.epoch, tp.partition, r.offset, r.value
                        )
        finally:
            c.close()


class AIOGroupConsumer(Worker):
    """``AIOConsumer`` in group ``group`` (read_committed), ``getmany`` until stopped."""

    group = "chaos-aio"

    def loop(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        epochs = _Epochs()
        c = AIOConsumer(
            **{
                k.replace(".", "_"): v
                for k, v in _consumer_conf(self.bootstrap, self.group).items()
            }
        )
        await c.start()
        try:
            c.subscribe([self.topic], listener=epochs)
            while not self.stopping.is_set():
                try:
                    batch = await c.getmany(timeout_ms=500)
                except KafkaError as exc:
                    self.history.error(f"{self.label} getmany: {type(exc).__name__}")
                    continue
                for tp, records in batch.items():
                    for r in records:
                        self.history.deliver(
                            self.label, self.group, epochs.epoch, tp.partition, r.offset, r.value
                        )
        finally:
            await c.close()


def transactions_settled(bootstrap: str, topic: str, partitions: int) -> bool:
    """Whether every partition's last stable offset reached its high watermark: no
    transaction is open any more (a producer that died mid-transaction leaves one open until
    the coordinator aborts it after transaction.timeout.ms; read_committed reads stop there)."""
    from kclient.structs import TopicPartition

    tps = [TopicPartition(topic, p) for p in range(partitions)]
    ends = []
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer(
            bootstrap_servers=bootstrap,
            isolation_level=isolation,
            **{k.replace(".", "_"): v for k, v in CONSUMER.items()},
        )
        try:
            ends.append(c.end_offsets(tps))
        except KafkaError:
            return False
        finally:
            c.close()
    return ends[0] == ends[1]


def read_log(
    bootstrap: str,
    topic: str,
    partitions: int,
    quiet_polls: int = 6,
    isolation: str = "read_committed",
) -> list[tuple[int, int, bytes | None]]:
    """Every record of ``topic`` (read_committed unless ``isolation`` says otherwise), from
    the start until polls come back empty ``quiet_polls`` times in a row (the producers are
    closed by then)."""
    from kclient.structs import TopicPartition

    c = Consumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation,
        auto_offset_reset="earliest",
        **{k.replace(".", "_"): v for k, v in CONSUMER.items()},
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        out: list[tuple[int, int, bytes | None]] = []
        quiet, deadline = 0, time.monotonic() + 120
        while quiet < quiet_polls and time.monotonic() < deadline:
            got = c.poll(timeout=0.5)
            quiet = 0 if got else quiet + 1
            for tp, records in got.items():
                out += [(tp.partition, r.offset, r.value) for r in records]
        return out
    finally:
        c.close()
