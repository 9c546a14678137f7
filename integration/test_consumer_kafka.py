"""kclient.Consumer (the modern poll-loop consumer) against real Kafka 4.x: subscribe, poll,
per-partition commit, seek, pause, offsets_for_times, and the listener order over a two-member
rebalance coordinated by Kafka's own group coordinator."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from kclient import Consumer, Producer, ProducerData
from tests.consumer.helpers import wait_for
from tests.consumer.test_consumer import Recorder

from .helpers import new_topic

pytestmark = pytest.mark.kafka


def _conf(server, group: str) -> dict:
    return {
        "bootstrap.servers": server.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 300,
        "rebalance.backoff.ms": 100,
        "fetch.wait.max.ms": 100,
    }


def _poll(c: Consumer, want: int, timeout: float = 30.0) -> list:
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for records in c.poll(200).values():
            got.extend(records)
    return got


def test_modern_consumer_on_kafka4(kafka4):
    topic = new_topic(kafka4, partitions=4)
    with Producer({"metadata.broker.list": kafka4.bootstrap, "producer.type": "sync"}) as p:
        for part in range(4):
            p.send(
                [
                    ProducerData(
                        topic,
                        f"v-{part}-{i}".encode(),
                        partition=part,
                        timestamp=1_700_000_000_000 + 1000 * i,
                    )
                    for i in range(5)
                ]
            )
    group = f"modern-{uuid.uuid4().hex[:8]}"
    log: list = []
    a = Consumer(_conf(kafka4, group), value_deserializer=bytes.decode)
    b = Consumer(_conf(kafka4, group))
    try:
        a.subscribe([topic], listener=Recorder("a", log))
        got = _poll(a, 20)
        assert len(got) == 20 and len(a.assignment()) == 4
        assert log == [("a", "assigned", [0, 1, 2, 3])]
        tps = sorted(a.assignment())
        # per-partition commit, read back from Kafka's coordinator
        a.commit({tps[0]: 2})
        assert a.committed(tps[0]) == 2 and a.committed(tps[1]) is None
        a.commit()
        assert [a.committed(tp) for tp in tps] == [5, 5, 5, 5]
        # seek and pause
        a.seek(tps[1], 3)
        a.pause(tps[2])
        a.seek(tps[2], 0)
        again = _poll(a, 2)
        assert [(r.partition, r.offset) for r in again] == [
            (tps[1].partition, 3),
            (tps[1].partition, 4),
        ]
        a.resume(tps[2])
        assert len(_poll(a, 5)) == 5
        stamps = a.offsets_for_times({tps[0]: 1_700_000_002_500, tps[1]: 1_800_000_000_000})
        assert stamps[tps[0]] == (3, 1_700_000_003_000) and stamps[tps[1]] is None
        assert a.end_offsets(tps) == dict.fromkeys(tps, 5)
        # a second member: Kafka's coordinator rebalances; Java's listener order
        b.subscribe([topic], listener=Recorder("b", log))
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=lambda c=c: [c.poll(100) for _ in iter(stop.is_set, True)], daemon=True
            )
            for c in (a, b)
        ]
        for t in threads:
            t.start()
        try:
            wait_for(
                lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2,
                timeout=60,
                message="two members, two partitions each",
            )
        finally:
            stop.set()
            for t in threads:
                t.join(15)
        assert [e for e in log if e[0] == "a"][1:3] == [
            ("a", "revoked", [0, 1, 2, 3]),
            ("a", "assigned", sorted(tp.partition for tp in a.assignment())),
        ]
        assert not a.assignment() & b.assignment()
        # b starts from the offsets a committed: nothing left to read
        assert b.poll(500) == {}
    finally:
        a.close(autocommit=False)
        b.close(autocommit=False)
