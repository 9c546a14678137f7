"""kclient.aio against real Kafka 4.x: produce and consume, two AIOConsumers splitting a topic's
partitions through Kafka's group coordinator, commit then a new member resuming, seek, and a
per-message error (a message over the topic's max.message.bytes)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kclient.aio import AIOConsumer, AIOProducer
from kclient.errors import MessageSizeTooLargeError
from kclient.structs import TopicPartition as TP

from .helpers import new_topic

pytestmark = pytest.mark.kafka


def _conf(bootstrap: str, group: str) -> dict:
    return {
        "bootstrap_servers": bootstrap,
        "group_id": group,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 300,
    }


async def _produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    async with AIOProducer(bootstrap_servers=bootstrap, acks="all") as p:
        futs = [await p.enqueue(topic, b"m%d" % i, partition=i % partitions) for i in range(n)]
        await p.flush()
        by_part: dict[int, list[int]] = {}
        for i, f in enumerate(futs):
            md = f.result()
            assert md.partition == i % partitions
            by_part.setdefault(md.partition, []).append(md.offset)
        for offs in by_part.values():  # consecutive offsets per partition, in send order
            assert offs == list(range(offs[0], offs[0] + len(offs)))


def test_produce_consume_and_per_message_error(kafka4):
    topic = new_topic(kafka4, partitions=2, config={"max.message.bytes": "10000"})

    async def main() -> None:
        async with AIOProducer(bootstrap_servers=kafka4.bootstrap, linger_ms=20) as p:
            big = await p.enqueue(topic, b"x" * 50000, partition=0)
            small = await p.enqueue(topic, b"fits", partition=1)
            await p.flush()
            with pytest.raises(MessageSizeTooLargeError):
                big.result()
            assert small.result().offset == 0
        await _produce(kafka4.bootstrap, topic, 200, 2)
        async with AIOConsumer(
            bootstrap_servers=kafka4.bootstrap, auto_offset_reset="earliest"
        ) as c:
            c.assign([TP(topic, 0), TP(topic, 1)])
            got = []
            while len(got) < 201:
                for recs in (await c.getmany(timeout_ms=5000)).values():
                    got += recs
            assert sorted(r.value for r in got) == sorted(
                [b"fits"] + [b"m%d" % i for i in range(200)]
            )
            c.seek(TP(topic, 0), 90)
            r = await c.getone(TP(topic, 0))
            assert (r.offset, r.value) == (90, b"m180")  # partition 0 holds m0, m2, ...

    asyncio.run(main())


def test_group_split_commit_resume(kafka4):
    topic = new_topic(kafka4, partitions=4)
    group = f"aio-{uuid.uuid4().hex[:8]}"
    bs = kafka4.bootstrap

    async def main() -> None:
        await _produce(bs, topic, 400, 4)
        a, b = AIOConsumer(topic, **_conf(bs, group)), AIOConsumer(topic, **_conf(bs, group))
        got: dict[str, list] = {"a": [], "b": []}
        stop = asyncio.Event()

        async def run(name: str, c: AIOConsumer) -> None:
            while not stop.is_set():
                for recs in (await c.getmany(timeout_ms=200)).values():
                    got[name] += recs

        tasks = [asyncio.create_task(run("a", a)), asyncio.create_task(run("b", b))]
        for _ in range(300):
            await asyncio.sleep(0.1)
            if (
                len(a.assignment()) == 2
                and len(b.assignment()) == 2
                and len(got["a"]) + len(got["b"]) >= 400
            ):
                break
        stop.set()
        await asyncio.gather(*tasks)
        assert a.assignment() | b.assignment() == {TP(topic, p) for p in range(4)}
        assert not a.assignment() & b.assignment()
        assert {r.value for r in got["a"] + got["b"]} == {b"m%d" % i for i in range(400)}
        for c in (a, b):  # commit 60 of each owned partition's 100
            await c.commit(dict.fromkeys(c.assignment(), 60))
        await a.close()
        await b.close()
        async with AIOConsumer(topic, **_conf(bs, group)) as c:
            rest = []
            while len(rest) < 160:
                for recs in (await c.getmany(timeout_ms=5000)).values():
                    rest += recs
            for p in range(4):
                assert [r.offset for r in rest if r.partition == p] == list(range(60, 100))
                assert await c.committed(TP(topic, p)) == 60

    asyncio.run(main())
