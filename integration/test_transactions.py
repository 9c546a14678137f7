"""kclient's transactional producer and read_committed consumers against real Kafka 4.x:
committed data is visible to read_committed readers and aborted data is not (kclient's own and
confluent-kafka's), offsets sent in a transaction become the group's only on commit, a zombie
with an older epoch is fenced, a second process can commit a transaction it resumes, and lag
reaches 0 past the markers."""

from __future__ import annotations

import time
import uuid

import pytest

from kclient import Producer, ProducerData
from kclient.errors import IllegalStateError, ProducerFencedError
from kclient.simple import SimpleConsumer
from tests.needs import need_module

from .helpers import leader_address, new_topic

confluent = need_module("confluent_kafka")


def _producer(server, tid: str, mode: str = "async", **extra) -> Producer:
    conf = {
        "metadata.broker.list": server.bootstrap,
        "producer.type": mode,
        "transactional.id": tid,
        "request.required.acks": -1,
        **extra,
    }
    return Producer(conf)


def _values(topic: str, tag: str, n: int, partitions: int = 1) -> list[ProducerData]:
    return [ProducerData(topic, f"{tag}-{i}".encode(), partition=i % partitions) for i in range(n)]


def confluent_read(
    server, topic: str, isolation: str, expect: int | None = None, idle_s: float = 3.0
) -> list[bytes]:
    """Every value of ``topic`` as a confluent-kafka consumer with ``isolation`` reads it."""
    c = confluent.Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": f"cf-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    out: list[bytes] = []
    idle_until = time.monotonic() + 30
    try:
        while time.monotonic() < idle_until:
            msg = c.poll(0.5)
            if msg is None:
                if expect is not None and len(out) >= expect:
                    break
                continue
            if msg.error():
                continue
            out.append(msg.value())
            idle_until = max(idle_until, time.monotonic() + idle_s)
    finally:
        c.close()
    return out


def committed_before_a_marker(server, topic: str) -> list[bytes]:
    """What a read_committed confluent-kafka consumer shows of partition 0 of ``topic`` before a
    plain record written now: that consumer delivers in offset order, so the read ends when the
    marker arrives instead of waiting out an idle bound to prove that nothing comes."""
    marker = f"marker-{uuid.uuid4().hex[:8]}".encode()
    with Producer(
        {
            "metadata.broker.list": server.bootstrap,
            "producer.type": "sync",
            "request.required.acks": -1,
        }
    ) as plain:
        plain.send([ProducerData(topic, marker, partition=0)])
    out = confluent_read(server, topic, "read_committed", expect=1)
    assert marker in out, f"the marker written last was not read: {out!r}"
    return out[: out.index(marker)]


def committed_offsets(server, group: str, topic: str, partitions: int) -> dict[int, int]:
    c = confluent.Consumer({"bootstrap.servers": server.bootstrap, "group.id": group})
    try:
        tps = c.committed(
            [confluent.TopicPartition(topic, p) for p in range(partitions)], timeout=20
        )
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in tps}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_commit_is_visible_abort_is_not_to_confluent_read_committed(kafka4, mode):
    topic = new_topic(kafka4, partitions=2)
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    with _producer(kafka4, tid, mode) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(_values(topic, "committed", 30, 2))
        p.commit_transaction()
        p.begin_transaction()
        p.send(_values(topic, "aborted", 20, 2))
        p.flush()
        p.abort_transaction()
        p.begin_transaction()
        p.send(_values(topic, "second", 10, 2))
        p.commit_transaction()
    expected = sorted(
        [f"committed-{i}".encode() for i in range(30)] + [f"second-{i}".encode() for i in range(10)]
    )
    assert sorted(confluent_read(kafka4, topic, "read_committed", expect=40)) == expected
    uncommitted = confluent_read(kafka4, topic, "read_uncommitted", expect=60)
    assert sorted(uncommitted) == sorted(expected + [f"aborted-{i}".encode() for i in range(20)])


