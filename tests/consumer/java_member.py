"""A Java KafkaConsumer group member (JavaClients ``member`` mode) beside kclient members, and
the mixed-group scenario the mini-broker and real-Kafka tests share."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from kclient.testing.java_tools import KafkaTools

from ..waiting import still
from .coop_scenario import member
from .helpers import wait_for

JAVA_COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


class JavaMember:
    """JavaClients member: its current partitions, the records it read, its listener calls."""

    def __init__(
        self,
        tools: KafkaTools,
        topic: str,
        group: str,
        strategy: str = JAVA_COOPERATIVE,
        instance_id: str | None = None,
    ) -> None:
        args = ["member", tools.bootstrap, topic, group, strategy]
        if instance_id:
            args.append(instance_id)
        self.proc = tools.start_java_clients(*args)
        self.owned: set[int] = set()
        self.records: list[tuple[int, int, str]] = []
        self.events: list[tuple[str, list[int]]] = []
        self.lines: list[str] = []
        self.closed = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            kind, _, rest = line.partition(" ")
            if kind == "record":
                p, off, value = rest.split(" ", 2)
                self.records.append((int(p), int(off), value))
            elif kind in ("assigned", "revoked", "lost"):
                parts = [int(p) for p in rest.split(",") if p]
                self.events.append((kind, parts))
                if kind == "assigned":
                    self.owned |= set(parts)
                else:
                    self.owned -= set(parts)
            elif kind == "closed":
                self.closed.set()
        self.closed.set()

    def close(self, timeout: float = 60) -> None:
        """Close stdin: the member commits, leaves and exits."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.closed.wait(timeout)
        try:
            self.proc.wait(timeout)
        except Exception:
            self.proc.kill()
            raise


