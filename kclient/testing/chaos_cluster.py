"""Clusters for the chaos harness (``kclient bench chaos``), each with the same faults.

Every node's client listener is advertised at a :class:`~kclient.testing.hostile.HostileBroker`
proxy in front of it, so every connection a client opens (bootstrap, leaders, coordinators)
goes through one and :meth:`cut` resets them all at once.

* :class:`KafkaChaos`: Apache Kafka 4.x, three KRaft nodes (broker+controller each),
  replication factor 3, ``min.insync.replicas=2``; a second listener ``CHAOS`` for the clients
  (the brokers replicate over ``PLAINTEXT``, untouched by the proxies). Faults: a partition
  leader killed -9 and restarted, a broker paused with SIGSTOP and resumed with SIGCONT, every
  node restarted (SIGTERM, then started again on its data), every client connection cut.
* :class:`MiniChaos`: the mini-broker's :class:`~kclient.broker.MiniCluster` (three in-process
  brokers, no replication: a killed leader's partitions wait for its restart). A pause is the
  proxy holding back every answer of that broker (an in-process broker cannot be SIGSTOPped).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

from .hostile import HostileBroker
from .kafka import KafkaNode, KafkaServer
from .servers import free_port

__all__ = ["ChaosCluster", "KafkaChaos", "MiniChaos", "chaos_cluster"]

LISTENER = "CHAOS"

#: Kafka settings for three replicas that fail over quickly (KRaft fences a silent broker
#: after broker.session.timeout.ms; a lagging follower leaves the ISR after 5 s)
KAFKA_CHAOS = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
    "unclean.leader.election.enable": "false",
}


class ChaosCluster:
    """What the harness needs of a cluster: its proxied bootstrap, a topic, leaders, faults."""

    name = "?"

    def __init__(self) -> None:
        self.proxies: dict[int, HostileBroker] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(p.bootstrap for _, p in sorted(self.proxies.items()))

    def cut(self) -> str:
        """Reset every client connection (the proxies keep listening)."""
        n = sum(p.cut() for p in self.proxies.values())
        return f"cut {n} client connections"

    def leader(self, topic: str, partition: int) -> int:
        """The node leading ``topic``/``partition`` now (from metadata)."""
        from kclient.cluster import Cluster

        with Cluster(self.bootstrap, request_timeout_ms=5000) as cluster:
            cluster.refresh([topic], allow_auto_create=False)
            return cluster.topics[topic].partitions[partition].leader

    def node_ids(self) -> list[int]:
        return sorted(self.proxies)

    # the faults each cluster implements
    def kill_and_restart(self, node_id: int) -> str:
        raise NotImplementedError

    def pause(self, node_id: int, seconds: float) -> str:
        raise NotImplementedError

    def restart_all(self) -> str:
        raise NotImplementedError

    def create_topic(self, topic: str, partitions: int) -> None:
        raise NotImplementedError

    def heal(self) -> None:
        """Every node up and answering (before the final read)."""
        raise NotImplementedError

    def close(self) -> None:
        for p in self.proxies.values():
            p.stop()

    def __enter__(self) -> ChaosCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ProxiedKafka(KafkaServer):
    """A KafkaServer whose ``CHAOS`` listener is advertised at a proxy per node, listening
    before the node starts (a port merely chosen could be taken by then)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(listeners={LISTENER: "PLAINTEXT"}, **kwargs)
        self.proxies: dict[int, HostileBroker] = {}

    def _properties(self, node: KafkaNode) -> str:
        upstream = ("127.0.0.1", node.extra_ports[LISTENER])
        proxy = self.proxies.get(node.node_id)
        if proxy is None or proxy.upstream != upstream:  # a start tried again: new ports
            if proxy is not None:
                proxy.stop()
            proxy = self.proxies[node.node_id] = HostileBroker(upstream).start()
        real = f"{LISTENER}://127.0.0.1:{node.extra_ports[LISTENER]}"
        lines = [
            line.replace(real, f"{LISTENER}://127.0.0.1:{proxy.port}")
            if line.startswith("advertised.listeners=")
            else line
            for line in super()._properties(node).splitlines()
        ]
        return "\n".join(lines) + "\n"


