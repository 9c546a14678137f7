"""KafkaStream iteration throughput beside kafka-python's and confluent-kafka's group consumers.

Run: ``python -m kclient.bench.stream [--messages N] [--value-size B] [--partitions P]
[--broker mini|tansu|kafka] [--clients kclient,kafka-python,confluent,confluent-tuned]
[--streams S]``

One broker (the mini-broker in its own process by default, tansu, or real Apache Kafka 4.x with
``kafka``) and one topic filled once
with N records of B bytes (produced with confluent-kafka).  Each client then reads the whole
topic from the start as a fresh group member (broker-coordinated groups for all three;
kclient's connector runs without ZooKeeper) and touches every value.  The rate is measured
from the first message to the last, so the group join is left out; the join time is printed
separately; ``confluent-tuned`` is confluent-kafka with the keys every benchmark's tuned peer
uses (librdkafka's default pauses fetching for ``fetch.queue.backoff.ms``, 1 s, each time its
prefetch queue fills), ``confluent`` its defaults.  The Java consumer (Kafka's
ConsumerPerformance, with ``--broker kafka``) reports its rate without the join.  Clients run
interleaved for ``--repeat`` rounds and the best round of each is reported, so that load from
other jobs on the machine hits all of them alike.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from contextlib import ExitStack

from kclient.bench import mini_broker_process

__all__ = ["main"]


def _fill(bootstrap: str, topic: str, n: int, size: int, partitions: int) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "acks": 1,
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": 200000,
            "enable.idempotence": False,
        }
    )
    value = b"x" * size
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(120):
        raise RuntimeError("could not produce the benchmark data")


def bench_kclient(bootstrap: str, topic: str, n: int, streams: int = 1) -> tuple[float, float]:
    from kclient import consumer

    t0 = time.perf_counter()
    conn = consumer.create(
        {
            "metadata.broker.list": bootstrap,
            "group.id": f"kc-{uuid.uuid4()}",
            "auto.offset.reset": "smallest",
            "auto.commit.enable": False,
            "consumer.timeout.ms": 10000,
            "queued.max.message.chunks": 4,
        }
    )
    try:
        ss = conn.create_message_streams({topic: streams})[topic]
        join = time.perf_counter() - t0
        counts = [0] * len(ss)
        firsts: list[float] = []

        def read(i: int, s, quota: int) -> None:
            _ = next(s).message
            firsts.append(time.perf_counter())
            c = 1
            for m in s:
                _ = m.message
                c += 1
                if c >= quota:
                    break
            counts[i] = c

        if len(ss) == 1:
            read(0, ss[0], n)
        else:
            # each stream reads its share (the topic's partitions are spread evenly)
            threads = [
                threading.Thread(target=read, args=(i, s, n // len(ss))) for i, s in enumerate(ss)
            ]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        end = time.perf_counter()
        return n / (end - min(firsts)), join
    finally:
        conn.shutdown()


def bench_kafka_python(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    from kafka import KafkaConsumer

    t0 = time.perf_counter()
    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"kp-{uuid.uuid4()}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        count, first = 0, None
        for m in c:
            if first is None:
                first = time.perf_counter()
            _ = m.value
            count += 1
            if count >= n:
                break
        end = time.perf_counter()
        assert first is not None
        return n / (end - first), first - t0
    finally:
        c.close()


def bench_confluent(bootstrap: str, topic: str, n: int, tuned: bool = False) -> tuple[float, float]:
    """confluent-kafka's group consumer; ``tuned`` as every benchmark's tuned peer
    (:data:`kclient.bench.consumer_clients.CONFLUENT_TUNED`: no pause when its prefetch queue
    fills)."""
    from confluent_kafka import Consumer

    from kclient.bench.consumer_clients import CONFLUENT_TUNED

    t0 = time.perf_counter()
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"ck-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **(CONFLUENT_TUNED if tuned else {}),
        }
    )
    try:
        c.subscribe([topic])
        count, first = 0, None
        while count < n:
            for m in c.consume(num_messages=10000, timeout=1.0):
                if m.error():
                    continue
                if first is None:
                    first = time.perf_counter()
                m.value()
                count += 1
        end = time.perf_counter()
        assert first is not None
        return n / (end - first), first - t0
    finally:
        c.close()


def bench_java(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    """Kafka's ConsumerPerformance (the Java consumer in a fresh group), join left out."""
    from kclient.bench.kafka import java_consumer_rate

    return java_consumer_rate(bootstrap, topic, n), 0.0


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on this OS
        return "n/a"


