"""Scenarios shared by the mini-broker and real-Kafka tests of cooperative rebalancing and
static membership: a producer writing continuously, members polling in threads, and what each
member's listener heard and when each record arrived."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from kclient import Consumer, TopicPartition

from ..waiting import still
from .helpers import wait_for


class Writer(threading.Thread):
    """Produces to every partition of a topic, one record per partition every ``every_s``."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, every_s: float = 0.01):
        super().__init__(daemon=True, name=f"writer-{topic}")
        from confluent_kafka import Producer

        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": 1, "enable.idempotence": False}
        )
        self.topic, self.partitions, self.every = topic, partitions, every_s
        self.stop_event = threading.Event()
        self.sent = 0

    def run(self) -> None:
        i = 0
        while not self.stop_event.is_set():
            for p in range(self.partitions):
                self.producer.produce(self.topic, value=f"{p}-{i}".encode(), partition=p)
                self.sent += 1
            self.producer.poll(0)
            i += 1
            time.sleep(self.every)

    def stop(self) -> int:
        self.stop_event.set()
        if self.is_alive():
            self.join(10)
        assert self.producer.flush(30) == 0
        return self.sent


@dataclass
class Member:
    """A Consumer polling in a thread; records (offset, arrival time) per partition and the
    listener's calls."""

    name: str
    consumer: Consumer
    events: list[tuple[float, str, str, list[int]]]
    arrivals: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)
    stop_event: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.events.append(
            (time.monotonic(), self.name, "revoked", sorted(p.partition for p in partitions))
        )

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.events.append(
            (time.monotonic(), self.name, "assigned", sorted(p.partition for p in partitions))
        )

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.events.append(
            (time.monotonic(), self.name, "lost", sorted(p.partition for p in partitions))
        )

    def start(self, topic: str) -> None:
        self.consumer.subscribe([topic], listener=self)
        self.thread = threading.Thread(target=self._loop, daemon=True, name=self.name)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                batch = self.consumer.poll(50)
            except BaseException as exc:  # noqa: BLE001 - surfaced by the test
                self.errors.append(exc)
                return
            now = time.monotonic()
            for tp, records in batch.items():
                self.arrivals.setdefault(tp.partition, []).extend((r.offset, now) for r in records)

    def stop(self, close: bool = True) -> None:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(30)
        if close:
            self.consumer.close()

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def max_gap(self, partition: int, since: float, until: float) -> float:
        """The longest time without a delivered record of ``partition`` in [since, until]."""
        times = (
            [since]
            + [t for _, t in self.arrivals.get(partition, ()) if since <= t <= until]
            + [until]
        )
        return max(b - a for a, b in zip(times, times[1:]))


def member(name: str, conf: dict[str, Any], events: list) -> Member:
    return Member(name, Consumer(conf), events)


def members(driver: str) -> Any:
    """The member factory of a driver: "threaded" (kclient.Consumer) or "asyncio"
    (AIOConsumer), both with the same view."""
    if driver == "asyncio":
        from .aio_member import aio_member

        return aio_member
    return member


#: the drivers every group scenario runs on
DRIVERS = ["threaded", "asyncio"]


@dataclass
class Handover:
    """What the cooperative (or eager) handover run measured."""

    events: list[tuple[float, str, str, list[int]]]
    kept: set[int]
    moved: set[int]
    rebalance_s: float
    kept_max_gap_s: float
    kept_records_during: int
    sent: int
    offsets: dict[int, list[int]]


