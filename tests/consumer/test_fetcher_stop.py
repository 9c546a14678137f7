"""stop_connections() wakes the leader finder inside a metadata lookup (issue 25).

The connectors' rebalance stops the fetcher manager before it reassigns partitions. Its leader
finder may be waiting for a Metadata answer then, for up to ``socket.timeout.ms``; before the
finder looked leaders up on connections of its own, which the stop halts, the rebalance (and
shutdown) waited that long for it.
"""

from __future__ import annotations

import queue
import threading
import time

from kclient.cluster import Cluster
from kclient.config import load_config
from kclient.consumer.connector import connection_settings
from kclient.consumer.fetcher import ConsumerFetcherManager
from kclient.consumer.stream import PartitionTopicInfo
from kclient.protocol.apis import METADATA

from ..hostile import hostile_pair
from ..waiting import LOAD_SLACK, wait_until

#: far beyond the bound asserted below: a stop that waits for the lookup fails the test
SOCKET_TIMEOUT_MS = 60_000


def _manager(bootstrap: str) -> tuple[Cluster, ConsumerFetcherManager]:
    config = load_config(
        "consumer",
        {
            "metadata.broker.list": bootstrap,
            "group.id": "g",
            "socket.timeout.ms": SOCKET_TIMEOUT_MS,
            "refresh.leader.backoff.ms": 50,
        },
    )
    cluster = Cluster(bootstrap, connection_settings(config))
    return cluster, ConsumerFetcherManager(cluster, config, "stop-test")


def test_stop_connections_wakes_a_finder_waiting_for_metadata(tmp_path):
    with hostile_pair(tmp_path / "broker") as (proxy, broker):
        broker.create_topic("t", 1)
        cluster, manager = _manager(proxy.bootstrap)
        proxy.arm("silent", {METADATA.key})
        info = PartitionTopicInfo("t", 0, queue.Queue(), 0, 0, 1 << 16, "stop-test")
        manager.start_connections([info])
        wait_until(lambda: proxy.mangled >= 1, what="the finder's Metadata request swallowed")
        done = threading.Event()
        stopper = threading.Thread(
            target=lambda: (manager.stop_connections(), done.set()), daemon=True
        )
        start = time.monotonic()
        stopper.start()
        assert done.wait(1 + LOAD_SLACK), "stop_connections waited for the metadata lookup"
        took = time.monotonic() - start
        proxy.arm("pass")
        cluster.close()
    assert took < 1 + LOAD_SLACK < SOCKET_TIMEOUT_MS / 1000


def test_the_manager_starts_again_after_a_stop(tmp_path):
    """A stop halts only that run's lookups: the next start finds the leader and fetches."""
    with hostile_pair(tmp_path / "broker") as (proxy, broker):
        broker.create_topic("t", 1)
        from kclient import Producer, ProducerData

        with Producer({"metadata.broker.list": proxy.bootstrap}) as p:
            p.send([ProducerData("t", b"m%d" % i) for i in range(3)])
        cluster, manager = _manager(proxy.bootstrap)
        try:
            for _ in range(2):
                q: queue.Queue = queue.Queue()
                manager.start_connections([PartitionTopicInfo("t", 0, q, 0, 0, 1 << 16, "x")])
                chunk = q.get(timeout=10 + LOAD_SLACK)
                assert chunk.values[:3] == [b"m0", b"m1", b"m2"]
                manager.stop_connections()
                assert manager.owned() == []
        finally:
            manager.stop_connections()
            cluster.close()
