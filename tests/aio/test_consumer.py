"""AIOConsumer against the mini-broker: async for, getmany/getone, group membership with two
members splitting partitions, commit then resume, seek, pause, config errors."""

from __future__ import annotations

import asyncio

import pytest

from kclient.aio import AIOConsumer, AIOProducer
from kclient.errors import IllegalStateError, InvalidConfigError
from kclient.structs import TopicPartition as TP


async def produce(
    bootstrap: str, topic: str, n: int, partitions: int, prefix: str = "m", start: int = 0
) -> None:
    async with AIOProducer(bootstrap_servers=bootstrap) as p:
        for i in range(start, start + n):
            await p.enqueue(topic, f"{prefix}{i}".encode(), partition=i % partitions)
        await p.flush()


def test_async_for_getmany_getone(mini_broker):
    mini_broker.create_topic("r1", partitions=3)
    bs = mini_broker.bootstrap

    async def main() -> None:
        await produce(bs, "r1", 300, 3)
        async with AIOConsumer(
            "r1",
            bootstrap_servers=bs,
            group_id="g-r1",
            auto_offset_reset="earliest",
            value_deserializer=bytes.decode,
            enable_auto_commit=False,
        ) as c:
            seen = []
            async for rec in c:
                seen.append(rec)
                if len(seen) == 100:
                    break
            one = await c.getone()
            rest = []
            while len(seen) + 1 + len(rest) < 300:
                got = await c.getmany(timeout_ms=2000, max_records=50)
                assert sum(map(len, got.values())) <= 50
                for recs in got.values():
                    rest += recs
            every = seen + [one] + rest
            assert sorted(r.value for r in every) == sorted(f"m{i}" for i in range(300))
            for p in range(3):  # in order within a partition, dense offsets
                offs = [r.offset for r in every if r.partition == p]
                assert offs == list(range(100))
            assert await c.position(TP("r1", 0)) == 100
            assert await c.getmany(timeout_ms=200) == {}
            assert c.metrics()["partitions"]["r1/0"]["lag"] == 0

    asyncio.run(main())


def test_two_members_split_partitions_then_one_takes_all(mini_broker):
    mini_broker.create_topic("r2", partitions=4)
    bs = mini_broker.bootstrap

    async def main() -> None:
        await produce(bs, "r2", 400, 4)
        conf = dict(
            bootstrap_servers=bs,
            group_id="g-r2",
            auto_offset_reset="earliest",
            heartbeat_interval_ms=100,
            session_timeout_ms=6000,
        )
        a, b = AIOConsumer("r2", **conf), AIOConsumer("r2", **conf)
        got: dict[str, list] = {"a": [], "b": []}

        async def run(name: str, c: AIOConsumer, stop: asyncio.Event) -> None:
            while not stop.is_set():
                for recs in (await c.getmany(timeout_ms=100)).values():
                    got[name] += recs

        stop = asyncio.Event()
        tasks = [asyncio.create_task(run("a", a, stop)), asyncio.create_task(run("b", b, stop))]
        for _ in range(100):
            await asyncio.sleep(0.1)
            if (
                len(a.assignment()) == 2
                and len(b.assignment()) == 2
                and len(got["a"]) + len(got["b"]) >= 400
            ):
                break
        stop.set()
        await asyncio.gather(*tasks)
        assert a.assignment() | b.assignment() == {TP("r2", p) for p in range(4)}
        assert not a.assignment() & b.assignment()
        values = sorted(r.value for r in got["a"] + got["b"])
        assert set(values) >= {b"m%d" % i for i in range(400)}
        # with the split settled, new records go to the member owning their partition
        got = {"a": [], "b": []}
        stop = asyncio.Event()
        tasks = [asyncio.create_task(run("a", a, stop)), asyncio.create_task(run("b", b, stop))]
        await produce(bs, "r2", 40, 4, start=1000)
        for _ in range(100):
            await asyncio.sleep(0.1)
            if len(got["a"]) + len(got["b"]) >= 40:
                break
        stop.set()
        await asyncio.gather(*tasks)
        assert len(got["a"]) + len(got["b"]) == 40
        for name, c in (("a", a), ("b", b)):
            mine = {TP(r.topic, r.partition) for r in got[name]}
            assert mine <= c.assignment()
        await a.commit()
        await b.close()  # b leaves: a gets every partition
        await produce(bs, "r2", 40, 4, start=400)
        more: list = []
        for _ in range(100):
            for recs in (await a.getmany(timeout_ms=100)).values():
                more += recs
            if len(a.assignment()) == 4 and len(more) >= 40:
                break
        assert a.assignment() == {TP("r2", p) for p in range(4)}
        assert {r.value for r in more} >= {b"m%d" % i for i in range(400, 440)}
        await a.close()

    asyncio.run(main())


