"""Both producers' transactions on the mini-broker with transactions v2 negotiated (its default
``transaction.version`` 2: Produce v12 adds partitions, EndTxn v5 bumps the epoch every time) and
with v1 forced (``transaction.version=1``: AddPartitionsToTxn, one epoch for the producer's
life): the epochs each version promises, a zombie fenced, read_committed output and the group's
offsets exact (Kafka 4.x counterpart: integration/test_aio_transactions.py)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kclient import AIOProducer, Producer, ProducerData
from kclient.broker import MiniBroker
from kclient.errors import ProducerFencedError
from kclient.simple import SimpleConsumer
from tests.needs import need_module

TAGS = (("c1", True), ("ab", False), ("c2", True))


@pytest.fixture(scope="module", params=[2, 1], ids=["tv2", "tv1"])
def broker(request, tmp_path_factory):
    """A mini-broker finalizing ``transaction.version`` 2 (its default) or 1."""
    config = {"group.initial.rebalance.delay.ms": "0", "transaction.version": str(request.param)}
    with MiniBroker(log_dir=tmp_path_factory.mktemp("tv"), config=config) as b:
        b.version = request.param
        yield b


def _read(broker, topic: str, partition: int, isolation: str) -> list[bytes]:
    host, port = broker.bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), so_timeout=10000, isolation_level=isolation) as c:
        return [m.message.value for m in c.iter_messages(topic, partition)]


def _committed(broker, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets, as confluent-kafka reads them."""
    confluent = need_module("confluent_kafka")
    c = confluent.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        tps = c.committed([confluent.TopicPartition(topic, p) for p in (0, 1)], timeout=20)
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}


def _threaded(broker, topic: str, tid: str, group: str) -> list[tuple[int, int]]:
    seen = []
    with Producer(
        {
            "metadata.broker.list": broker.bootstrap,
            "producer.type": "async",
            "transactional.id": tid,
            "request.required.acks": -1,
        }
    ) as p:
        p.init_transactions()
        assert p.transaction_version == broker.version
        for n, (tag, commit) in enumerate(TAGS, 1):
            seen.append(p.producer_id_and_epoch)
            p.begin_transaction()
            p.send([ProducerData(topic, f"{tag}-{i}".encode(), partition=i % 2) for i in range(4)])
            p.send_offsets_to_transaction({(topic, 0): n}, group)
            p.commit_transaction() if commit else p.abort_transaction()
        seen.append(p.producer_id_and_epoch)
    return seen


def _asyncio(broker, topic: str, tid: str, group: str) -> list[tuple[int, int]]:
    async def main() -> list[tuple[int, int]]:
        seen = []
        async with AIOProducer(
            {
                "metadata.broker.list": broker.bootstrap,
                "transactional.id": tid,
                "request.required.acks": -1,
                "queue.buffering.max.ms": 1,
            }
        ) as p:
            await p.init_transactions()
            assert p.transaction_version == broker.version
            for n, (tag, commit) in enumerate(TAGS, 1):
                seen.append(p.producer_id_and_epoch)
                await p.begin_transaction()
                futs = [
                    await p.enqueue(topic, f"{tag}-{i}".encode(), partition=i % 2) for i in range(4)
                ]
                await p.send_offsets_to_transaction({(topic, 0): n}, group)
                await p.commit_transaction() if commit else await p.abort_transaction()
                assert all(f.done() and not f.exception() for f in futs)
            seen.append(p.producer_id_and_epoch)
        return seen

    return asyncio.run(main())


@pytest.mark.parametrize("face", [_threaded, _asyncio], ids=["threaded", "asyncio"])
def test_epochs_read_committed_and_offsets(broker, face):
    """v2: one producer id, the epoch one higher after every commit and abort; v1: the epoch
    InitProducerId gave for the producer's life. Either way read_committed sees exactly the
    committed records and the group the offset of the last commit."""
    topic, group = f"t-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, 2)
    seen = face(broker, topic, f"tx-{uuid.uuid4().hex[:6]}", group)
    assert len({pid for pid, _ in seen}) == 1
    steps = [epoch - seen[0][1] for _, epoch in seen]
    assert steps == ([0, 1, 2, 3] if broker.version == 2 else [0, 0, 0, 0]), seen
    for partition in (0, 1):
        want = [f"{t}-{i}".encode() for t in ("c1", "c2") for i in range(partition, 4, 2)]
        assert _read(broker, topic, partition, "read_committed") == want
        assert len(_read(broker, topic, partition, "read_uncommitted")) == 6
    assert _committed(broker, group, topic) == {0: 3}


def test_a_zombie_is_fenced(broker):
    """A second instance's InitProducerId fences the first: its commit raises
    ProducerFencedError and read_committed never shows what it wrote."""
    topic, tid = f"t-{uuid.uuid4().hex[:6]}", f"tx-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, 1)
    config = {
        "metadata.broker.list": broker.bootstrap,
        "transactional.id": tid,
        "request.required.acks": -1,
    }
    zombie = Producer(config)
    try:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(ProducerData(topic, b"zombie", partition=0))
        with Producer(config) as fresh:
            fresh.init_transactions()
            assert fresh.producer_id_and_epoch[1] > zombie.producer_id_and_epoch[1]
            with pytest.raises(ProducerFencedError):
                zombie.commit_transaction()
            fresh.begin_transaction()
            fresh.send(ProducerData(topic, b"fresh", partition=0))
            fresh.commit_transaction()
    finally:
        zombie.close()
    assert _read(broker, topic, 0, "read_committed") == [b"fresh"]


def test_transactions_v2_on_a_mini_cluster(tmp_path):
    """Three brokers: each partition's leader adds its partition through the transactional
    id's coordinator, wherever that is, and EndTxn v5 writes the bumped epoch's markers to
    every leader; confluent-kafka's read_committed consumer sees the committed records only."""
    from kclient.broker import MiniCluster
    from tests.broker.test_txn_interop import consume_all

    with MiniCluster(
        3, log_dir=tmp_path / "c", config={"group.initial.rebalance.delay.ms": "0"}
    ) as cluster:
        cluster.brokers[0].create_topic("v2c", 6)
        assert len(set(cluster.leaders("v2c").values())) == 3
        with Producer(
            {
                "metadata.broker.list": cluster.bootstrap,
                "producer.type": "async",
                "transactional.id": "v2c-tx",
                "request.required.acks": -1,
            }
        ) as p:
            p.init_transactions()
            assert p.transaction_version == 2
            pid, epoch = p.producer_id_and_epoch
            for tag, commit in TAGS:
                p.begin_transaction()
                p.send([ProducerData("v2c", f"{tag}-{i}".encode(), partition=i) for i in range(6)])
                p.commit_transaction() if commit else p.abort_transaction()
            assert p.producer_id_and_epoch == (pid, epoch + 3)
        got, positions, marks = consume_all(cluster.bootstrap, "v2c", 6, "read_committed", 12)
        assert got == {i: [f"c1-{i}".encode(), f"c2-{i}".encode()] for i in range(6)}
        assert positions == marks  # every marker read past: nothing left open
