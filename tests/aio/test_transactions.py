"""AIOProducer's idempotence and transactions on the mini-broker (Kafka 4.x counterparts:
integration/test_aio_kafka.py): commit visible and abort invisible to read_committed readers,
the state machine's refusals, a zombie fenced by a newer instance, offsets sent in a
transaction committed only with it, close aborting an open transaction."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kclient import AIOProducer, Consumer
from kclient.errors import IllegalStateError, ProducerFencedError
from kclient.simple import SimpleConsumer
from kclient.structs import TopicPartition


def _producer(broker, tid: str, **extra) -> AIOProducer:
    return AIOProducer(
        {
            "metadata.broker.list": broker.bootstrap,
            "transactional.id": tid,
            "request.required.acks": -1,
            "queue.buffering.max.ms": 1,
            **extra,
        }
    )


def _read(broker, topic: str, isolation: str, partition: int = 0) -> list[bytes]:
    host, port = broker.bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), so_timeout=10000, isolation_level=isolation) as c:
        return [m.message.value for m in c.iter_messages(topic, partition)]


def _topic(broker, partitions: int = 1) -> str:
    topic = f"t-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, partitions)
    return topic


def test_commit_visible_abort_invisible(mini_broker):
    topic = _topic(mini_broker)

    async def main():
        async with _producer(mini_broker, f"atx-{uuid.uuid4().hex[:6]}") as p:
            await p.init_transactions()
            for tag, commit in (("c1", True), ("ab", False), ("c2", True)):
                await p.begin_transaction()
                futs = [
                    await p.enqueue(topic, f"{tag}-{i}".encode(), partition=0) for i in range(4)
                ]
                await p.commit_transaction() if commit else await p.abort_transaction()
                assert all(f.done() and not f.exception() for f in futs)
            return p.producer_id_and_epoch, p.transaction_version

    (pid, epoch), version = asyncio.run(main())
    assert pid >= 0 and epoch >= 0
    assert version == 2  # the mini-broker finalizes transaction.version 2 (KIP-890)
    want = [f"{t}-{i}".encode() for t in ("c1", "c2") for i in range(4)]
    assert _read(mini_broker, topic, "read_committed") == want
    assert sorted(_read(mini_broker, topic, "read_uncommitted")) == sorted(
        want + [f"ab-{i}".encode() for i in range(4)]
    )


def test_state_machine_refusals(mini_broker):
    async def main():
        async with _producer(mini_broker, f"atx-{uuid.uuid4().hex[:6]}") as p:
            with pytest.raises(IllegalStateError):
                await p.begin_transaction()
            await p.init_transactions()
            with pytest.raises(IllegalStateError):
                await p.send("t", b"x")
            with pytest.raises(IllegalStateError):
                await p.commit_transaction()
            await p.begin_transaction()
            with pytest.raises(IllegalStateError):
                await p.begin_transaction()
            await p.abort_transaction()  # nothing sent: no EndTxn, back to READY
            await p.begin_transaction()
            await p.commit_transaction()
        async with AIOProducer(bootstrap_servers=mini_broker.bootstrap) as plain:
            with pytest.raises(IllegalStateError, match="transactional.id"):
                await plain.init_transactions()

    asyncio.run(main())


def test_zombie_fenced(mini_broker):
    topic = _topic(mini_broker)
    tid = f"atx-{uuid.uuid4().hex[:6]}"

    async def main():
        zombie = _producer(mini_broker, tid)
        await zombie.init_transactions()
        await zombie.begin_transaction()
        await zombie.send(topic, b"zombie", partition=0)
        async with _producer(mini_broker, tid) as fresh:
            await fresh.init_transactions()  # fences the zombie, aborts its transaction
            with pytest.raises(ProducerFencedError):
                await zombie.commit_transaction()
            with pytest.raises(ProducerFencedError):
                await zombie.begin_transaction()
            await fresh.begin_transaction()
            await fresh.send(topic, b"fresh", partition=0)
            await fresh.commit_transaction()
        await zombie.close()

    asyncio.run(main())
    assert _read(mini_broker, topic, "read_committed") == [b"fresh"]


def test_zombie_send_is_fenced_by_the_broker(mini_broker):
    """A zombie that had not sent yet learns of the fencing from its Produce: the send fails
    and the transaction cannot commit."""
    topic = _topic(mini_broker)
    tid = f"atx-{uuid.uuid4().hex[:6]}"

    async def main():
        zombie = _producer(mini_broker, tid)
        await zombie.init_transactions()
        await zombie.begin_transaction()
        await zombie.send(topic, b"first", partition=0)
        async with _producer(mini_broker, tid) as fresh:
            await fresh.init_transactions()
        with pytest.raises(Exception) as info:
            await zombie.send(topic, b"after", partition=0)
        with pytest.raises(ProducerFencedError):
            await zombie.commit_transaction()
        await zombie.close()
        return info.value

    err = asyncio.run(main())
    assert "fenced" in str(err).lower() or "epoch" in str(err).lower(), err
    assert _read(mini_broker, topic, "read_committed") == []


@pytest.mark.parametrize("commit", [True, False])
def test_send_offsets_to_transaction_count_only_on_commit(mini_broker, commit):
    topic = _topic(mini_broker)
    group = f"g-{uuid.uuid4().hex[:6]}"

    async def main():
        async with _producer(mini_broker, f"atx-{uuid.uuid4().hex[:6]}") as p:
            await p.init_transactions()
            await p.begin_transaction()
            await p.send(topic, b"out", partition=0)
            await p.send_offsets_to_transaction({TopicPartition(topic, 0): 42}, group)
            await p.commit_transaction() if commit else await p.abort_transaction()

    asyncio.run(main())
    c = Consumer(bootstrap_servers=mini_broker.bootstrap, group_id=group)
    try:
        committed = c.committed(TopicPartition(topic, 0))
    finally:
        c.close()
    assert committed == (42 if commit else None)


def test_close_aborts_an_open_transaction(mini_broker):
    topic = _topic(mini_broker)

    async def main():
        p = _producer(mini_broker, f"atx-{uuid.uuid4().hex[:6]}")
        await p.init_transactions()
        await p.begin_transaction()
        for i in range(3):
            await p.send(topic, b"v%d" % i, partition=0)
        await p.close()

    asyncio.run(main())
    assert _read(mini_broker, topic, "read_committed") == []
    assert len(_read(mini_broker, topic, "read_uncommitted")) == 3


def test_a_batch_refused_with_invalid_txn_state_only_aborts_the_transaction(mini_broker):
    """INVALID_TXN_STATE on Produce is abortable, as in Java's producer (it was fatal)."""
    from kclient.errors import InvalidTxnStateError, TransactionAbortableError
    from kclient.protocol.apis import PRODUCE

    topic = _topic(mini_broker)

    async def main():
        async with _producer(mini_broker, f"atx-its-{uuid.uuid4().hex[:6]}") as p:
            await p.init_transactions()
            await p.begin_transaction()
            mini_broker.faults.inject(PRODUCE.key, InvalidTxnStateError.errno)
            fut = await p.enqueue(topic, b"refused", partition=0)
            with pytest.raises(InvalidTxnStateError):
                await fut
            with pytest.raises(TransactionAbortableError):
                await p.commit_transaction()
            await p.abort_transaction()
            await p.begin_transaction()
            kept = await p.enqueue(topic, b"kept", partition=0)
            await p.commit_transaction()
            assert kept.done() and not kept.exception()

    asyncio.run(main())
    assert _read(mini_broker, topic, "read_committed") == [b"kept"]


def test_a_busy_or_loading_coordinator_is_waited_for(mini_broker):
    """COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS and NOT_COORDINATOR from the
    coordinator are asked again, as Java's producer does: the transaction commits."""
    from kclient.protocol.apis import END_TXN, INIT_PRODUCER_ID

    topic = _topic(mini_broker)
    faults = mini_broker.faults

    async def main():
        async with _producer(mini_broker, f"atx-busy-{uuid.uuid4().hex[:6]}") as p:
            faults.inject(INIT_PRODUCER_ID.key, 14)
            await p.init_transactions()
            await p.begin_transaction()
            await p.enqueue(topic, b"one", partition=0)
            for code in (14, 51, 16):
                faults.inject(END_TXN.key, code)
            await p.commit_transaction()

    asyncio.run(main())
    assert faults.pending(END_TXN.key) == 0
    assert _read(mini_broker, topic, "read_committed") == [b"one"]
