"""Scenarios with confluent-kafka's consumer (librdkafka) in a classic group, shared by the
mini-broker's tests (tests/consumer/test_confluent_group.py) and Kafka 4's
(integration/test_confluent_group_kafka.py): a static member restarting within the session
timeout, and a manual commit while the group prepares a cooperative rebalance."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .helpers import produce_spread, wait_for

PARTITIONS = 4


def _partitions(parts: Any) -> list[int]:
    return sorted(p.partition for p in parts)


@dataclass
class Member:
    """A confluent-kafka Consumer and what its rebalance callbacks heard."""

    name: str
    conf: dict[str, Any]
    topic: str
    events: list[tuple[str, str, list[int]]] = field(default_factory=list)
    consumer: Any = None

    def start(self) -> Member:
        from confluent_kafka import Consumer

        self.consumer = Consumer(self.conf)
        self.consumer.subscribe(
            [self.topic],
            on_assign=lambda _c, ps: self.events.append((self.name, "assign", _partitions(ps))),
            on_revoke=lambda _c, ps: self.events.append((self.name, "revoke", _partitions(ps))),
        )
        return self

    def assigned(self) -> list[int]:
        return _partitions(self.consumer.assignment())

    def close(self) -> None:
        self.consumer.close()


def new_topic(bootstrap: str) -> str:
    """A fresh topic of PARTITIONS partitions, created with confluent-kafka's AdminClient."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"cf-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    return topic


def _conf(bootstrap: str, group: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 30000,
        "heartbeat.interval.ms": 500,
        **extra,
    }


def _poll_until(members: list[Member], cond: Any, timeout: float = 40.0, message: str = "") -> None:
    def step() -> bool:
        for m in members:
            m.consumer.poll(0.05)
        return bool(cond())

    wait_for(step, timeout=timeout, interval=0, message=message)


def _settle(members: list[Member], seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for m in members:
            m.consumer.poll(0.05)


def run_static_restart(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Two static members (range assignor) share the topic; each in turn closes and restarts
    under its group.instance.id within the session timeout. Per restart: the restarted
    member's partitions before and after, the other's, and what the other's callbacks heard."""
    group = f"static-{uuid.uuid4().hex[:8]}"
    conf = _conf(bootstrap, group, **{"partition.assignment.strategy": "range"})
    members = {
        n: Member(n, dict(conf, **{"group.instance.id": n}), topic).start() for n in ("i1", "i2")
    }
    out = []
    try:
        _poll_until(
            list(members.values()),
            lambda: (
                all(m.assigned() for m in members.values())
                and sum(len(m.assigned()) for m in members.values()) == PARTITIONS
            ),
            message="both static members assigned",
        )
        for name, other_name in (("i2", "i1"), ("i1", "i2")):
            old, other = members[name], members[other_name]
            before, other_before = old.assigned(), other.assigned()
            mark = len(other.events)
            old.close()
            new = members[name] = Member(name, old.conf, topic).start()
            _poll_until([other, new], lambda new=new: new.assigned(), message="restart assigned")
            _settle([other, new], 3.0)
            out.append(
                {
                    "restarted": name,
                    "before": before,
                    "after": new.assigned(),
                    "other_before": other_before,
                    "other_after": other.assigned(),
                    "other_heard": other.events[mark:],
                }
            )
    finally:
        for m in members.values():
            m.close()
    return out


def run_commit_while_preparing(
    bootstrap: str, topic: str, state: Callable[[str], str]
) -> dict[str, Any]:
    """A cooperative-sticky member consumes, then a second member joins (the group prepares a
    rebalance: ``state(group)`` says so); the first commits its position synchronously in the
    middle of it, before it rejoins."""
    group = f"coop-commit-{uuid.uuid4().hex[:8]}"
    conf = _conf(bootstrap, group, **{"partition.assignment.strategy": "cooperative-sticky"})
    produce_spread(bootstrap, topic, PARTITIONS, 40, prefix="c")
    # the first member's heartbeat comes late, so the group stays preparing for a while
    first = Member("a", dict(conf, **{"heartbeat.interval.ms": 8000}), topic).start()
    second = None
    try:
        got = []
        _poll_until(
            [first], lambda: len(first.assigned()) == PARTITIONS, message="first member assigned"
        )

        def read() -> bool:
            msg = first.consumer.poll(0.05)
            if msg is not None and not msg.error():
                got.append(msg)
            return len(got) >= 10

        wait_for(read, timeout=30, interval=0, message="records read")
        second = Member("b", conf, topic).start()
        wait_for(
            lambda: second.consumer.poll(0.05) is None and state(group) == "PreparingRebalance",
            timeout=30,
            interval=0,
            message="the group preparing a rebalance",
        )
        from confluent_kafka import TopicPartition

        last = got[-1]
        committed = first.consumer.commit(
            offsets=[TopicPartition(topic, last.partition(), last.offset() + 1)], asynchronous=False
        )
        at_commit = state(group)
        _poll_until(
            [first, second],
            lambda: (
                first.assigned()
                and second.assigned()
                and len(first.assigned()) + len(second.assigned()) == PARTITIONS
            ),
            message="both members assigned",
        )
        position = first.consumer.committed([TopicPartition(topic, last.partition())], 10)
        return {
            "state_at_commit": at_commit,
            "committed": [(tp.partition, tp.offset, tp.error) for tp in committed],
            "stored": position[0].offset,
            "expected": last.offset() + 1,
        }
    finally:
        first.close()
        if second is not None:
            second.close()
