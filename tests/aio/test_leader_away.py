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


def test_consumer_fetches_again_once_a_leader_is_back(tmp_path):
    """AIOConsumer's fetch task, finding no leader for any partition it reads (metadata not
    loaded yet, or a refresh during an election or a whole-cluster restart), waited for a wake
    that only a fetch answer, drained data or a seek gave, and never fetched again: an
    AIOConsumer group stopped for good in a Kafka chaos run (issue 25); here it read nothing,
    not even the first record. Now it looks again after retry.backoff.ms."""
    from kclient import AIOConsumer, Producer

    with MiniCluster(2, log_dir=tmp_path) as cluster:
        cluster.create_topic("t", 2)
        away = cluster.leaders("t")[1]
        home = cluster.broker(cluster.leaders("t")[0]).bootstrap

        def produce(value: bytes) -> None:
            with Producer({"bootstrap.servers": home, "acks": "all"}) as p:
                p.produce("t", value, partition=1).result(timeout=30)

        produce(b"before")

        async def main() -> list[bytes]:
            c = AIOConsumer(bootstrap_servers=home, retry_backoff_ms=50, fetch_max_wait_ms=100)

            async def read() -> list[bytes]:
                batch = await c.getmany(timeout_ms=200)
                return [r.value for rs in batch.values() for r in rs]

            await c.start()
            try:
                c.assign([("t", 1)])
                c.seek(("t", 1), 0)
                assert await async_wait_until(read, timeout=30, what="the first record") == [
                    b"before"
                ]
                cluster.stop_broker(away)
                await async_wait_until(
                    lambda: c.cluster.leader("t", 1) is None,
                    what="the consumer's metadata without a leader for t-1",
                )
                assert await read() == []
                cluster.start_broker(away)
                await asyncio.get_running_loop().run_in_executor(None, produce, b"after")
                return await async_wait_until(read, timeout=30, what="the record after")
            finally:
                await c.close()

        assert asyncio.run(main()) == [b"after"]