def test_send_offsets_visible_only_after_commit(kafka4):
    topic = new_topic(kafka4, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with _producer(kafka4, f"tx-{uuid.uuid4().hex[:8]}") as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(_values(topic, "out", 4, 2))
        p.send_offsets_to_transaction({(topic, 0): 11, (topic, 1): 7}, group)
        p.abort_transaction()
        assert committed_offsets(kafka4, group, topic, 2) == {0: -1001, 1: -1001}
        p.begin_transaction()
        p.send(_values(topic, "out", 4, 2))
        p.send_offsets_to_transaction({(topic, 0): 12, (topic, 1): 8}, group)
        p.commit_transaction()
    assert committed_offsets(kafka4, group, topic, 2) == {0: 12, 1: 8}


def test_zombie_is_fenced_and_its_transaction_aborted(kafka4):
    topic = new_topic(kafka4)
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    zombie = _producer(kafka4, tid, "sync")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(_values(topic, "zombie", 5))
    with _producer(kafka4, tid, "sync") as fresh:
        fresh.init_transactions()  # fences the zombie, aborts its open transaction
        assert fresh.producer_id_and_epoch[1] > zombie.producer_id_and_epoch[1]
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction()
        with pytest.raises(ProducerFencedError):  # fatal: every later call raises it again
            zombie.begin_transaction()
        fresh.begin_transaction()
        fresh.send(_values(topic, "fresh", 3))
        fresh.commit_transaction()
    zombie.close()
    assert sorted(confluent_read(kafka4, topic, "read_committed", expect=3)) == [
        f"fresh-{i}".encode() for i in range(3)
    ]


def test_zombie_send_is_fenced(kafka4):
    topic = new_topic(kafka4)
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    zombie = _producer(kafka4, tid, "async")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(_values(topic, "zombie-1", 2))
    zombie.flush()
    with _producer(kafka4, tid, "sync") as fresh:
        fresh.init_transactions()
        zombie.send(_values(topic, "zombie-2", 2))
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction()
    try:
        zombie.close()
    except Exception:  # noqa: BLE001 - a fenced zombie's close may fail any way
        pass
    assert committed_before_a_marker(kafka4, topic) == []


def test_another_process_commits_a_resumed_transaction(kafka4):
    topic = new_topic(kafka4, partitions=2)
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    writer = _producer(kafka4, tid)
    writer.init_transactions()
    writer.begin_transaction()
    writer.send(_values(topic, "resumed", 12, 2))
    writer.flush()
    pid, epoch = writer.producer_id_and_epoch
    writer.close(abort_transaction=False)  # leaves the transaction open
    with _producer(kafka4, tid, "sync") as committer:
        committer.resume_transaction(pid, epoch)
        with pytest.raises(IllegalStateError):
            committer.send(ProducerData(topic, b"not allowed"))
        committer.commit_transaction()
    assert sorted(confluent_read(kafka4, topic, "read_committed", expect=12)) == sorted(
        f"resumed-{i}".encode() for i in range(12)
    )


def test_send_outside_a_transaction_is_refused(kafka4):
    topic = new_topic(kafka4)
    with _producer(kafka4, f"tx-{uuid.uuid4().hex[:8]}") as p:
        with pytest.raises(IllegalStateError):
            p.begin_transaction()  # before init_transactions
        p.init_transactions()
        with pytest.raises(IllegalStateError):
            p.send(ProducerData(topic, b"x"))
        with pytest.raises(IllegalStateError):
            p.commit_transaction()


def _simple(kafka4, topic, partition=0, **options) -> SimpleConsumer:
    host, port = leader_address(kafka4, topic, partition)
    return SimpleConsumer(host, port, so_timeout=15000, **options)


def _end_offset(kafka4, topic, partition, isolation="read_uncommitted") -> int:
    with _simple(kafka4, topic, partition, isolation_level=isolation) as c:
        return c.get_offsets_before(topic, partition, -1)[0]


def test_simple_consumer_read_committed(kafka4):
    topic = new_topic(kafka4)
    with _producer(kafka4, f"tx-{uuid.uuid4().hex[:8]}") as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(_values(topic, "c", 10))
        p.commit_transaction()
        p.begin_transaction()
        p.send(_values(topic, "a", 5))
        p.abort_transaction()
        p.begin_transaction()
        p.send(_values(topic, "open", 3))
        p.flush()  # written, not yet committed
        with _simple(kafka4, topic, isolation_level="read_committed") as c:
            assert [m.message.value for m in c.iter_messages(topic, 0)] == [
                f"c-{i}".encode() for i in range(10)
            ]
        with _simple(kafka4, topic) as c:
            assert [m.message.value for m in c.iter_messages(topic, 0)] == [
                f"{t}-{i}".encode() for t, n in (("c", 10), ("a", 5), ("open", 3)) for i in range(n)
            ]
        # offsets 0-9 data, 10 commit marker, 11-15 aborted data, 16 abort marker, 17-19 open
        assert _end_offset(kafka4, topic, 0, "read_committed") == 17  # last stable offset
        assert _end_offset(kafka4, topic, 0) == 20
        p.commit_transaction()
    with _simple(kafka4, topic, isolation_level="read_committed") as c:
        got = list(c.iter_messages(topic, 0))
        assert [m.message.value for m in got] == [f"c-{i}".encode() for i in range(10)] + [
            f"open-{i}".encode() for i in range(3)
        ]
        assert [m.offset for m in got] == list(range(10)) + [17, 18, 19]
        ms = c.fetch((topic, 0, 20, 1 << 20))  # only the last commit marker is there
        assert list(ms) == [] and ms.next_offset == 21


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_group_connector_isolation_and_lag_zero_past_markers(kafka4, isolation):
    from kclient import consumer
    from kclient.errors import ConsumerTimeoutError

    topic = new_topic(kafka4, partitions=2)
    with _producer(kafka4, f"tx-{uuid.uuid4().hex[:8]}") as p:
        p.init_transactions()
        for tag, n, commit in (("c1", 20, True), ("ab", 10, False), ("c2", 6, True)):
            p.begin_transaction()
            p.send(_values(topic, tag, n, 2))
            p.commit_transaction() if commit else p.abort_transaction()
    group = f"g-{uuid.uuid4().hex[:8]}"
    conf = {
        "metadata.broker.list": kafka4.bootstrap,
        "group.id": group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 1500,
        "auto.commit.enable": False,
        "isolation.level": isolation,
    }
    want = [f"c1-{i}" for i in range(20)] + [f"c2-{i}" for i in range(6)]
    if isolation == "read_uncommitted":
        want += [f"ab-{i}" for i in range(10)]
    got: list[str] = []
    with consumer.create(conf) as c:
        (stream,) = c.create_message_streams({topic: 1})[topic]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                for m in stream:
                    got.append(m.message.decode())
            except ConsumerTimeoutError:
                if len(got) >= len(want):
                    break
        c.commit_offsets()
    assert sorted(got) == sorted(want)
    committed = committed_offsets(kafka4, group, topic, 2)
    ends = {part: _end_offset(kafka4, topic, part) for part in range(2)}
    assert committed == ends  # lag 0: the position passed every marker


def test_java_console_consumer_read_committed_reads_kclient_transactions(kafka4):
    from .helpers import java_consume

    topic = new_topic(kafka4)
    with _producer(kafka4, f"tx-{uuid.uuid4().hex[:8]}") as p:
        p.init_transactions()
        for tag, commit in (("c1", True), ("ab", False), ("c2", True)):
            p.begin_transaction()
            p.send([ProducerData(topic, f"{tag}-{i}".encode(), key=b"k") for i in range(5)])
            p.commit_transaction() if commit else p.abort_transaction()
    lines = java_consume(
        kafka4, topic, 10, "--command-property", "isolation.level=read_committed", timeout_ms=20000
    )
    assert lines == [f"k\t{t}-{i}" for t in ("c1", "c2") for i in range(5)]


def test_zookeeper_connector_read_committed_on_kafka3(kafka3_cluster):
    """The ZooKeeper-coordinated mode (Kafka 3.x in ZooKeeper mode) with isolation.level."""
    from kclient import consumer
    from kclient.errors import ConsumerTimeoutError

    topic = new_topic(kafka3_cluster, partitions=2)
    with _producer(kafka3_cluster, f"tx-{uuid.uuid4().hex[:8]}") as p:
        p.init_transactions()
        for tag, commit in (("c1", True), ("ab", False), ("c2", True)):
            p.begin_transaction()
            p.send(_values(topic, tag, 8, 2))
            p.commit_transaction() if commit else p.abort_transaction()
    group = f"zk-{uuid.uuid4().hex[:8]}"
    conf = {
        "zookeeper.connect": kafka3_cluster.zookeeper_connect,
        "group.id": group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 1500,
        "auto.commit.enable": False,
        "offsets.storage": "zookeeper",
        "isolation.level": "read_committed",
    }
    got: list[bytes] = []
    with consumer.create(conf) as c:
        (stream,) = c.create_message_streams({topic: 1})[topic]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                for m in stream:
                    got.append(m.message)
            except ConsumerTimeoutError:
                if len(got) >= 16:
                    break
        c.commit_offsets()
    assert sorted(got) == sorted(f"{t}-{i}".encode() for t in ("c1", "c2") for i in range(8))
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=kafka3_cluster.zookeeper_connect)
    zk.start()
    try:
        in_zk = {p: int(zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0]) for p in range(2)}
    finally:
        zk.stop()
        zk.close()
    ends = {}
    for part in range(2):
        with _simple(kafka3_cluster, topic, part) as s:
            ends[part] = s.get_offsets_before(topic, part, -1)[0]
    assert in_zk == ends  # lag 0 past the markers


