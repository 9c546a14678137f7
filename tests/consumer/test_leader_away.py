"""kclient.Consumer.poll() goes on while one partition's leader is away (issue 25, found by the
chaos harness: a stopped broker made every poll of a consumer raise LeaderNotAvailableError or
a connection error, for all its partitions, until the leader was back). As Java's poll, it
fetches the partitions that have a leader, refreshes the metadata of the others, and picks
them up when their leader returns."""

from __future__ import annotations

from kclient import Consumer, Producer
from kclient.broker import MiniCluster
from kclient.structs import TopicPartition

from ..waiting import wait_until


def _send(bootstrap: str, partition: int, values: list[bytes]) -> None:
    with Producer(bootstrap_servers=bootstrap) as p:
        for v in values:
            p.produce("t", v, partition=partition).result(timeout=20)


def test_poll_goes_on_while_a_partitions_leader_is_away(tmp_path):
    with MiniCluster(
        2, log_dir=tmp_path, config={"group.initial.rebalance.delay.ms": 0}
    ) as cluster:
        cluster.create_topic("t", 2)
        leaders = cluster.leaders("t")
        home = cluster.broker(leaders[0]).bootstrap  # partition 0's leader stays up
        _send(cluster.bootstrap, 0, [b"a0", b"a1"])
        _send(cluster.bootstrap, 1, [b"b0", b"b1"])
        c = Consumer(
            bootstrap_servers=home,
            auto_offset_reset="earliest",
            socket_timeout_ms=2000,
            retry_backoff_ms=50,
            reconnect_backoff_max_ms=200,
        )
        got: dict[int, list[bytes]] = {0: [], 1: []}

        def poll_until(n0: int, n1: int) -> bool:
            for tp, records in c.poll(timeout=0.2).items():  # raises: the test fails
                got[tp.partition] += [r.value for r in records]
            return len(got[0]) >= n0 and len(got[1]) >= n1

        try:
            c.assign([TopicPartition("t", 0), TopicPartition("t", 1)])
            wait_until(lambda: poll_until(2, 2), what="the first records of both partitions")
            cluster.stop_broker(leaders[1])
            _send(home, 0, [b"a2"])
            wait_until(lambda: poll_until(3, 2), what="partition 0 with partition 1's leader away")
            for _ in range(5):  # polls that find partition 1 without a leader
                poll_until(3, 2)
            _send(home, 0, [b"a3"])
            wait_until(lambda: poll_until(4, 2), what="partition 0, still without partition 1")
            cluster.start_broker(leaders[1])
            _send(cluster.bootstrap, 1, [b"b2"])
            wait_until(lambda: poll_until(4, 3), what="partition 1 once its leader is back")
        finally:
            c.close()
    assert got == {0: [b"a0", b"a1", b"a2", b"a3"], 1: [b"b0", b"b1", b"b2"]}
