"""AIOProducer against the mini-broker: offsets, batching, per-message errors, config errors."""

from __future__ import annotations

import asyncio

import pytest

from kclient.aio import AIOProducer
from kclient.errors import (
    IllegalStateError,
    InvalidConfigError,
    MessageSizeTooLargeError,
    UnknownTopicOrPartitionError,
)
from kclient.partitioner import DefaultPartitioner
from kclient.producer.data import RecordMetadata
from tests.waiting import async_wait_until

from .helpers import read_back


def test_send_returns_metadata_with_consecutive_offsets(mini_broker):
    mini_broker.create_topic("a1", partitions=1)

    async def main() -> list[RecordMetadata]:
        async with AIOProducer(bootstrap_servers=mini_broker.bootstrap, linger_ms=1) as p:
            first = await p.send("a1", b"first")
            futs = [await p.enqueue("a1", b"m%d" % i) for i in range(500)]
            await p.flush()
            assert all(f.done() for f in futs)
            return [first] + [f.result() for f in futs]

    mds = asyncio.run(main())
    assert [m.offset for m in mds] == list(range(501))
    assert {(m.topic, m.partition) for m in mds} == {("a1", 0)}
    assert all(m.timestamp > 0 for m in mds)
    got = read_back(mini_broker.bootstrap, "a1", 1, 501)
    assert [v for _, _, _, v in got] == [b"first"] + [b"m%d" % i for i in range(500)]


def test_keys_partition_as_the_sync_producer_and_headers_timestamps_arrive(mini_broker):
    mini_broker.create_topic("a2", partitions=4)
    keys = [b"k%d" % i for i in range(40)]

    async def main() -> list[RecordMetadata]:
        async with AIOProducer(bootstrap_servers=mini_broker.bootstrap) as p:
            return list(
                await asyncio.gather(
                    *(
                        p.send(
                            "a2",
                            b"v" + k,
                            key=k,
                            timestamp_ms=1_700_000_000_000,
                            headers=[("h", b"x")],
                        )
                        for k in keys
                    )
                )
            )

    mds = asyncio.run(main())
    part = DefaultPartitioner()
    assert [m.partition for m in mds] == [part(k, 4) for k in keys]
    assert all(m.timestamp == 1_700_000_000_000 for m in mds)
    got = read_back(mini_broker.bootstrap, "a2", 4, 40)
    assert sorted((k, v) for _, _, k, v in got) == sorted((k, b"v" + k) for k in keys)


def test_batch_limits_count_and_bytes(mini_broker):
    """batch.num.messages and batch.size (bytes) both cut batches."""

    async def main() -> tuple[int, int]:
        async with AIOProducer(
            bootstrap_servers=mini_broker.bootstrap,
            linger_ms=1000,
            batch_num_messages=10,
            batch_size=100000,
        ) as p:
            for _ in range(25):
                await p.enqueue("a3", b"x")
            by_count = p.metrics()["queued_batches"]
            await p.flush()
        async with AIOProducer(
            bootstrap_servers=mini_broker.bootstrap, linger_ms=1000, batch_size=1000
        ) as p:
            for _ in range(10):
                await p.enqueue("a3", b"y" * 300, partition=0)
            by_bytes = p.metrics()["queued_batches"]
            await p.flush()
        return by_count, by_bytes

    mini_broker.create_topic("a3", partitions=1)
    assert asyncio.run(main()) == (3, 4)  # 10+10+5 messages; 3 per 1000 bytes


def test_failures_are_per_message(mini_broker):
    mini_broker.create_topic("a4", partitions=2)

    async def main() -> None:
        async with AIOProducer(
            bootstrap_servers=mini_broker.bootstrap, message_max_bytes=2000
        ) as p:
            ok1 = await p.enqueue("a4", b"before")
            with pytest.raises(UnknownTopicOrPartitionError, match="partitions 0..1, not 7"):
                await p.send("a4", b"nowhere", partition=7)
            with pytest.raises(MessageSizeTooLargeError, match="message.max.bytes"):
                await p.send("a4", b"x" * 5000)
            with pytest.raises(TypeError, match="serializer|bytes"):
                await p.send("a4", 12345)
            ok2 = await p.send("a4", b"after")
            assert (await ok1).offset >= 0 and ok2.offset >= 0

    asyncio.run(main())