def test_consume_transform_produce_exactly_once_across_kill_9(kafka4):
    """A worker reading A in a group and writing B transactionally, killed with -9 five times
    at random points and restarted with the same transactional.id: a read_committed reader of
    B sees every input exactly once, in order (tests/producer/txn_worker.py)."""
    from tests.producer.test_transactions import consume_transform_produce_chaos

    source, sink = new_topic(kafka4), new_topic(kafka4)
    host, port = leader_address(kafka4, source, 0)  # one node: it leads both
    consume_transform_produce_chaos(kafka4.bootstrap, source, sink, host, port)


def test_spark_reader_read_committed_plans_to_the_last_stable_offset(kafka4):
    """kclient's Spark source tasks (no Spark): with kafka.isolation.level=read_committed the
    planned end is the last stable offset, before a transaction still open."""
    from tests.spark.test_read_task import _transactions, read_values

    topic = new_topic(kafka4)
    p = _transactions(kafka4.bootstrap, topic, open_one=True)
    try:
        values, plan = read_values(kafka4.bootstrap, topic, "read_committed")
        assert values == [b"c%d" % i for i in range(5)] + [b"d%d" % i for i in range(5)]
        assert plan == [(0, 18)]  # the open transaction starts at 18
        values, plan = read_values(kafka4.bootstrap, topic, "read_uncommitted")
        assert len(values) == 18 and plan == [(0, 21)]
    finally:
        p.close()  # aborts the open transaction


