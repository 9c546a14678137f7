"""``kclient bench rebalance``: what a member joining a running group costs, per group protocol.

Three kclient.Consumer members share a 12-partition topic while a producer writes one record
per partition every 10 ms; a fourth member joins.  Measured from its subscribe: the time until
the assignment is stable (every member holds its share and reads it) and the longest gap in
the deliveries of the partitions that kept their owner.  Protocols: classic eager (range),
classic cooperative-sticky (KIP-429) and KIP-848 (``group.protocol=consumer``, the broker's
uniform assignor).

    kclient bench rebalance                       # starts Kafka 4.x (KRaft, one node)
    kclient bench rebalance --broker mini --repeat 3
    kclient bench rebalance --bootstrap HOST:PORT --protocols kip848
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["PROTOCOLS", "run_once", "main"]

#: each protocol's group settings (the classic ones at a test-speed heartbeat)
PROTOCOLS: dict[str, dict[str, Any]] = {
    "eager": {
        "partition.assignment.strategy": "range",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 300,
    },
    "cooperative": {
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 300,
    },
    "kip848": {"group.protocol": "consumer"},
}
#: KIP-848 at the same heartbeat pace as the classic members (the broker's settings)
KIP848_BROKER = {
    "group.consumer.min.heartbeat.interval.ms": "300",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": "10000",
}


class _Member(threading.Thread):
    """A Consumer polling in a thread; when each partition's records arrived."""

    def __init__(self, name: str, conf: dict[str, Any], topic: str) -> None:
        super().__init__(daemon=True, name=name)
        from kclient import Consumer

        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic])
        self.arrivals: dict[int, list[float]] = {}
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                batch = self.consumer.poll(50)
            except BaseException as exc:  # noqa: BLE001 - reported by the benchmark
                self.error = exc
                return
            now = time.monotonic()
            for tp, records in batch.items():
                self.arrivals.setdefault(tp.partition, []).extend([now] * len(records))

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def stop(self) -> None:
        self.stop_event.set()
        self.join(30)
        self.consumer.close()


class _Writer(threading.Thread):
    """One record per partition every 10 ms."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(daemon=True, name="bench-writer")
        from kclient import Producer

        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "producer.type": "async", "queue.buffering.max.ms": 1}
        )
        self.topic, self.partitions = topic, partitions
        self.stop_event = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop_event.is_set():
            for p in range(self.partitions):
                self.producer.produce(self.topic, f"{p}-{i}".encode(), partition=p)
            i += 1
            time.sleep(0.01)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(10)
        self.producer.close()


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)


def _gap(times: list[float], since: float, until: float) -> float:
    marks = [since] + [t for t in times if since <= t <= until] + [until]
    return max(b - a for a, b in zip(marks, marks[1:]))


def run_once(
    bootstrap: str, protocol: str, partitions: int = 12, members: int = 3
) -> dict[str, Any]:
    """One run: ``members`` share the topic, one more joins; its measurements."""
    from kclient.cluster import Cluster

    topic = f"bench-rebalance-{uuid.uuid4().hex[:8]}"
    with Cluster([bootstrap]) as cluster:
        cluster.create_topic(topic, partitions, 1)
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": f"{topic}-{protocol}",
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 50,
        **PROTOCOLS[protocol],
    }
    writer = _Writer(bootstrap, topic, partitions)
    writer.start()
    group = [_Member(f"m{i}", conf, topic) for i in range(members)]
    try:
        for m in group:
            m.start()
        share = partitions // members
        _wait(
            lambda: (
                all(len(m.owned()) == share for m in group)
                and all(m.arrivals.get(p) for m in group for p in m.owned())
            ),
            120,
            f"{members} members reading {share} partitions each",
        )
        before = {p: m.name for m in group for p in m.owned()}
        time.sleep(0.5)
        start = time.monotonic()
        joiner = _Member(f"m{members}", conf, topic)
        joiner.start()
        group.append(joiner)
        share = partitions // len(group)
        _wait(
            lambda: (
                all(len(m.owned()) == share for m in group)
                and all(m.arrivals.get(p) for m in group for p in m.owned())
            ),
            120,
            "a stable assignment with the new member",
        )
        stable = time.monotonic() - start
        end = time.monotonic()
        kept = [(m, p) for m in group for p in m.owned() if before.get(p) == m.name]
        gap = max((_gap(m.arrivals.get(p, []), start, end) for m, p in kept), default=0.0)
        errors = [m.error for m in group if m.error is not None]
        if errors:
            raise RuntimeError(f"a member failed: {errors[0]!r}")
        return {
            "protocol": protocol,
            "stable_s": round(stable, 3),
            "kept_gap_s": round(gap, 3),
            "kept_partitions": len(kept),
        }
    finally:
        writer.stop()
        for m in group:
            m.stop()


def main(argv: list[str] | None = None) -> None:
    """Run each protocol ``--repeat`` times; print the medians (and write ``--json``)."""
    parser = argparse.ArgumentParser(
        prog="kclient bench rebalance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--bootstrap", help="a running broker (default: start one, --broker)")
    parser.add_argument(
        "--broker",
        choices=("kafka", "mini"),
        default="kafka",
        help="what to start without --bootstrap: Kafka 4.x or the mini-broker",
    )
    parser.add_argument(
        "--protocols",
        default=",".join(PROTOCOLS),
        help="comma-separated: eager, cooperative, kip848",
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", help="write the runs here")
    args = parser.parse_args(argv)
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown:
        parser.error(f"unknown protocol(s) {unknown}; choose from {', '.join(PROTOCOLS)}")
    if args.bootstrap:
        runs = _runs(args.bootstrap, protocols, args.repeat)
    elif args.broker == "mini":
        import tempfile

        from kclient.broker import MiniBroker

        with (
            tempfile.TemporaryDirectory() as logs,
            MiniBroker(
                log_dir=logs,
                config={
                    "group.initial.rebalance.delay.ms": "0",
                    "group.consumer.heartbeat.interval.ms": KIP848_BROKER[
                        "group.consumer.heartbeat.interval.ms"
                    ],
                },
            ) as broker,
        ):
            runs = _runs(broker.bootstrap, protocols, args.repeat)
    else:
        from kclient.testing import KafkaServer, kafka_problem

        problem = kafka_problem("4")
        if problem:
            raise SystemExit(f"no --bootstrap and no Kafka 4.x: {problem}")
        with KafkaServer("4", config=KIP848_BROKER) as server:
            runs = _runs(server.bootstrap, protocols, args.repeat)
    print(f"{'protocol':<12} {'stable s':>9} {'kept gap s':>11}  (median of {args.repeat})")
    for p in protocols:
        mine = [r for r in runs if r["protocol"] == p]
        print(
            f"{p:<12} {statistics.median(r['stable_s'] for r in mine):>9.3f} "
            f"{statistics.median(r['kept_gap_s'] for r in mine):>11.3f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(runs, f, indent=1)


def _runs(bootstrap: str, protocols: list[str], repeat: int) -> list[dict[str, Any]]:
    return [run_once(bootstrap, p) for _ in range(repeat) for p in protocols]


if __name__ == "__main__":
    main()