def run(argv: list[str] | None = None) -> dict[str, float]:
    """Run the benchmark; returns records/s per client."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--broker", choices=("mini", "tansu", "kafka"), default="mini")
    ap.add_argument(
        "--clients",
        default=None,
        help="default kclient,kafka-python,confluent,confluent-tuned (and java with "
        "--broker kafka)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds; clients run interleaved, the best round of each is kept",
    )
    ap.add_argument(
        "--json",
        metavar="PATH",
        dest="json_path",
        help="write the best rate of each client to PATH (kclient bench charts)",
    )
    args = ap.parse_args(argv)
    runners = {
        "kclient": lambda b, t, n: bench_kclient(b, t, n, args.streams),
        "kafka-python": bench_kafka_python,
        "confluent": bench_confluent,
        "confluent-tuned": lambda b, t, n: bench_confluent(b, t, n, tuned=True),
        "java": bench_java,
    }
    names = args.clients or (
        "kclient,kafka-python,confluent,confluent-tuned"
        + (",java" if args.broker == "kafka" else "")
    )
    clients = [c.strip() for c in names.split(",") if c.strip()]
    rates: dict[str, float] = {}
    with ExitStack() as stack:
        if args.broker == "mini":
            bootstrap = stack.enter_context(mini_broker_process()).bootstrap
        elif args.broker == "kafka":
            from kclient.bench.kafka import kafka_broker

            bootstrap = stack.enter_context(kafka_broker()).bootstrap
        else:
            from kclient.testing import TansuServer

            bootstrap = stack.enter_context(TansuServer()).bootstrap
        from kclient.testing import create_ready_topic

        create_ready_topic(bootstrap, "bench", args.partitions)
        _fill(bootstrap, "bench", args.messages, args.value_size, args.partitions)
        print(
            f"{args.messages} messages of {args.value_size} bytes in {args.partitions} "
            f"partitions on {args.broker}; load average {_load()}"
        )
        joins: dict[str, float] = {}
        for _ in range(max(1, args.repeat)):
            for name in clients:
                rate, join = runners[name](bootstrap, "bench", args.messages)
                if rate > rates.get(name, 0.0):
                    rates[name], joins[name] = rate, join
        for name in clients:
            rate, mb = rates[name], rates[name] * args.value_size / 1e6
            print(f"  {name:15s} {rate:12,.0f} msg/s  {mb:8.1f} MB/s   (join {joins[name]:.2f} s)")
        print(f"  load average after: {_load()}")
    if "kclient" in rates:
        for other in ("kafka-python", "confluent", "confluent-tuned", "java"):
            if other in rates:
                print(f"  kclient / {other}: {rates['kclient'] / rates[other]:.2f}x")
    if args.json_path:
        from kclient.bench.results import row, write_results

        case = f"{args.value_size} B values, {args.partitions}p, {args.streams} stream(s)"
        write_results(
            args.json_path,
            "stream",
            "kclient",
            [row(args.broker, case, name, rate) for name, rate in rates.items()],
            argv,
        )
    return rates


def main(argv: list[str] | None = None) -> int:
    """``kclient bench stream``: run and exit 0."""
    run(argv)
    return 0


if __name__ == "__main__":
    main()
