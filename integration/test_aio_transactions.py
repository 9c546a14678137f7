"""AIOProducer's transactions against real Kafka 4.x, as integration/test_transactions.py runs
the threaded producer's: commit visible and abort invisible to confluent-kafka's read_committed
consumer, offsets sent in a transaction the group's only on commit, a zombie fenced by a newer
instance (at commit, and at its next send)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kclient.aio import AIOProducer
from kclient.errors import ProducerFencedError

from .helpers import new_topic
from .test_transactions import committed_before_a_marker, committed_offsets, confluent_read

pytestmark = pytest.mark.kafka


def _producer(server, tid: str) -> AIOProducer:
    return AIOProducer(
        bootstrap_servers=server.bootstrap, transactional_id=tid, acks="all", linger_ms=2
    )


async def _send(p: AIOProducer, topic: str, tag: str, n: int, partitions: int = 1) -> None:
    futs = [
        await p.enqueue(topic, f"{tag}-{i}".encode(), partition=i % partitions) for i in range(n)
    ]
    await p.flush()
    for f in futs:
        f.result()


def test_commit_is_visible_abort_is_not_to_confluent_read_committed(kafka4):
    topic = new_topic(kafka4, partitions=2)

    async def main() -> None:
        async with _producer(kafka4, f"atx-{uuid.uuid4().hex[:8]}") as p:
            await p.init_transactions()
            await p.begin_transaction()
            await _send(p, topic, "committed", 30, 2)
            await p.commit_transaction()
            await p.begin_transaction()
            await _send(p, topic, "aborted", 20, 2)
            await p.abort_transaction()
            await p.begin_transaction()
            await _send(p, topic, "second", 10, 2)
            await p.commit_transaction()

    asyncio.run(main())
    expected = sorted(
        [f"committed-{i}".encode() for i in range(30)] + [f"second-{i}".encode() for i in range(10)]
    )
    assert sorted(confluent_read(kafka4, topic, "read_committed", expect=40)) == expected
    uncommitted = confluent_read(kafka4, topic, "read_uncommitted", expect=60)
    assert sorted(uncommitted) == sorted(expected + [f"aborted-{i}".encode() for i in range(20)])


def test_send_offsets_visible_only_after_commit(kafka4):
    topic = new_topic(kafka4, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        async with _producer(kafka4, f"atx-{uuid.uuid4().hex[:8]}") as p:
            await p.init_transactions()
            await p.begin_transaction()
            await _send(p, topic, "out", 4, 2)
            await p.send_offsets_to_transaction({(topic, 0): 11, (topic, 1): 7}, group)
            await p.abort_transaction()
            assert await asyncio.to_thread(committed_offsets, kafka4, group, topic, 2) == {
                0: -1001,
                1: -1001,
            }
            await p.begin_transaction()
            await _send(p, topic, "out", 4, 2)
            await p.send_offsets_to_transaction({(topic, 0): 12, (topic, 1): 8}, group)
            await p.commit_transaction()

    asyncio.run(main())
    assert committed_offsets(kafka4, group, topic, 2) == {0: 12, 1: 8}


def test_zombie_is_fenced_and_its_transaction_aborted(kafka4):
    topic = new_topic(kafka4)
    tid = f"atx-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        zombie = _producer(kafka4, tid)
        await zombie.init_transactions()
        await zombie.begin_transaction()
        await _send(zombie, topic, "zombie", 5)
        async with _producer(kafka4, tid) as fresh:
            await fresh.init_transactions()  # fences the zombie, aborts its transaction
            assert fresh.producer_id_and_epoch[1] > zombie.producer_id_and_epoch[1]
            with pytest.raises(ProducerFencedError):
                await zombie.commit_transaction()
            with pytest.raises(ProducerFencedError):  # fatal: every later call raises it
                await zombie.begin_transaction()
            await fresh.begin_transaction()
            await _send(fresh, topic, "fresh", 3)
            await fresh.commit_transaction()
        await zombie.close()

    asyncio.run(main())
    assert sorted(confluent_read(kafka4, topic, "read_committed", expect=3)) == [
        f"fresh-{i}".encode() for i in range(3)
    ]


def test_zombie_send_is_fenced(kafka4):
    topic = new_topic(kafka4)
    tid = f"atx-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        zombie = _producer(kafka4, tid)
        await zombie.init_transactions()
        await zombie.begin_transaction()
        await _send(zombie, topic, "zombie-1", 2)
        async with _producer(kafka4, tid) as fresh:
            await fresh.init_transactions()
            futs = [await zombie.enqueue(topic, b"zombie-2", partition=0)]
            await zombie.flush()
            assert futs[0].exception() is not None
            with pytest.raises(ProducerFencedError):
                await zombie.commit_transaction()
        await zombie.close()

    asyncio.run(main())
    assert committed_before_a_marker(kafka4, topic) == []


def test_transactions_v2_bump_the_epoch_at_every_commit(kafka4):
    """Kafka 4 finalizes transaction.version 2: both producers negotiate it (KIP-890), add
    partitions with Produce v12 instead of AddPartitionsToTxn, and take the epoch EndTxn v5
    bumped for the next transaction; what they commit is read back, what they abort is not."""
    topic = new_topic(kafka4, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def aio() -> list[tuple[int, int]]:
        seen = []
        async with _producer(kafka4, f"atx-{uuid.uuid4().hex[:8]}") as p:
            await p.init_transactions()
            assert p.transaction_version == 2
            for tag, commit in (("a1", True), ("a2", False), ("a3", True)):
                seen.append(p.producer_id_and_epoch)
                await p.begin_transaction()
                await _send(p, topic, tag, 6, 2)
                await p.send_offsets_to_transaction({(topic, 0): len(seen)}, group)
                await p.commit_transaction() if commit else await p.abort_transaction()
            seen.append(p.producer_id_and_epoch)
        return seen

    seen = asyncio.run(aio())
    assert len({pid for pid, _ in seen}) == 1
    assert [e - seen[0][1] for _, e in seen] == [0, 1, 2, 3], seen

    from kclient import Producer, ProducerData

    with Producer(
        {
            "metadata.broker.list": kafka4.bootstrap,
            "producer.type": "async",
            "transactional.id": f"tx-{uuid.uuid4().hex[:8]}",
            "acks": "all",
        }
    ) as p:
        p.init_transactions()
        assert p.transaction_version == 2
        first = p.producer_id_and_epoch
        p.begin_transaction()
        p.send([ProducerData(topic, b"t-%d" % i, partition=i % 2) for i in range(4)])
        p.commit_transaction()
        assert p.producer_id_and_epoch == (first[0], first[1] + 1)
    expected = sorted(
        [f"{t}-{i}".encode() for t in ("a1", "a3") for i in range(6)]
        + [b"t-%d" % i for i in range(4)]
    )
    assert sorted(confluent_read(kafka4, topic, "read_committed", expect=len(expected))) == expected
    assert committed_offsets(kafka4, group, topic, 1) == {0: 3}
