"""Shared helpers for consumer tests: produce data, read znodes, wait for conditions."""

from __future__ import annotations

import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def produce(bootstrap: str, topic: str, values, partition: int | None = None, key=None) -> None:
    """Produce ``values`` (bytes or str) with confluent-kafka and wait for every ack."""
    from confluent_kafka import Producer

    p = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1, "enable.idempotence": False}
    )
    errors = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)

    for v in values:
        kwargs = {"value": v, "key": key, "on_delivery": cb}
        if partition is not None:
            kwargs["partition"] = partition
        while True:
            try:
                p.produce(topic, **kwargs)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(30) == 0
    assert not errors, errors


def produce_spread(
    bootstrap: str, topic: str, partitions: int, per_partition: int, prefix: str = "m"
) -> set[str]:
    """``per_partition`` messages to each partition; returns the set of values."""
    values = set()
    for p in range(partitions):
        batch = [f"{prefix}-{p}-{i}" for i in range(per_partition)]
        produce(bootstrap, topic, batch, partition=p)
        values.update(batch)
    return values


def zk_client(connect: str) -> KazooClient:
    """A started kazoo client; generous timeouts, as the machine may be loaded."""
    zk = KazooClient(hosts=connect, timeout=10)
    zk.start(timeout=30)
    return zk


def znode(zk: KazooClient, path: str) -> str | None:
    try:
        return zk.get(path)[0].decode()
    except NoNodeError:
        return None


def owners(zk: KazooClient, group: str) -> dict[tuple[str, int], str]:
    """``{(topic, partition): owning thread id}`` read back from ZooKeeper."""
    out = {}
    base = f"/consumers/{group}/owners"
    try:
        topics = zk.get_children(base)
    except NoNodeError:
        return out
    for t in topics:
        for p in zk.get_children(f"{base}/{t}"):
            data = znode(zk, f"{base}/{t}/{p}")
            if data is not None:
                out[(t, int(p))] = data
    return out


def wait_for(cond, timeout: float = 20.0, interval: float = 0.05, message: str = ""):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {message or cond}: last={last!r}")


def drain(stream, n: int | None = None, idle: float = 1.0) -> list:
    """Read from a stream (consumer.timeout.ms must be set) until ``n`` messages or idle."""
    from kclient.errors import ConsumerTimeoutError

    out = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (n is None or len(out) < n):
        try:
            out.append(next(stream))
        except ConsumerTimeoutError:
            if n is None:
                break
        except StopIteration:
            break
    return out
