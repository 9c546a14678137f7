"""Real Apache Kafka for the benchmarks, and the Java client as a peer through Kafka's own
performance tools (ProducerPerformance, ConsumerPerformance), run from the fetched jars."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from kclient.bench import BrokerProcess

__all__ = ["kafka_broker", "java_producer_rate", "java_consumer_rate", "KAFKA_BROKER_CONFIG"]

#: Kafka 4.x for benchmarks: one KRaft node, a heap big enough not to be the bottleneck.
KAFKA_BROKER_CONFIG = {
    "log.segment.bytes": str(1 << 30),
    "num.io.threads": "4",
    "num.network.threads": "3",
}
KAFKA_VERSION = "4"


@contextmanager
def kafka_broker(version: str = KAFKA_VERSION) -> Iterator[BrokerProcess]:
    """A single-node Apache Kafka (KRaft) on a free port; raises saying why it cannot run."""
    from kclient.testing import KafkaServer, kafka_problem

    problem = kafka_problem(version)
    if problem:
        raise SystemExit(f"--broker kafka: {problem}")
    with KafkaServer(version, heap="1g", config=KAFKA_BROKER_CONFIG) as server:
        proc = server.nodes[0].proc
        yield BrokerProcess(server.bootstrap, proc.pid if proc is not None else 0)


def _rate(pattern: str, text: str, what: str) -> float:
    found = re.findall(pattern, text)
    if not found:
        raise RuntimeError(f"{what}: no rate in its output:\n{text[-2000:]}")
    return float(found[-1])


def java_producer_rate(
    bootstrap: str, topic: str, n: int, size: int, acks: int = 1, version: str = KAFKA_VERSION
) -> float:
    """Records/s of Kafka's ProducerPerformance (the Java producer, linger.ms=5, no
    compression, idempotence off as kclient's producer) sending ``n`` x ``size`` bytes."""
    from kclient.testing import run_kafka_tool

    proc = run_kafka_tool(
        version,
        "producer-perf-test",
        "--topic",
        topic,
        "--num-records",
        str(n),
        "--record-size",
        str(size),
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={bootstrap}",
        f"acks={acks}",
        "linger.ms=5",
        "compression.type=none",
        "enable.idempotence=false",
        "batch.size=1048576",
        timeout=900,
    )
    return _rate(r"([\d.]+) records/sec", proc.stdout.decode(), "ProducerPerformance")


def java_consumer_rate(
    bootstrap: str, topic: str, n: int, fetch_size: int = 1 << 20, version: str = KAFKA_VERSION
) -> float:
    """Records/s of Kafka's ConsumerPerformance (the Java consumer in a fresh group) reading
    ``n`` records, group join excluded (its fetch.nMsg.sec column)."""
    from kclient.testing import run_kafka_tool

    proc = run_kafka_tool(
        version,
        "consumer-perf-test",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--messages",
        str(n),
        "--fetch-size",
        str(fetch_size),
        "--timeout",
        "60000",
        timeout=900,
    )
    lines = [line for line in proc.stdout.decode().splitlines() if line.strip()]
    header = [h.strip() for h in lines[-2].split(",")]
    row = [c.strip() for c in lines[-1].split(",")]
    try:
        return float(row[header.index("fetch.nMsg.sec")])
    except (ValueError, IndexError) as exc:
        raise RuntimeError(f"ConsumerPerformance output not understood:\n{lines[-5:]}") from exc
