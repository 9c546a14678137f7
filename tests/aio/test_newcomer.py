"""Issue 24, asyncio rows: AIOConsumer takes the partition forms kclient.Consumer takes;
AIOProducer the headers, timestamp and on_delivery of Producer.produce; failures are logged."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kclient.aio import AIOConsumer, AIOProducer
from kclient.errors import UnknownTopicOrPartitionError
from kclient.structs import TopicPartition as TP


def test_aio_partition_arguments_take_tuples_and_lists(mini_broker):
    """Row 5: AIOConsumer.pause([tp]) used to raise TypeError: unhashable type: 'list'."""
    mini_broker.create_topic("kp", partitions=2)
    bs = mini_broker.bootstrap

    async def main() -> None:
        async with AIOProducer(bootstrap_servers=bs) as p:
            for i in range(4):
                await p.send("kp", b"v%d" % i, partition=i % 2)
        async with AIOConsumer(
            bootstrap_servers=bs,
            group_id="ga",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        ) as c:
            c.assign([("kp", 0), TP("kp", 1)])
            c.pause([TP("kp", 0), ("kp", 1)])
            assert await c.getmany(timeout=0.3) == {}
            c.resume([("kp", 0)], ("kp", 1))
            c.seek(("kp", 1), 1)
            got = {}
            for _ in range(20):
                for tp, recs in (await c.getmany(timeout_ms=500)).items():
                    got.setdefault(tp, []).extend(r.offset for r in recs)
                if sum(map(len, got.values())) == 3:
                    break
            assert got == {TP("kp", 0): [0, 1], TP("kp", 1): [1]}
            only = await c.getmany(("kp", 0), timeout=0.2)
            assert only == {}
            await c.commit({("kp", 0): 2})
            assert await c.committed(("kp", 0)) == 2
            assert await c.committed([("kp", 0), ("kp", 1)]) == {TP("kp", 0): 2, TP("kp", 1): None}
            assert await c.position(("kp", 1)) == 2
            with pytest.raises(TypeError, match="getmany"):
                await c.getmany(timeout=1.0, timeout_ms=5)

    asyncio.run(main())


def test_aio_send_takes_produce_arguments(mini_broker):
    """Row 7 and 16: dict headers with str values, timestamp= (Producer.produce's name),
    on_delivery / callback (err, metadata)."""
    mini_broker.create_topic("h", partitions=1)
    bs = mini_broker.bootstrap
    seen = []

    async def main() -> None:
        async with AIOProducer(bootstrap_servers=bs) as p:
            md = await p.send(
                "h",
                b"v",
                headers={"a": "é", "b": b"x"},
                timestamp=1234,
                on_delivery=lambda err, md: seen.append((err, md.offset)),
            )
            fut = await p.enqueue("h", b"w", timestamp_ms=99, callback=lambda e, m: seen.append(m))
            await p.flush()
            assert md.offset == 0 and (await fut).offset == 1
            with pytest.raises(TypeError, match="aliases"):
                await p.send("h", b"v", timestamp=1, timestamp_ms=2)
        async with AIOConsumer(bootstrap_servers=bs, auto_offset_reset="earliest") as c:
            c.assign(("h", 0))
            got = await c.getmany(timeout=5.0)
            recs = got[TP("h", 0)]
            assert [list(r.headers) for r in recs][0] == [("a", "é".encode()), ("b", b"x")]
            assert [r.timestamp for r in recs] == [1234, 99]

    asyncio.run(main())
    assert seen[0] == (None, 0) and seen[1].offset == 1


def test_aio_failed_delivery_raises_and_logs_a_warning(mini_broker, caplog):
    """The one rule of docs/producer.md: an async failure is on the future and in the log."""
    mini_broker.create_topic("f", partitions=1)
    bs = mini_broker.bootstrap
    errors = []

    async def main() -> None:
        async with AIOProducer(bootstrap_servers=bs, retries=0) as p:
            fut = await p.enqueue(
                "f", b"v", partition=0, on_delivery=lambda err, md: errors.append(err)
            )
            await fut
            mini_broker.delete_topic("f")
            fut = await p.enqueue("f", b"v", partition=0)
            with pytest.raises(UnknownTopicOrPartitionError):
                await asyncio.wait_for(fut, 30)

    with caplog.at_level(logging.WARNING, logger="kclient.aio"):
        asyncio.run(main())
    assert errors == [None]
    assert any(
        r.levelno == logging.WARNING and "failed to deliver 1 message(s) to f/0" in r.getMessage()
        for r in caplog.records
    )


def test_a_number_where_partitions_go_names_the_timeout_keywords(mini_broker):
    async def main() -> None:
        async with AIOConsumer(bootstrap_servers=mini_broker.bootstrap) as c:
            c.assign(("x", 0))
            with pytest.raises(TypeError, match=r"timeout=1\.0 \(seconds\) or timeout_ms=1000"):
                await c.getmany(1.0)

    mini_broker.create_topic("x", partitions=1)
    asyncio.run(main())


def test_record_headers_without_any_are_the_documented_empty_shapes(mini_broker):
    """Row 16: an empty list in kclient.Consumer (kafka-python's), the shared empty tuple in
    AIOConsumer (aiokafka's); both falsy, as docs/migrating.md's traps table says."""
    import pathlib

    from kclient import Consumer

    mini_broker.create_topic("nh", partitions=1)

    async def main() -> tuple:
        async with AIOProducer(bootstrap_servers=mini_broker.bootstrap) as p:
            await p.send("nh", b"v")
        async with AIOConsumer(
            bootstrap_servers=mini_broker.bootstrap, auto_offset_reset="earliest"
        ) as c:
            c.assign(("nh", 0))
            return (await c.getmany(timeout=5.0))[TP("nh", 0)][0].headers

    aio_headers = asyncio.run(main())
    with Consumer(bootstrap_servers=mini_broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign(("nh", 0))
        threaded = c.consume(1, timeout=5.0)[0].headers
    assert aio_headers == () and threaded == [] and not aio_headers and not threaded
    traps = (pathlib.Path(__file__).parents[2] / "docs" / "migrating.md").read_text()
    assert "`[]` in `kclient.Consumer`, `()` in `AIOConsumer`" in traps
