"""Scenarios with confluent-kafka's consumer (librdkafka) speaking the KIP-848 protocol
(``group.protocol=consumer``) for tests/consumer/test_confluent_kip848.py: members joining,
leaving and a static member restarting, every record consumed exactly once in each stable
phase."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .helpers import produce_spread, wait_for

PARTITIONS = 6


@dataclass
class Member:
    """A confluent-kafka Consumer in a KIP-848 group and what it consumed."""

    name: str
    conf: dict[str, Any]
    topic: str
    seen: list[str] = field(default_factory=list)
    consumer: Any = None

    def start(self) -> Member:
        from confluent_kafka import Consumer

        self.consumer = Consumer(self.conf)
        self.consumer.subscribe([self.topic])
        return self

    def poll(self) -> None:
        msg = self.consumer.poll(0.05)
        if msg is not None and msg.error() is None:
            self.seen.append(msg.value().decode())

    def assigned(self) -> set[int]:
        return {p.partition for p in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


def conf(bootstrap: str, group: str, **extra: Any) -> dict[str, Any]:
    """A KIP-848 consumer's settings (no session or heartbeat keys: the broker owns them)."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
        **extra,
    }


def _poll(
    members: list[Member], cond: Callable[[], bool], message: str, timeout: float = 60.0
) -> None:
    def step() -> bool:
        for m in members:
            m.poll()
        return cond()

    wait_for(step, timeout=timeout, interval=0, message=message)


def _covering(members: list[Member]) -> bool:
    """Every member has partitions, none shared, all covered."""
    sets = [m.assigned() for m in members]
    union = set().union(*sets)
    return all(sets) and sum(map(len, sets)) == len(union) == PARTITIONS


def _phase(bootstrap: str, topic: str, members: list[Member], label: str) -> dict[str, Any]:
    """Wait for a full, disjoint assignment, produce, consume everything: how often each
    record was seen and each member's partition count."""
    _poll(members, lambda: _covering(members), f"{label}: a full disjoint assignment")
    for m in members:
        m.seen.clear()
    values = produce_spread(bootstrap, topic, PARTITIONS, 5, prefix=label)
    _poll(
        members,
        lambda: values <= {v for m in members for v in m.seen},
        f"{label}: every record consumed",
    )
    seen = Counter(v for m in members for v in m.seen if v in values)
    return {
        "label": label,
        "records": len(values),
        "twice": sorted(v for v, n in seen.items() if n > 1),
        "counts": sorted(len(m.assigned()) for m in members),
    }


def run_join_leave_restart(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Two static members, a third joins, one leaves, a static member restarts: per phase
    what :func:`_phase` reports, and for the restart the partitions before and after."""
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    base = conf(bootstrap, group)
    members = [
        Member(n, dict(base, **{"group.instance.id": n}), topic).start() for n in ("m1", "m2")
    ]
    out = []
    try:
        out.append(_phase(bootstrap, topic, members, "two"))
        members.append(Member("m3", dict(base), topic).start())
        out.append(_phase(bootstrap, topic, members, "three"))
        members.pop().close()
        out.append(_phase(bootstrap, topic, members, "left"))
        old = members[0]
        before, other_before = old.assigned(), members[1].assigned()
        old.close()
        members[0] = Member(old.name, old.conf, topic).start()
        result = _phase(bootstrap, topic, members, "restarted")
        result.update(
            before=sorted(before),
            after=sorted(members[0].assigned()),
            other_before=sorted(other_before),
            other_after=sorted(members[1].assigned()),
        )
        out.append(result)
    finally:
        for m in members:
            m.close()
    return out


def run_broker_restart(
    bootstrap: str, topic: str, restart: Callable[[], None]
) -> list[dict[str, Any]]:
    """Two members consume; ``restart()`` restarts the broker; they go on: both phases'
    reports and each member's partitions before and after."""
    group = f"kip848-restart-{uuid.uuid4().hex[:8]}"
    members = [Member(n, conf(bootstrap, group), topic).start() for n in ("r1", "r2")]
    try:
        first = _phase(bootstrap, topic, members, "before")
        before = [sorted(m.assigned()) for m in members]
        restart()
        time.sleep(0.5)
        second = _phase(bootstrap, topic, members, "after")
        second["before"], second["after"] = before, [sorted(m.assigned()) for m in members]
    finally:
        for m in members:
            m.close()
    return [first, second]


def check_phases(results: list[dict[str, Any]]) -> None:
    """Nothing consumed twice in a stable phase; partitions spread evenly."""
    for r in results:
        assert r["twice"] == [], r
        assert max(r["counts"]) - min(r["counts"]) <= 1, r