def run_handover(
    bootstrap: str, topic: str, partitions: int, conf: dict[str, Any], make: Any = member
) -> Handover:
    """Member a owns every partition of ``topic`` while a producer writes; member b joins.
    Measures the rebalance (b's subscribe until both hold their final share) and the longest
    gap in a's deliveries of the partitions it keeps."""
    group = f"coop-{uuid.uuid4().hex[:8]}"
    conf = dict(conf, **{"group.id": group})
    events: list = []
    writer = Writer(bootstrap, topic, partitions)
    writer.start()
    a = make("a", conf, events)
    b = make("b", conf, events)
    try:
        a.start(topic)
        try:
            wait_for(
                lambda: (
                    len(a.partitions()) == partitions
                    and all(a.arrivals.get(p) for p in range(partitions))
                ),
                timeout=60,
                message="a owns and reads every partition",
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}; a owns {a.partitions()}, read "
                f"{ {p: len(v) for p, v in a.arrivals.items()} }, errors "
                f"{a.errors}, sent {writer.sent}"
            ) from None
        time.sleep(0.5)
        start = time.monotonic()
        b.start(topic)
        half = partitions // 2
        try:
            wait_for(
                lambda: (
                    len(b.partitions()) == half
                    and len(a.partitions()) == partitions - half
                    and all(b.arrivals.get(p) for p in b.partitions())
                ),
                timeout=60,
                message="a and b share the partitions",
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}; a owns {a.partitions()}, b owns {b.partitions()}, "
                f"errors {a.errors} {b.errors}, listener calls "
                f"{[e[1:] for e in events]}"
            ) from None
        end = time.monotonic()
        time.sleep(0.5)
        kept, moved = a.partitions(), b.partitions()
        gap = max(a.max_gap(p, start, end) for p in kept)
        during = min(sum(1 for _, t in a.arrivals.get(p, ()) if start <= t <= end) for p in kept)
        sent = writer.stop()
        wait_for(
            lambda: sum(len(v) for m in (a, b) for v in m.arrivals.values()) >= sent,
            timeout=60,
            message="every record consumed",
        )
        assert not a.errors and not b.errors, (a.errors, b.errors)
        # the listener calls of the scenario, not of its teardown: once a stops (it leaves the
        # group), b may be handed a's partitions before b stops too
        seen = list(events)
    finally:
        writer.stop()
        a.stop()
        b.stop()
    offsets = {
        p: sorted(o for m in (a, b) for o, _ in m.arrivals.get(p, ())) for p in range(partitions)
    }
    return Handover(seen, kept, moved, end - start, gap, during, sent, offsets)


@dataclass
class StaticRestart:
    """What the static-restart run saw."""

    events: list[tuple[float, str, str, list[int]]]
    generation_before: int
    generation_after: int
    moved_back: set[int]
    committed: dict[int, int]
    first_offsets: dict[int, int]
    fenced_error: BaseException | None


def run_static_restart(
    bootstrap: str,
    topic: str,
    partitions: int,
    conf: dict[str, Any],
    produce: Any,
    make: Any = member,
) -> StaticRestart:
    """Dynamic member b (the leader) and static member a ("inst-a") share ``topic``; a closes
    and a new consumer with a's group.instance.id rejoins within the session timeout; then a
    third one with the same id fences the second."""
    group = f"static-{uuid.uuid4().hex[:8]}"
    conf = dict(conf, **{"group.id": group})
    events: list = []
    b = make("b", conf, events)
    b.start(topic)
    wait_for(lambda: len(b.partitions()) == partitions, timeout=60, message="b owns all")
    static = dict(conf, **{"group.instance.id": "inst-a"})
    a = make("a", static, events)
    a.start(topic)
    half = partitions // 2
    try:
        try:
            wait_for(
                lambda: len(a.partitions()) == half and len(b.partitions()) == half,
                timeout=60,
                message="static a and b share the partitions",
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}; a owns {a.partitions()}, b owns {b.partitions()}, "
                f"errors {a.errors} {b.errors}, listener calls "
                f"{[e[1:] for e in events]}"
            ) from None
        produce(10)
        wait_for(
            lambda: sum(len(v) for m in (a, b) for v in m.arrivals.values()) >= 10 * partitions,
            timeout=60,
            message="the first records consumed",
        )
        a_parts = a.partitions()
        a.stop(close=False)
        a.consumer.commit()
        committed = {tp.partition: a.consumer.committed(tp) for tp in a.consumer.assignment()}
        a.consumer.close()  # static: no LeaveGroup
        gen = b.consumer.group_metadata().generation_id
        b_events = [e for e in events if e[1] == "b"]
        produce(10)
        a2 = make("a2", static, events)
        a2.start(topic)
        wait_for(
            lambda: a2.partitions() == a_parts and all(a2.arrivals.get(p) for p in a_parts),
            timeout=30,
            message="a2 took a's place",
        )
        still(
            lambda: [e for e in events if e[1] == "b"] == b_events,
            1.0,
            "b hears of no rebalance (it would have by now)",
        )
        assert [e for e in events if e[1] == "b"] == b_events, "b's listener was called"
        gen_after = b.consumer.group_metadata().generation_id
        first = {p: a2.arrivals[p][0][0] for p in a_parts}
        # a third process with the same instance id fences a2
        a3 = make("a3", static, events)
        a3.start(topic)
        wait_for(lambda: bool(a2.errors), timeout=30, message="a2 fenced")
        fenced = a2.errors[0]
        a3.stop()
        a2.stop()
        return StaticRestart(events, gen, gen_after, a_parts, committed, first, fenced)
    finally:
        for m in (a, b):
            m.stop_event.set()
        b.stop()