class KafkaChaos(ChaosCluster):
    """Three Kafka 4.x KRaft nodes behind proxies (module docstring)."""

    name = "kafka"

    def __init__(self, version: str = "4", num_brokers: int = 3) -> None:
        super().__init__()
        self.kafka = _ProxiedKafka(
            version=version, num_brokers=num_brokers, config=KAFKA_CHAOS, heap="384m"
        )
        self.proxies = self.kafka.proxies
        try:
            self.kafka.start()
        except BaseException:
            super().close()
            raise

    def create_topic(self, topic: str, partitions: int) -> None:
        from .topics import create_ready_topic

        create_ready_topic(self.kafka.bootstrap, topic, partitions, replication_factor=3)

    def kill_and_restart(self, node_id: int) -> str:
        started = time.monotonic()
        self.kafka.kill(node_id)
        self.kafka.start_node(node_id)  # waits until the cluster lists it again
        return f"node {node_id} killed -9 and restarted ({time.monotonic() - started:.1f} s)"

    def pause(self, node_id: int, seconds: float) -> str:
        node = self.kafka.node(node_id)
        node.signal(signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            node.signal(signal.SIGCONT)
        return f"node {node_id} paused (SIGSTOP) for {seconds:.0f} s, then SIGCONT"

    def restart_all(self) -> str:
        started = time.monotonic()
        for node in self.kafka.nodes:
            node.signal(signal.SIGTERM)
        deadline = time.monotonic() + 60
        for node in self.kafka.nodes:
            node.wait(deadline)
        for node in self.kafka.nodes:
            self.kafka.start_node(node.node_id, wait=False)
        self.kafka.wait_ready()
        return f"every node restarted ({time.monotonic() - started:.1f} s)"

    def heal(self) -> None:
        for node in self.kafka.nodes:
            node.signal(signal.SIGCONT)
            if not node.alive:
                self.kafka.start_node(node.node_id, wait=False)
        self.kafka.wait_ready()

    def close(self) -> None:
        super().close()
        self.kafka.stop()


class MiniChaos(ChaosCluster):
    """Three in-process mini-brokers behind proxies (module docstring)."""

    name = "mini"

    def __init__(self, log_dir: Path | None = None, num_brokers: int = 3) -> None:
        from kclient.broker import MiniCluster

        super().__init__()
        ports = [free_port() for _ in range(num_brokers)]
        self.mini = MiniCluster(
            num_brokers,
            log_dir=log_dir,
            config={"advertised.host.name": "127.0.0.1", "group.initial.rebalance.delay.ms": 0},
            per_broker=[{"advertised.port": p} for p in ports],
        )
        self.mini.start()
        try:
            for i, (broker, port) in enumerate(zip(self.mini.brokers, ports)):
                self.proxies[i] = HostileBroker(("127.0.0.1", broker.port), port=port).start()
        except BaseException:
            self.close()
            raise

    def create_topic(self, topic: str, partitions: int) -> None:
        self.mini.create_topic(topic, partitions)

    def kill_and_restart(self, node_id: int) -> str:
        self.mini.kill_broker(node_id)
        time.sleep(1.0)  # its partitions are unavailable meanwhile
        self.mini.start_broker(node_id)
        return f"broker {node_id} killed (no flush) and restarted after 1 s"

    def pause(self, node_id: int, seconds: float) -> str:
        proxy = self.proxies[node_id]
        proxy.arm("silent")
        try:
            time.sleep(seconds)
        finally:
            proxy.arm("pass")
        return f"broker {node_id} answered nothing for {seconds:.0f} s (proxy silent)"

    def restart_all(self) -> str:
        self.mini.stop()
        self.mini.start()
        return "every broker restarted (clean stop, start)"

    def heal(self) -> None:
        for proxy in self.proxies.values():
            proxy.arm("pass")
        self.mini.start()

    def close(self) -> None:
        super().close()
        self.mini.close()


def chaos_cluster(kind: str, workdir: Path | None = None) -> ChaosCluster:
    """``kind`` "kafka" (Apache Kafka 4.x, three nodes) or "mini" (three mini-brokers)."""
    if kind == "kafka":
        return KafkaChaos()
    if kind == "mini":
        return MiniChaos(workdir)
    raise ValueError(f"cluster must be 'kafka' or 'mini', not {kind!r}")