class ConfluentMember:
    """A confluent-kafka (librdkafka) Consumer with ``cooperative-sticky`` (or, ``protocol``
    "consumer", KIP-848's group.protocol=consumer) polling in a thread, with the same view as
    :class:`JavaMember`."""

    def __init__(self, bootstrap: str, topic: str, group: str, protocol: str = "classic") -> None:
        from confluent_kafka import Consumer as RdKafkaConsumer

        group_conf: dict[str, Any] = (
            {"group.protocol": "consumer"}
            if protocol == "consumer"
            else {
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 300,
            }
        )
        self.consumer = RdKafkaConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **group_conf,
            }
        )
        self.owned: set[int] = set()
        self.records: list[tuple[int, int, str]] = []
        self.events: list[tuple[str, list[int]]] = []
        self.closed = threading.Event()
        self._stop = threading.Event()
        self.consumer.subscribe(
            [topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost
        )
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _assigned(self, consumer: Any, parts: list[Any]) -> None:
        ps = sorted(p.partition for p in parts)
        self.events.append(("assigned", ps))
        self.owned |= set(ps)

    def _revoked(self, consumer: Any, parts: list[Any]) -> None:
        ps = sorted(p.partition for p in parts)
        if self.records:
            try:
                consumer.commit(asynchronous=False)
            except Exception as exc:
                if "NO_OFFSET" not in str(exc):  # nothing consumed since the last commit
                    raise
        self.events.append(("revoked", ps))
        self.owned -= set(ps)

    def _lost(self, consumer: Any, parts: list[Any]) -> None:
        ps = sorted(p.partition for p in parts)
        self.events.append(("lost", ps))
        self.owned -= set(ps)

    def _loop(self) -> None:
        while not self._stop.is_set():
            msgs = self.consumer.consume(100, 0.2)
            got = [m for m in msgs if m.error() is None]
            for m in got:
                self.records.append((m.partition(), m.offset(), (m.value() or b"").decode()))
            if got:
                self.consumer.commit(asynchronous=False)
        self.consumer.close()
        self.closed.set()

    def close(self, timeout: float = 60) -> None:
        self._stop.set()
        self._thread.join(timeout)


def run_mixed_java_group(
    tools: KafkaTools,
    topic: str,
    partitions: int,
    conf: dict[str, Any],
    produce: Callable[[int], None],
    make: Any = member,
) -> dict[str, Any]:
    """A Java member alone (it leads), a kclient Consumer joins (cooperative-sticky both),
    the Java member leaves, a second Java member joins (the kclient member leads now)."""
    return run_mixed_group(
        lambda group: JavaMember(tools, topic, group), topic, partitions, conf, produce, make=make
    )


def run_mixed_group(
    peer: Callable[[str], Any],
    topic: str,
    partitions: int,
    conf: dict[str, Any],
    produce: Callable[[int], None],
    on_phase: Callable[[str, str, Any], None] | None = None,
    make: Any = member,
) -> dict[str, Any]:
    """Another client's member alone (it leads), a kclient Consumer joins, the other member
    leaves, a second one of it joins (the kclient member leads now).  Records, per phase,
    each side's partitions; returns what was consumed."""
    group = f"mixed-{uuid.uuid4().hex[:8]}"
    conf = dict(conf, **{"group.id": group})
    events: list = []
    sent = 0
    java: list[Any] = []
    a: Any = None
    phases: dict[str, tuple[set[int], set[int]]] = {}

    def consumed() -> int:
        n = sum(len(j.records) for j in java)
        return n + (sum(len(v) for v in a.arrivals.values()) if a else 0)

    def write(n: int) -> None:
        nonlocal sent
        produce(n)
        sent += n * partitions
        wait_for(
            lambda: consumed() >= sent,
            timeout=60,
            message=f"{sent} records consumed (have {consumed()})",
        )

    try:
        j1 = peer(group)
        java.append(j1)
        wait_for(
            lambda: len(j1.owned) == partitions, timeout=90, message="the other client owns all"
        )
        write(5)
        a = make("kclient", conf, events)
        a.start(topic)
        half = partitions // 2
        wait_for(
            lambda: len(a.partitions()) == half and len(j1.owned) == partitions - half,
            timeout=60,
            message="the other client (leader) split the partitions with kclient",
        )
        phases["other client leads"] = (set(a.partitions()), set(j1.owned))
        if on_phase is not None:
            on_phase("other client leads", group, j1)
        write(5)
        j1.close()
        wait_for(
            lambda: len(a.partitions()) == partitions,
            timeout=60,
            message="kclient took over every partition",
        )
        write(5)
        j2 = peer(group)
        java.append(j2)
        wait_for(
            lambda: len(a.partitions()) == half and len(j2.owned) == partitions - half,
            timeout=90,
            message="kclient (leader) split the partitions with the other client",
        )
        phases["kclient leads"] = (set(a.partitions()), set(j2.owned))
        write(5)
        assert not a.errors, a.errors
    finally:
        for j in java:
            j.close()
        if a is not None:
            a.stop()
    offsets: dict[int, list[int]] = {p: [] for p in range(partitions)}
    for j in java:
        for p, off, _ in j.records:
            offsets[p].append(off)
    assert a is not None
    for p, arrivals in a.arrivals.items():
        offsets[p].extend(off for off, _ in arrivals)
    return {
        "phases": phases,
        "offsets": {p: sorted(o) for p, o in offsets.items()},
        "sent": sent,
        "kclient_events": [(k, ps) for _, _, k, ps in events],
        "java_events": [j.events for j in java],
    }


JAVA_RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"


def _settle(java: JavaMember, quiet_s: float = 2.0, timeout: float = 60) -> None:
    """Wait until the Java member's listener has been quiet for ``quiet_s``."""
    deadline = time.monotonic() + timeout
    seen, since = len(java.events), time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, f"java never settled: {java.events}"
        time.sleep(0.1)
        if len(java.events) != seen:
            seen, since = len(java.events), time.monotonic()


def run_static_beside_java(
    tools: KafkaTools,
    topic: str,
    partitions: int,
    conf: dict[str, Any],
    strategy: str,
    make: Any = member,
) -> dict[str, Any]:
    """Java's consumer (the leader) and a static kclient member ("inst-k") share ``topic``; the
    kclient member closes (no LeaveGroup) and a new one with its group.instance.id takes its place
    within the session timeout; then a third one with that id fences the second.  Returns
    what each side saw around the restart."""
    group = f"static-k-{uuid.uuid4().hex[:8]}"
    static = dict(
        conf,
        **{
            "group.id": group,
            "group.instance.id": "inst-k",
            "partition.assignment.strategy": strategy,
        },
    )
    events: list = []
    java = k = k2 = k3 = None
    half = partitions // 2
    try:
        # Java leads (a restarted static leader rebalances on Kafka: JoinGroup before v9
        # cannot skip it), the static kclient member joins second
        java = JavaMember(
            tools, topic, group, JAVA_RANGE if strategy == "range" else JAVA_COOPERATIVE
        )
        wait_for(lambda: len(java.owned) == partitions, timeout=90, message="java owns all")
        k = make("k", static, events)
        k.start(topic)
        try:
            wait_for(
                lambda: len(java.owned) == half and len(k.partitions()) == half,
                timeout=90,
                message="java and kclient share",
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}: java {java.lines[-12:]}, kclient {k.partitions()} "
                f"{[e[1:] for e in events]} {k.errors}"
            ) from None
        _settle(java)  # a cooperative follow-up is over
        java_events, java_owned, k_owned = list(java.events), set(java.owned), k.partitions()
        k.stop()  # static: no LeaveGroup
        k2 = make("k2", static, events)
        k2.start(topic)
        wait_for(
            lambda: k2.partitions() == k_owned,
            timeout=60,
            message="the restarted kclient member took its place",
        )
        still(
            lambda: list(java.events) == java_events,
            2.0,
            "java hears of no rebalance (it would have by now)",
        )
        java_after = list(java.events)
        k3 = make("k3", static, events)
        k3.start(topic)
        wait_for(lambda: bool(k2.errors), timeout=60, message="the second kclient fenced")
        return {
            "java_events_before": java_events,
            "java_events_after": java_after,
            "java_owned": java_owned,
            "java_owned_after": set(java.owned),
            "k_owned": k_owned,
            "k2_events": [(kind, ps) for _, who, kind, ps in events if who == "k2"],
            "fenced": k2.errors[0],
            "k_errors": k.errors,
        }
    finally:
        for m in (k3, k2, k):
            if m is not None:
                m.stop_event.set()
                m.stop()
        if java is not None:
            java.close()
