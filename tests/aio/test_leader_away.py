"""AIOProducer waits for a partition's leader instead of failing at once (issue 25, found by
the chaos harness): a batch for a partition without a leader failed with a plain, not
retriable, KafkaError("no leader known ...") on its first try, while the threaded producer
retried it (LeaderNotAvailableError) until delivery.timeout.ms."""

from __future__ import annotations

import asyncio

from kclient import AIOProducer
from kclient.broker import MiniCluster

from ..waiting import async_wait_until


def test_send_waits_for_a_leader_being_restarted(tmp_path):
    with MiniCluster(2, log_dir=tmp_path) as cluster:
        cluster.create_topic("t", 2)
        away = cluster.leaders("t")[1]
        home = cluster.broker(cluster.leaders("t")[0]).bootstrap

        async def main() -> int:
            async with AIOProducer(
                bootstrap_servers=home,
                retry_backoff_ms=50,
                message_send_max_retries=1_000_000,
                delivery_timeout_ms=60_000,
                linger_ms=0,
            ) as p:
                await p.send("t", b"before", partition=1)
                cluster.stop_broker(away)
                pending = asyncio.ensure_future(p.send("t", b"while away", partition=1))
                await async_wait_until(
                    lambda: p.metrics()["retries"] >= 3 or pending.done(),
                    what="the batch retried while the leader is away",
                )
                assert not pending.done(), pending
                cluster.start_broker(away)
                return (await asyncio.wait_for(pending, 30)).offset

        assert asyncio.run(main()) == 1