def test_commit_then_new_consumer_resumes(mini_broker):
    mini_broker.create_topic("r3", partitions=2)
    bs = mini_broker.bootstrap

    async def main() -> None:
        await produce(bs, "r3", 100, 2)
        conf = dict(
            bootstrap_servers=bs,
            group_id="g-r3",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        async with AIOConsumer("r3", **conf) as c:
            n = 0
            async for _ in c:
                n += 1
                if n == 60:
                    break
            positions = {tp: await c.position(tp) for tp in c.assignment()}
            await c.commit()
            for tp, pos in positions.items():
                assert await c.committed(tp) == pos
        async with AIOConsumer("r3", **conf) as c2:
            rest = []
            while len(rest) < 40:
                for recs in (await c2.getmany(timeout_ms=2000)).values():
                    rest += recs
            assert sum(positions.values()) == 60
            for tp, pos in positions.items():
                offs = [r.offset for r in rest if r.partition == tp.partition]
                assert offs == list(range(pos, 50))  # from the committed offset on
            assert len(rest) == 40

    asyncio.run(main())


def test_assign_seek_pause(mini_broker):
    mini_broker.create_topic("r4", partitions=2)
    bs = mini_broker.bootstrap

    async def main() -> None:
        await produce(bs, "r4", 100, 2)
        async with AIOConsumer(bootstrap_servers=bs, auto_offset_reset="latest") as c:
            c.assign([TP("r4", 0), TP("r4", 1)])
            assert await c.position(TP("r4", 0)) == 50  # latest
            c.seek(TP("r4", 0), 45)
            c.pause(TP("r4", 1))
            await c.seek_to_beginning(TP("r4", 1))
            got = await c.getmany(timeout_ms=2000)
            assert list(got) == [TP("r4", 0)]
            assert [r.offset for r in got[TP("r4", 0)]] == [45, 46, 47, 48, 49]
            c.resume(TP("r4", 1))
            r = await c.getone()
            assert (r.partition, r.offset) == (1, 0)
            c.seek(TP("r4", 1), 49)  # drops what was buffered past it
            r = await c.getone(TP("r4", 1))
            assert (r.partition, r.offset, r.value) == (1, 49, b"m99")
            await c.seek_to_end()
            assert await c.getmany(timeout_ms=200) == {}
            with pytest.raises(IllegalStateError):
                await c.commit()

    asyncio.run(main())


def test_a_seek_while_the_next_fetch_is_out_reads_on_from_exactly_there(mini_broker):
    """The fetch task sends the next Fetch as an answer arrives, before decoding it; a seek
    while that fetch is on the wire drops its answer and what was queued: the records after
    the seek are exactly the ones from its offset on, none missing, none twice."""
    mini_broker.create_topic("ahead", partitions=1)
    bs = mini_broker.bootstrap

    async def main() -> None:
        async with AIOProducer(bootstrap_servers=bs) as p:
            for i in range(30):  # 30 batches of 10: a 1 KB fetch holds a few of them
                for k in range(10):
                    await p.enqueue("ahead", b"v%d" % (i * 10 + k), partition=0)
                await p.flush()
        async with AIOConsumer(
            bootstrap_servers=bs, auto_offset_reset="earliest", max_partition_fetch_bytes=1024
        ) as c:
            c.assign([TP("ahead", 0)])
            seen: list[int] = []
            while len(seen) < 100:
                for recs in (await c.getmany(timeout_ms=2000, max_records=20)).values():
                    seen += [r.offset for r in recs]
            await asyncio.sleep(0.01)  # the fetch task runs
            while not c._fetcher._inflight:  # a full queue holds the next fetch back
                for recs in (await c.getmany(timeout_ms=2000, max_records=5)).values():
                    seen += [r.offset for r in recs]
                await asyncio.sleep(0.002)
            assert seen == list(range(len(seen))) and len(seen) < 300
            c.seek(TP("ahead", 0), 7)
            rest: list = []
            while len(rest) < 293:
                for recs in (await c.getmany(timeout_ms=2000)).values():
                    rest += recs
            assert [r.offset for r in rest] == list(range(7, 300))
            assert [r.value for r in rest[:2]] == [b"v7", b"v8"]
            assert c._fetcher.sent_ahead > 0

    asyncio.run(main())


def test_consumer_config_errors():
    with pytest.raises(InvalidConfigError, match="group.id"):
        AIOConsumer("t", bootstrap_servers="127.0.0.1:1")
    with pytest.raises(InvalidConfigError, match="auto.offset.reset"):
        AIOConsumer(bootstrap_servers="127.0.0.1:1", auto_offset_reset="oldest")
    with pytest.raises(InvalidConfigError, match="cooperative-sticky"):
        AIOConsumer(
            bootstrap_servers="127.0.0.1:1",
            group_id="g",
            partition_assignment_strategy="cooperative-stiky",
        )
    with pytest.raises(InvalidConfigError, match="zookeeper.connect"):
        AIOConsumer(bootstrap_servers="127.0.0.1:1", group_id="g", zookeeper_connect="zk:2181")
    with pytest.raises(InvalidConfigError, match="session.timeout"):
        AIOConsumer(bootstrap_servers="127.0.0.1:1", sesion_timeout_ms=5)


def test_keys_headers_and_decoders(mini_broker):
    mini_broker.create_topic("r5", partitions=1)
    bs = mini_broker.bootstrap

    async def main() -> None:
        async with AIOProducer(bootstrap_servers=bs) as p:
            await p.send("r5", b"plain-1")
            await p.send("r5", b"plain-2")
            await p.send("r5", b"with", key=b"k", headers=[("h", b"x"), ("n", None)])
        async with AIOConsumer(
            bootstrap_servers=bs,
            auto_offset_reset="earliest",
            key_deserializer=bytes.decode,
            value_deserializer=lambda b: b.upper(),
        ) as c:
            c.assign([TP("r5", 0)])
            recs = []
            while len(recs) < 3:
                for got in (await c.getmany(timeout_ms=2000)).values():
                    recs += got
            assert [(r.key, r.value, r.headers) for r in recs] == [
                (None, b"PLAIN-1", ()),
                (None, b"PLAIN-2", ()),
                ("k", b"WITH", [("h", b"x"), ("n", None)]),
            ]  # () when none, as aiokafka's

    asyncio.run(main())


def test_rebalance_listener_order_plain_and_async(mini_broker):
    """on_partitions_revoked before each rejoin, on_partitions_assigned after; async listener
    methods are awaited."""
    mini_broker.create_topic("r6", partitions=2)
    bs = mini_broker.bootstrap
    events: list[tuple[str, str, list[int]]] = []

    class Listener:
        def __init__(self, name: str) -> None:
            self.name = name

        def on_partitions_revoked(self, tps: set) -> None:
            events.append((self.name, "revoked", sorted(tp.partition for tp in tps)))

        async def on_partitions_assigned(self, tps: set) -> None:
            await asyncio.sleep(0)
            events.append((self.name, "assigned", sorted(tp.partition for tp in tps)))

    async def main() -> None:
        conf = dict(
            bootstrap_servers=bs,
            group_id="g-r6",
            heartbeat_interval_ms=100,
            session_timeout_ms=6000,
        )
        a, b = AIOConsumer(**conf), AIOConsumer(**conf)
        a.subscribe(["r6"], listener=Listener("a"))
        await a.getmany(timeout_ms=200)
        assert events == [("a", "assigned", [0, 1])]
        b.subscribe(["r6"], listener=Listener("b"))
        stop = asyncio.Event()

        async def run(c: AIOConsumer) -> None:
            while not stop.is_set():
                await c.getmany(timeout_ms=100)

        tasks = [asyncio.create_task(run(a)), asyncio.create_task(run(b))]
        for _ in range(100):
            await asyncio.sleep(0.1)
            if len(a.assignment()) == 1 and len(b.assignment()) == 1:
                break
        stop.set()
        await asyncio.gather(*tasks)
        a_events = [e[1:] for e in events if e[0] == "a"]
        assert a_events[:2] == [("assigned", [0, 1]), ("revoked", [0, 1])]
        assert a_events[-1][0] == "assigned" and len(a_events[-1][1]) == 1
        assert [e[1] for e in events if e[0] == "b"][-1] == "assigned"
        await a.close()
        await b.close()

    asyncio.run(main())


def test_a_caught_up_reader_fetches_from_its_prepared_frame(mini_broker):
    """One record written at a time and read before the next: after the session's full and
    first incremental request, every Fetch is the usual one, stamped into the kept frame; the
    mini-broker checks each epoch as Kafka does, so the session never starts over."""
    mini_broker.create_topic("steady", partitions=1)
    bs = mini_broker.bootstrap

    async def main() -> None:
        async with (
            AIOConsumer(
                bootstrap_servers=bs, auto_offset_reset="earliest", **{"fetch.wait.max.ms": 2000}
            ) as c,
            AIOProducer(bootstrap_servers=bs) as p,
        ):
            c.assign([TP("steady", 0)])
            got = []
            for i in range(12):
                await p.send_and_wait("steady", b"s%d" % i, partition=0)
                while len(got) <= i:
                    for recs in (await c.getmany(timeout_ms=5000)).values():
                        got += [r.value for r in recs]
            assert got == [b"s%d" % i for i in range(12)]
            (session,) = c._fetcher.sessions.values()
            assert session.full_requests == 1
            assert session.steady_requests >= 8

    asyncio.run(main())
