"""Share-group scenarios (KIP-932) for kclient's ShareConsumer and AIOShareConsumer, written
once and run against any broker that serves share groups (Kafka 4.x; the mini-broker)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from kclient import AcknowledgeType, Producer, ProducerData, ShareConsumer
from kclient.admin import AdminClient
from kclient.admin.types import AlterConfigOp, ConfigResource, ConfigResourceType
from kclient.aio import AIOShareConsumer
from tests.waiting import wait_until


def new_group(bootstrap: str, **configs: str) -> str:
    """A share group reading from the earliest offset, with ``configs`` (share.* group
    configs: share.record.lock.duration.ms, share.delivery.count.limit, ...)."""
    group = f"share-{uuid.uuid4().hex[:10]}"
    ops = [AlterConfigOp("share.auto.offset.reset", "earliest")]
    ops += [AlterConfigOp(k.replace("_", "."), v) for k, v in configs.items()]
    with AdminClient(bootstrap) as admin:
        admin.incremental_alter_configs({ConfigResource(ConfigResourceType.GROUP, group): ops})
    return group


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    with Producer({"metadata.broker.list": bootstrap, "producer.type": "sync"}) as p:
        batch = [
            ProducerData(topic, f"v{i}".encode(), partition=i % partitions) for i in range(count)
        ]
        for i in range(0, count, 500):
            p.send(batch[i : i + 500])


def conf(bootstrap: str, group: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "group.id": group, **extra}


class Tally:
    """What every consumer accepted, by (partition, offset)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.accepted: Counter[tuple[int, int]] = Counter()
        self.by: Counter[str] = Counter()

    def add(self, who: str, records: list[Any]) -> None:
        with self.lock:
            for r in records:
                self.accepted[(r.partition, r.offset)] += 1
            self.by[who] += len(records)

    def total(self) -> int:
        with self.lock:
            return sum(self.accepted.values())


def run_drain(bootstrap: str, topic: str, count: int, partitions: int) -> Tally:
    """Three members (threaded implicit, threaded explicit, asyncio) drain ``topic``."""
    group = new_group(bootstrap)
    produce(bootstrap, topic, count, partitions)
    tally = Tally()
    stop = threading.Event()

    def threaded(who: str, explicit: bool) -> None:
        mode = "explicit" if explicit else "implicit"
        with ShareConsumer(conf(bootstrap, group, **{"share.acknowledgement.mode": mode})) as c:
            c.subscribe([topic])
            while not stop.is_set():
                records = c.poll(0.5)
                if explicit:
                    for r in records:
                        c.acknowledge(r, AcknowledgeType.ACCEPT)
                    c.commit_sync()
                tally.add(who, records)

    async def aio() -> None:
        async with AIOShareConsumer(conf(bootstrap, group), topic) as c:
            while not stop.is_set():
                tally.add("aio", await c.poll(0.5))

    threads = [
        threading.Thread(target=threaded, args=("implicit", False)),
        threading.Thread(target=threaded, args=("explicit", True)),
        threading.Thread(target=asyncio.run, args=(aio(),)),
    ]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: tally.total() >= count, 60, f"{count} records accepted")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    return tally


