"""MiniCluster: N in-process brokers sharing one ClusterView, leadership spread round-robin.

There is no replication: a partition's data lives with its leader, and
:meth:`MiniCluster.move_leader` moves it by copying the flushed partition directory.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kclient.protocol.errors import UnknownTopicOrPartitionError

from .cluster import ClusterView
from .server import MiniBroker

__all__ = ["MiniCluster"]


class MiniCluster:
    """N in-process brokers (ids 0..N-1) on free loopback ports sharing one ClusterView."""

    def __init__(
        self,
        num_brokers: int = 3,
        log_dir: str | Path | None = None,
        zookeeper_connect: str | None = None,
        config: Mapping[str, Any] | None = None,
        host: str = "127.0.0.1",
        *,
        racks: Sequence[str | None] | None = None,
        per_broker: Sequence[Mapping[str, Any]] | None = None,
    ):
        """``racks[i]`` is broker i's ``broker.rack`` (None: no rack); ``config`` is shared,
        ``per_broker[i]`` added for broker i (e.g. its ``advertised.port``)."""
        if racks is not None and len(racks) != num_brokers:
            raise ValueError(f"racks names {len(racks)} racks for {num_brokers} brokers")
        if per_broker is not None and len(per_broker) != num_brokers:
            raise ValueError(f"per_broker has {len(per_broker)} configs for {num_brokers} brokers")
        self._tmp = log_dir is None
        self.log_dir = Path(
            tempfile.mkdtemp(prefix="kclient-cluster-") if log_dir is None else log_dir
        )
        self.view = ClusterView()
        self.brokers = [
            MiniBroker(
                log_dir=self.log_dir / f"broker-{i}",
                port=0,
                broker_id=i,
                zookeeper_connect=zookeeper_connect,
                config=_with_rack(
                    {**(config or {}), **(per_broker[i] if per_broker else {})},
                    racks[i] if racks else None,
                ),
                host=host,
                cluster=self.view,
            )
            for i in range(num_brokers)
        ]

    @property
    def bootstrap(self) -> str:
        """All brokers' "host:port", comma-separated."""
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self) -> MiniCluster:
        """Start every broker."""
        for b in self.brokers:
            if not b.running:
                b.start()
        return self

    def stop(self) -> None:
        """Stop every running broker (clean shutdown, logs flushed)."""
        for b in reversed(self.brokers):
            if b.running:
                b.stop()

    def close(self) -> None:
        """Stop everything and remove a temporary log directory."""
        self.stop()
        if self._tmp:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> MiniCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def broker(self, i: int) -> MiniBroker:
        """The broker with id ``i``."""
        return self.brokers[i]

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, Any] | None = None
    ) -> dict[int, int]:
        """Create a topic, leaders spread round-robin over the live brokers."""
        return self.view.create_topic(name, partitions, config)

    def leaders(self, topic: str) -> dict[int, int]:
        """partition -> leader id of a topic."""
        return self.view.partitions(topic) or {}

    def stop_broker(self, i: int) -> None:
        """Stop broker ``i`` cleanly; its partitions are unavailable until started or moved."""
        self.brokers[i].stop()

    def kill_broker(self, i: int) -> None:
        """Stop broker ``i`` abruptly (no flush)."""
        self.brokers[i].kill()

    def start_broker(self, i: int) -> None:
        """Start broker ``i`` again on its port and directory."""
        self.brokers[i].start()

    def move_leader(self, topic: str, partition: int, to_broker: int) -> None:
        """Make ``to_broker`` lead a partition by copying the flushed partition directory."""
        source_id = self.view.leaders.get(topic, {}).get(partition)
        if source_id is None:
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}")
        if source_id == to_broker:
            return
        source, target = self.brokers[source_id], self.brokers[to_broker]
        if target.running and target.log_manager.get_log(topic, partition) is not None:
            raise RuntimeError(
                f"broker {to_broker} already holds an open copy of "
                f"{topic}-{partition}; stop it before moving the partition back"
            )
        config = source.log_manager.topic_overrides(topic) or dict(self.view.configs.get(topic, {}))
        with self.view.lock:
            self.view.leaders[topic][partition] = -2  # nobody serves it while it moves
            if source.running:
                source_log = source.log_manager.get_log(topic, partition)
                if source_log is not None:
                    source_log.flush()
            src = source.log_dir / f"{topic}-{partition}"
            dst = target.log_dir / f"{topic}-{partition}"
            if dst.exists():
                shutil.rmtree(dst)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(src, dst)
            if not source.running:
                shutil.rmtree(src, ignore_errors=True)
            if target.running:
                target.log_manager.create_log(topic, partition, config)
        self.view.set_leader(topic, partition, to_broker)


def _with_rack(config: Mapping[str, Any] | None, rack: str | None) -> Mapping[str, Any] | None:
    """The shared config, plus ``broker.rack`` when this broker has a rack."""
    if rack is None:
        return config
    return {**(config or {}), "broker.rack": rack}