def test_broker_error_fails_that_batch_only(mini_broker):
    """A partition error in the Produce response (message too large for the broker) fails the
    messages of that batch; the other partition's batch in the same request succeeds."""
    mini_broker.create_topic("a5", partitions=2, config={"max.message.bytes": "3000"})

    async def main() -> None:
        async with AIOProducer(bootstrap_servers=mini_broker.bootstrap, linger_ms=50) as p:
            big = await p.enqueue("a5", b"x" * 5000, partition=0)
            small = await p.enqueue("a5", b"y", partition=1)
            await p.flush()
            with pytest.raises(MessageSizeTooLargeError, match="partition 0"):
                big.result()
            assert small.result().partition == 1

    asyncio.run(main())


def test_config_errors_name_the_key():
    with pytest.raises(InvalidConfigError, match="linger"):
        AIOProducer(bootstrap_servers="127.0.0.1:1", lingerms=5)
    with pytest.raises(InvalidConfigError, match="enable.idempotence"):
        AIOProducer(
            bootstrap_servers="127.0.0.1:1", enable_idempotence=True, acks=1
        )  # idempotence needs acks=all, as the threaded producer
    with pytest.raises(InvalidConfigError, match="batch.size"):
        AIOProducer(bootstrap_servers="127.0.0.1:1", batch_size=-1)
    with pytest.raises(InvalidConfigError, match="metadata.broker.list"):
        AIOProducer()


def test_send_after_close_and_callable_serializer(mini_broker):
    mini_broker.create_topic("a6", partitions=1)

    async def main() -> None:
        p = AIOProducer(
            bootstrap_servers=mini_broker.bootstrap, value_serializer=lambda v: str(v).encode()
        )
        md = await p.send("a6", 42)
        assert md.offset == 0
        await p.close()
        with pytest.raises(IllegalStateError):
            await p.send("a6", 1)

    asyncio.run(main())
    assert read_back(mini_broker.bootstrap, "a6", 1, 1)[0][3] == b"42"


def test_close_with_the_broker_gone_fails_what_is_left(mini_broker):
    """Messages queued, in flight or waiting to retry when close(timeout) runs out fail with
    an error: none is left pending forever."""
    mini_broker.create_topic("a7", partitions=1)

    async def main() -> None:
        p = AIOProducer(
            bootstrap_servers=mini_broker.bootstrap,
            retries=1000,
            retry_backoff_ms=50,
            request_timeout_ms=1000,
        )
        assert (await p.send("a7", b"first")).offset == 0
        mini_broker.stop()
        futs = [await p.enqueue("a7", b"m%d" % i) for i in range(50)]
        await async_wait_until(
            lambda: any(b["errors"] or b["disconnects"] for b in p.metrics()["brokers"].values()),
            20,
            "the sender failing against the stopped broker",
        )
        await asyncio.wait_for(p.close(timeout=0.5), 10)
        assert all(f.done() for f in futs)
        assert all(f.exception() is not None for f in futs)

    asyncio.run(main())


def test_metrics_count_the_traffic(mini_broker):
    mini_broker.create_topic("a8", partitions=2)

    async def main() -> dict:
        async with AIOProducer(bootstrap_servers=mini_broker.bootstrap, linger_ms=1000) as p:
            for i in range(30):
                await p.enqueue("a8", b"x" * 10, partition=i % 2)
            m = p.metrics()
            assert m["pending_messages"] == 30
            assert m["partitions"]["a8/0"]["queued_messages"] == 15
            assert m["partitions"]["a8/1"]["open_batch_bytes"] == 15 * (10 + 12)
            await p.flush()
            return p.metrics()

    m = asyncio.run(main())
    assert m["pending_messages"] == 0 and m["queued_batches"] == 0
    assert m["totals"]["requests"] >= 3  # metadata, ApiVersions, Produce
    assert m["totals"]["errors"] == 0
    assert sum(b["requests_by_api"].get("Produce", 0) for b in m["brokers"].values()) >= 1
    assert all(b["rtt_ms"]["samples"] > 0 for b in m["brokers"].values())
