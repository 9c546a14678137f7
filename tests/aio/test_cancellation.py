"""Cancelling tasks mid-send and mid-flush leaves the AIOProducer sound: later messages arrive
intact, nothing acknowledged is lost, and each cancelled message's future is cancelled (left
out when its batch was not written yet) or delivered."""

from __future__ import annotations

import asyncio
import random

from kclient.aio import AIOProducer

from .helpers import read_back


def test_cancel_mid_send_and_mid_flush(mini_broker):
    mini_broker.create_topic("c1", partitions=3)
    rng = random.Random(7)

    async def main() -> tuple[set[bytes], set[bytes], list[asyncio.Future]]:
        acked: set[bytes] = set()
        cancelled: set[bytes] = set()
        async with AIOProducer(
            bootstrap_servers=mini_broker.bootstrap, linger_ms=20, batch_num_messages=50
        ) as p:

            async def one(v: bytes) -> None:
                await p.send("c1", v * 10)
                acked.add(v)

            for round_ in range(20):
                tasks = {
                    bytes(f"r{round_}-{i:04d}", "ascii"): asyncio.create_task(
                        one(bytes(f"r{round_}-{i:04d}", "ascii"))
                    )
                    for i in range(200)
                }
                await asyncio.sleep(rng.choice([0, 0, 0.001, 0.005, 0.02]))
                for v, t in rng.sample(sorted(tasks.items()), 60):
                    if t.cancel():
                        cancelled.add(v)
                # a flush cancelled part-way
                flush = asyncio.create_task(p.flush())
                await asyncio.sleep(rng.choice([0, 0.001, 0.01]))
                flush.cancel()
                await asyncio.gather(*tasks.values(), return_exceptions=True)
            futs = [await p.enqueue("c1", b"tail-%03d" % i) for i in range(100)]
            await p.flush()
            assert p.metrics()["pending_messages"] == 0
        return acked, cancelled, futs

    acked, cancelled, futs = asyncio.run(main())
    assert cancelled and acked
    assert all(f.result().offset >= 0 for f in futs)
    expect = len(acked) + 100
    got = read_back(mini_broker.bootstrap, "c1", 3, expect)
    values = [v for _, _, _, v in got]
    assert len(values) == len(set(values))  # no duplicates, no torn records
    stored = {v[: len(v) // 10] for v in values if not v.startswith(b"tail")}
    for v in values:  # every record intact
        if not v.startswith(b"tail"):
            assert v == v[: len(v) // 10] * 10
    assert acked <= stored  # nothing acknowledged is lost
    assert stored - acked <= cancelled  # extra ones: cancelled but delivered
    assert {v for v in values if v.startswith(b"tail")} == {b"tail-%03d" % i for i in range(100)}
    # offsets per partition are dense: every write the broker took was whole
    by_part: dict[int, list[int]] = {}
    for part, off, _, _ in got:
        by_part.setdefault(part, []).append(off)
    for offs in by_part.values():
        assert sorted(offs) == list(range(len(offs)))


def test_cancel_while_waiting_for_room_queues_nothing(mini_broker):
    mini_broker.create_topic("c2", partitions=1)

    async def main() -> int:
        async with AIOProducer(
            bootstrap_servers=mini_broker.bootstrap,
            linger_ms=10000,
            queue_buffering_max_messages=5,
            batch_num_messages=5,
        ) as p:
            futs = [await p.enqueue("c2", b"m%d" % i) for i in range(5)]
            blocked = asyncio.create_task(p.send("c2", b"blocked"))
            await asyncio.sleep(0.05)
            assert not blocked.done()
            blocked.cancel()
            await asyncio.gather(blocked, return_exceptions=True)
            await p.flush()
            assert [f.result().offset for f in futs] == [0, 1, 2, 3, 4]
            return (await p.send("c2", b"later")).offset

    assert asyncio.run(main()) == 5
    assert [v for *_, v in read_back(mini_broker.bootstrap, "c2", 1, 6)] == [
        b"m0",
        b"m1",
        b"m2",
        b"m3",
        b"m4",
        b"later",
    ]


def test_cancelled_reads_lose_nothing(mini_broker):
    """getmany/getone cancelled at random points - while joining, resolving positions or
    waiting for data - never lose or repeat a record: the next calls go on where it stopped."""
    from kclient.aio import AIOConsumer

    mini_broker.create_topic("c3", partitions=3)
    rng = random.Random(3)

    async def main() -> list[bytes]:
        async with AIOProducer(bootstrap_servers=mini_broker.bootstrap) as p:
            for i in range(3000):
                await p.enqueue("c3", b"v%04d" % i, partition=i % 3)
            await p.flush()
        got: list[bytes] = []
        async with AIOConsumer(
            "c3",
            bootstrap_servers=mini_broker.bootstrap,
            group_id="g-c3",
            auto_offset_reset="earliest",
            max_poll_records=100,
            session_timeout_ms=6000,
            heartbeat_interval_ms=100,
        ) as c:
            while len(got) < 3000:
                call = c.getone() if rng.random() < 0.3 else c.getmany(timeout_ms=1000)
                try:
                    out = await asyncio.wait_for(call, rng.choice([0.0005, 0.002, 0.01, 1.0]))
                except asyncio.TimeoutError:
                    continue
                if isinstance(out, dict):
                    got += [r.value for recs in out.values() for r in recs]
                else:
                    got.append(out.value)
            assert await c.getmany(timeout_ms=300) == {}
        return got

    got = asyncio.run(main())
    assert sorted(got) == [b"v%04d" % i for i in range(3000)]
