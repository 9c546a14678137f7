"""Small helpers for the real-Kafka tests: topics, reading a partition back, Kafka's console tools."""

from __future__ import annotations

import time
import uuid

from kclient.cluster import Cluster
from kclient.connection import BrokerConnection
from kclient.protocol.apis import METADATA
from kclient.simple import FetchRequest, SimpleConsumer
from kclient.testing import KafkaServer


def new_topic(
    server: KafkaServer,
    partitions: int = 1,
    replication_factor: int = 1,
    config: dict[str, str] | None = None,
    prefix: str = "it",
) -> str:
    """Create a uniquely named topic and wait until every live broker knows a leader for every
    partition (in ZooKeeper mode the controller tells each broker in its own time)."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    with Cluster(server.bootstrap) as cluster:
        cluster.create_topic(name, partitions, replication_factor, config)
    for node in server.nodes:
        if node.alive:
            wait_for_leaders(node.address, name, partitions)
    return name


def wait_for_leaders(address: str, topic: str, partitions: int, timeout: float = 30) -> None:
    """Until the broker at ``address`` itself reports a leader for every partition of ``topic``."""
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    with BrokerConnection(host, int(port)) as conn:
        while time.monotonic() < deadline:
            resp = conn.request(
                METADATA, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
            )
            (info,) = resp.topics
            if (
                not info.error_code
                and len(info.partitions) == partitions
                and all(p.leader_id >= 0 for p in info.partitions)
            ):
                return
            time.sleep(0.1)
    raise TimeoutError(f"{topic}: {address} knows no leader for every partition after {timeout}s")


def leader_address(server: KafkaServer, topic: str, partition: int) -> tuple[str, int]:
    with Cluster(server.bootstrap) as cluster:
        info = cluster.leader_for(topic, partition)
    return info.host, info.port


def read_partition(
    server: KafkaServer, topic: str, partition: int, **options
) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every (offset, key, value) of a partition, read by kclient's SimpleConsumer."""
    host, port = leader_address(server, topic, partition)
    with SimpleConsumer(host, port, so_timeout=15000, **options) as c:
        return [
            (mo.offset, mo.message.key, mo.message.value)
            for mo in c.iter_messages(topic, partition, 0)
        ]


def fetch_all(
    consumer: SimpleConsumer, topic: str, partition: int, max_size: int = 1 << 20
) -> list[tuple[int, bytes | None, bytes | None]]:
    """Read a partition to its end with single fetches (no iter_messages), as 0.8 users did."""
    out, offset = [], 0
    while True:
        ms = consumer.fetch(FetchRequest(topic, partition, offset, max_size))
        got = [(mo.offset, mo.message.key, mo.message.value) for mo in ms]
        out += [g for g in got if g[0] >= offset]
        if not got or ms.next_offset >= ms.high_watermark:
            return out
        offset = ms.next_offset


def java_produce(server: KafkaServer, topic: str, lines: list[str], *props: str) -> None:
    """Kafka's console producer (acks=all) writes ``lines``; ``props`` are --property k=v."""
    args = [
        "--bootstrap-server",
        server.bootstrap,
        "--topic",
        topic,
        "--producer-property",
        "acks=all",
    ]
    for prop in props:
        args += ["--reader-property" if server.major >= 4 else "--property", prop]
    server.run_tool("console-producer", *args, input=("\n".join(lines) + "\n").encode())


def java_consume(
    server: KafkaServer, topic: str, count: int, *extra: str, timeout_ms: int = 30000
) -> list[str]:
    """Kafka's console consumer reads ``count`` messages from the beginning: "key\\tvalue" lines."""
    proc = server.run_tool(
        "console-consumer",
        "--bootstrap-server",
        server.bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        str(count),
        "--timeout-ms",
        str(timeout_ms),
        "--formatter-property" if server.major >= 4 else "--property",
        "print.key=true",
        *extra,
        timeout=timeout_ms / 1000 + 60,
    )
    return proc.stdout.decode().splitlines()