def test_group_connector_offsets_committed_in_a_transaction(kafka4):
    """consumed_offsets() and group_metadata() of a broker-coordinated connector go into
    send_offsets_to_transaction: committed only with the transaction (generation checked)."""
    from tests.producer.test_transactions import group_transform

    group_transform(
        kafka4.bootstrap, new_topic(kafka4), new_topic(kafka4), f"gt-{uuid.uuid4().hex[:8]}"
    )


def test_stale_generation_offsets_are_refused_and_abortable(kafka4):
    """TxnOffsetCommit with a generation the group has moved past fails (ILLEGAL_GENERATION);
    the transaction is abortable: commit raises, abort works, the next one commits."""
    from kclient import consumer
    from kclient.errors import ConsumerTimeoutError, IllegalGenerationError
    from kclient.protocol.error_codes import TransactionAbortableError

    source, sink = new_topic(kafka4), new_topic(kafka4)
    with Producer({"metadata.broker.list": kafka4.bootstrap, "producer.type": "sync"}) as plain:
        plain.send([ProducerData(source, b"s%d" % i, partition=0) for i in range(5)])
    conf = {
        "metadata.broker.list": kafka4.bootstrap,
        "group.id": f"sg-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 1000,
        "auto.commit.enable": False,
    }
    with consumer.create(conf) as c, _producer(kafka4, f"tx-{uuid.uuid4().hex[:8]}") as p:
        (stream,) = c.create_message_streams({source: 1})[source]
        try:
            for _ in stream:
                pass
        except ConsumerTimeoutError:
            pass
        meta = c.group_metadata()
        assert meta.generation_id >= 1 and meta.member_id
        stale = meta._replace(generation_id=meta.generation_id + 7)
        p.init_transactions()
        p.begin_transaction()
        p.send(ProducerData(sink, b"lost", partition=0))
        with pytest.raises(IllegalGenerationError):
            p.send_offsets_to_transaction(c.consumed_offsets(), stale)
        with pytest.raises(TransactionAbortableError):
            p.commit_transaction()
        p.abort_transaction()
        p.begin_transaction()
        p.send(ProducerData(sink, b"kept", partition=0))
        p.send_offsets_to_transaction(c.consumed_offsets(), meta)
        p.commit_transaction()
    assert confluent_read(kafka4, sink, "read_committed", expect=1) == [b"kept"]
    assert committed_offsets(kafka4, conf["group.id"], source, 1) == {0: 5}