def check_drain(tally: Tally, count: int, partitions: int) -> None:
    want = {(i % partitions, i // partitions) for i in range(count)}
    assert set(tally.accepted) == want
    assert max(tally.accepted.values()) == 1, "a record was accepted twice"


def run_release_to_other(bootstrap: str, topic: str) -> tuple[list[Any], list[Any]]:
    """A releases what it got; B, joining later, gets the same records, delivered twice."""
    group = new_group(bootstrap)
    produce(bootstrap, topic, 5, 1)
    explicit = {"share.acknowledgement.mode": "explicit"}
    with ShareConsumer(conf(bootstrap, group, **explicit), topic) as a:
        first: list[Any] = []
        wait_until(lambda: first.extend(a.poll(0.5)) or len(first) >= 5, 30, "A's records")
        for r in first:
            a.acknowledge(r, AcknowledgeType.RELEASE)
        results = a.commit_sync()
        assert all(e is None for e in results.values()), results
        with ShareConsumer(conf(bootstrap, group, **explicit), topic) as b:
            second: list[Any] = []
            wait_until(lambda: second.extend(b.poll(0.5)) or len(second) >= 5, 30, "B's records")
            for r in second:
                b.acknowledge(r, AcknowledgeType.ACCEPT)
            b.commit_sync()
    return first, second


def run_reject_and_limit(bootstrap: str, topic: str) -> list[list[tuple[int, int]]]:
    """Offset 0 rejected, offset 1 released until delivery.count.limit (2): then neither comes
    back; offset 2 accepted on its second delivery.  Returns (offset, count) per poll."""
    group = new_group(bootstrap, **{"share.delivery.count.limit": "2"})
    produce(bootstrap, topic, 3, 1)
    polls: list[list[tuple[int, int]]] = []
    explicit = {"share.acknowledgement.mode": "explicit"}
    with ShareConsumer(conf(bootstrap, group, **explicit), topic) as c:
        for want in (3, 2):
            got = _poll_until(c, want)
            polls.append([(r.offset, r.delivery_count) for r in got])
            for r in got:
                kind = {0: AcknowledgeType.REJECT, 1: AcknowledgeType.RELEASE}.get(r.offset)
                if kind is None:
                    kind = (
                        AcknowledgeType.ACCEPT if r.delivery_count > 1 else AcknowledgeType.RELEASE
                    )
                c.acknowledge(r, kind)
            c.commit_sync()
        later: list[Any] = []
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            later.extend(c.poll(0.3))
        polls.append([(r.offset, r.delivery_count) for r in later])
    return polls


def _poll_until(c: ShareConsumer, want: int) -> list[Any]:
    got: list[Any] = []
    wait_until(lambda: got.extend(c.poll(0.5)) or len(got) >= want, 30, f"{want} records")
    return got


def run_lock_expiry(
    bootstrap: str, topic: str, kill: Callable[[str, str], list[int]]
) -> tuple[list[int], list[Any]]:
    """A member that dies holding records (``kill(group, topic)`` starts it, waits for its
    records, kills it, returns their offsets): another member gets them after the lock expires."""
    group = new_group(bootstrap, **{"share.record.lock.duration.ms": "2000"})
    produce(bootstrap, topic, 4, 1)
    held = kill(group, topic)
    got: list[Any] = []
    with ShareConsumer(conf(bootstrap, group), topic) as c:
        wait_until(
            lambda: got.extend(c.poll(0.5)) or {r.offset for r in got} >= set(held),
            40,
            "the dead member's records",
        )
    return held, got


def produce_one_by_one(bootstrap: str, topic: str, count: int) -> None:
    """``count`` records ``v0``.. into partition 0, each its own batch (so a share fetch of
    ``max.poll.records`` n acquires n records, not one whole batch)."""
    with Producer({"metadata.broker.list": bootstrap, "producer.type": "sync"}) as p:
        for i in range(count):
            p.send([ProducerData(topic, f"v{i}".encode(), partition=0)])


def run_close_releases_fetched_ahead(bootstrap: str, topic: str) -> dict[str, list[Any]]:
    """A (threaded, implicit) and then B (asyncio, explicit) each poll once and close with a
    ShareFetch sent ahead or records it acquired ahead (never returned): C drains the rest.
    Returns each member's records."""
    group = new_group(bootstrap)
    produce_one_by_one(bootstrap, topic, 20)
    small = {"max.poll.records": 4}
    got: dict[str, list[Any]] = {"a": [], "b": [], "c": []}
    with ShareConsumer(conf(bootstrap, group, **small), topic) as a:
        wait_until(lambda: got["a"].extend(a.poll(0.5)) or got["a"], 30, "A's records")
        assert a._ahead is not None, "A sent no fetch ahead"

    async def explicit_one_poll() -> None:
        explicit = {**small, "share.acknowledgement.mode": "explicit"}
        async with AIOShareConsumer(conf(bootstrap, group, **explicit), topic) as b:
            while not got["b"]:
                got["b"] += await b.poll(0.5)
            assert b._ahead is not None or b._state.held(), "B holds no records ahead"
            for r in got["b"]:
                b.acknowledge(r, AcknowledgeType.ACCEPT)

    asyncio.run(asyncio.wait_for(explicit_one_poll(), 30))
    with ShareConsumer(conf(bootstrap, group, **small), topic) as c:
        wait_until(
            lambda: got["c"].extend(c.poll(0.5)) or sum(map(len, got.values())) >= 20,
            30,
            "the rest of the records",
        )
        later = c.poll(0.5)  # nothing comes twice
    got["c"] += later
    return got


def check_fetched_ahead(got: dict[str, list[Any]]) -> None:
    """Every record delivered once in all; the ones a closing member had fetched ahead went
    to the next member.  Kafka 4.4 (and the mini-broker) counts their acquisition: they come
    with ``delivery_count`` 2, or 3 when B, closing, had fetched them ahead again (a fetch
    sent ahead asks for the room left under the records a member may hold); A's with 1."""
    offsets = sorted(r.offset for rs in got.values() for r in rs)
    assert offsets == list(range(20)), {k: [r.offset for r in v] for k, v in got.items()}
    assert {r.delivery_count for r in got["a"]} == {1}
    again = sorted(r.offset for rs in got.values() for r in rs if r.delivery_count >= 2)
    first = max(r.offset for r in got["a"]) + 1
    assert again and again == list(range(first, first + len(again))), again
    assert {r.delivery_count for rs in got.values() for r in rs} <= {1, 2, 3}


def run_hold_bound(bootstrap: str, topic: str) -> dict[str, Any]:
    """One member (threaded implicit, then asyncio explicit with ``commit_sync`` per poll;
    ``max.poll.records`` 5, so it may hold 20 acquired and not handed out) drains 30 records
    of one partition, each its own batch; what it held after each poll and what it got."""
    group = new_group(bootstrap)
    produce_one_by_one(bootstrap, topic, 30)
    small = {"max.poll.records": 5}
    out: dict[str, Any] = {"polls": [], "held": [], "got": [], "results": []}
    with ShareConsumer(conf(bootstrap, group, **small), topic) as a:
        while len(out["got"]) < 15:
            records = a.poll(5)
            out["polls"].append(len(records))
            out["held"].append(a._state.held())
            out["got"] += records

    async def explicit() -> None:
        mode = {**small, "share.acknowledgement.mode": "explicit"}
        async with AIOShareConsumer(conf(bootstrap, group, **mode), topic) as b:
            while len(out["got"]) < 30:
                records = await b.poll(5)
                out["polls"].append(len(records))
                out["held"].append(b._state.held())
                for r in records:
                    b.acknowledge(r)
                out["results"].append(await b.commit_sync())
                out["got"] += records

    asyncio.run(asyncio.wait_for(explicit(), 60))
    return out


def check_hold_bound(out: dict[str, Any]) -> None:
    """No poll hands out more than max.poll.records; the member holds at most 20 (its fetches
    ahead ask for the room left: more than one poll's worth); every record once, at the end
    (A's unreturned ones released at its close, delivered to B again); every commit applied."""
    assert max(out["polls"]) <= 5 and all(out["polls"]), out["polls"]
    assert max(out["held"]) <= 20, out["held"]
    assert max(out["held"][:2]) > 5, out["held"]  # one fetch ahead took more than a poll
    offsets = [r.offset for r in out["got"]]
    assert sorted(offsets) == list(range(30)), offsets
    assert all(set(r.values()) == {None} for r in out["results"] if r), out["results"]


def run_poll_sizes(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """12 records in one record batch, read by a member of one group per
    ``share.acquire.mode`` with ``max.poll.records`` 5: the sizes of its polls."""
    produce(bootstrap, topic, 12, 1)
    sizes: dict[str, list[int]] = {}
    for mode in ("batch_optimized", "record_limit"):
        extra = {"max.poll.records": 5, "share.acquire.mode": mode}
        with ShareConsumer(conf(bootstrap, new_group(bootstrap), **extra), topic) as c:
            sizes[mode] = _poll_sizes(c, 12)
    return sizes


def _poll_sizes(c: ShareConsumer, want: int) -> list[int]:
    """The sizes of the polls that returned records, until ``want`` records came."""
    got: list[int] = []
    wait_until(lambda: got.append(len(c.poll(0.5))) or sum(got) >= want, 30, f"{want} records")
    return [n for n in got if n]


def run_renew(bootstrap: str, topic: str) -> tuple[list[Any], list[Any], list[Any]]:
    """A holds a record past its 2 s lock by renewing it (RENEW, ShareAcknowledge v2) three
    times 1.2 s apart while B polls, then accepts it.  Returns A's commit results (the
    renewals' then the acceptance's) and what B got."""
    group = new_group(bootstrap, **{"share.record.lock.duration.ms": "2000"})
    produce(bootstrap, topic, 1, 1)
    explicit = {"share.acknowledgement.mode": "explicit"}
    results: list[Any] = []
    stolen: list[Any] = []
    with ShareConsumer(conf(bootstrap, group, **explicit), topic) as a:
        held = _poll_until(a, 1)
        with ShareConsumer(conf(bootstrap, group, **explicit), topic) as b:
            for _ in range(3):
                until = time.monotonic() + 1.2
                while time.monotonic() < until:
                    stolen += b.poll(0.3)
                a.acknowledge(held[0], AcknowledgeType.RENEW)
                results.append(a.commit_sync())
            a.acknowledge(held[0], AcknowledgeType.ACCEPT)
            results.append(a.commit_sync())
            stolen += b.poll(0.5)
    return held, results, stolen


def run_commits_behind_fetches(bootstrap: str, topic: str, aio: bool = False) -> dict[str, Any]:
    """An explicit member (``max.poll.records`` 5; ``aio``: an AIOShareConsumer) drains 30
    records of one partition, each its own batch: a ``commit_sync`` after which the next poll
    would leave less than a poll's worth held writes the next fetch carrying its
    acknowledgements (and reads its records), and a commit after a poll that wrote a fetch
    ahead writes its ShareAcknowledge behind that fetch, still in flight.  It releases the
    first delivery of every offset ``% 7 == 3`` and accepts everything else; after its close
    a second member, once assigned, polls.  Returns what was accepted, released, the commit
    results, how many commits had a fetch in flight, how many sent theirs in a fetch, and
    what the second member got."""
    group = new_group(bootstrap)
    produce_one_by_one(bootstrap, topic, 30)
    mode = {"max.poll.records": 5, "share.acknowledgement.mode": "explicit"}
    out: dict[str, Any] = {
        "accepted": [],
        "released": [],
        "results": [],
        "behind": 0,
        "in_fetch": 0,
    }
    if aio:
        asyncio.run(_commits_behind_fetches_aio(conf(bootstrap, group, **mode), topic, out))
    else:
        with ShareConsumer(conf(bootstrap, group, **mode), topic) as a:
            deadline = time.monotonic() + 30
            while len(out["accepted"]) < 30 and time.monotonic() < deadline:
                records = a.poll(1)
                if _settle_releasing_some(a, records, out):
                    ahead, held = a._ahead, a._state.held()
                    out["results"].append(a.commit_sync())
                    _count_behind(out, ahead, held, a._state.held())
    out["later"] = []
    with ShareConsumer(conf(bootstrap, group), topic) as b:
        wait_until(
            lambda: out["later"].extend(r.offset for r in b.poll(0.2)) or b.assignment(),
            30,
            "the second member's assignment",
        )
        out["later"] += [r.offset for r in b.poll(0.3)]
    return out


async def _commits_behind_fetches_aio(config: dict[str, Any], topic: str, out: dict[str, Any]):
    """run_commits_behind_fetches' member, on asyncio."""
    async with AIOShareConsumer(config, topic) as a:
        deadline = time.monotonic() + 30
        while len(out["accepted"]) < 30 and time.monotonic() < deadline:
            records = await a.poll(1)
            if _settle_releasing_some(a, records, out):
                ahead, held = a._ahead, a._state.held()
                out["results"].append(await a.commit_sync())
                _count_behind(out, ahead, held, a._state.held())


def _settle_releasing_some(a: Any, records: list[Any], out: dict[str, Any]) -> bool:
    """Release the first delivery of offsets ``% 7 == 3``, accept the rest; any records?"""
    for r in records:
        release = r.offset % 7 == 3 and r.delivery_count == 1
        a.acknowledge(r, AcknowledgeType.RELEASE if release else AcknowledgeType.ACCEPT)
        out["released" if release else "accepted"].append((r.offset, r.delivery_count))
    return bool(records)


def _count_behind(out: dict[str, Any], before: Any, held: int, held_after: int) -> None:
    """A commit written behind a fetch in flight, or one sent in the next fetch (which
    brought records: no fetch was on the wire before it, and more are held after it)."""
    out["behind"] += before is not None
    out["in_fetch"] += before is None and held_after > held


def check_commits_behind_fetches(out: dict[str, Any]) -> None:
    """Every commit applied; every offset accepted exactly once (the released ones on their
    second delivery); commits did find fetches in flight, and went in fetches; nothing is
    left for the next member (an acknowledgement lost would leave its record acquired by the
    closed session, which releases it)."""
    assert out["behind"] >= 3 and out["in_fetch"] >= 1, out
    assert all(set(r.values()) == {None} for r in out["results"]), out["results"]
    assert sorted(o for o, _ in out["accepted"]) == list(range(30)), out["accepted"]
    again = [3, 10, 17, 24]
    assert sorted(out["released"]) == [(o, 1) for o in again], out["released"]
    assert {o for o, n in out["accepted"] if n == 2} == set(again), out["accepted"]
    assert out["later"] == [], out["later"]
