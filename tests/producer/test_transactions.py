"""The transactional producer against the mini-broker's transaction coordinator: commit visible
and abort invisible to a read_committed SimpleConsumer, the state machine's refusals, fencing
(real-Kafka counterparts: integration/test_transactions.py)."""

from __future__ import annotations

import time
import uuid

import pytest

from kclient import Producer, ProducerData
from kclient.errors import IllegalStateError, ProducerFencedError
from kclient.producer.transactions import fenced, is_abortable
from kclient.protocol.error_codes import (
    InvalidProducerEpochError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from kclient.simple import SimpleConsumer


def _producer(broker, tid, mode="sync"):
    return Producer(
        {
            "metadata.broker.list": broker.bootstrap,
            "producer.type": mode,
            "transactional.id": tid,
            "request.required.acks": -1,
        }
    )


def _read(broker, topic, isolation):
    host, port = broker.bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), so_timeout=10000, isolation_level=isolation) as c:
        return [m.message.value for m in c.iter_messages(topic, 0)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_commit_visible_abort_invisible(mini_broker, mode):
    topic = f"t-{uuid.uuid4().hex[:6]}"
    with _producer(mini_broker, f"tx-{mode}", mode) as p:
        p.init_transactions()
        for tag, commit in (("c1", True), ("ab", False), ("c2", True)):
            p.begin_transaction()
            p.send([ProducerData(topic, f"{tag}-{i}".encode(), partition=0) for i in range(4)])
            p.commit_transaction() if commit else p.abort_transaction()
    want = [f"{t}-{i}".encode() for t in ("c1", "c2") for i in range(4)]
    assert _read(mini_broker, topic, "read_committed") == want
    assert sorted(_read(mini_broker, topic, "read_uncommitted")) == sorted(
        want + [f"ab-{i}".encode() for i in range(4)]
    )


def test_state_machine_refusals(mini_broker):
    with _producer(mini_broker, "tx-states") as p:
        with pytest.raises(IllegalStateError):
            p.begin_transaction()
        p.init_transactions()
        with pytest.raises(IllegalStateError):
            p.send(ProducerData("t", b"x"))
        with pytest.raises(IllegalStateError):
            p.commit_transaction()
        p.begin_transaction()
        with pytest.raises(IllegalStateError):
            p.begin_transaction()
        p.abort_transaction()  # nothing sent: no EndTxn, back to READY
        p.begin_transaction()
        p.commit_transaction()


def test_no_transactions_without_transactional_id(mini_broker):
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        with pytest.raises(IllegalStateError, match="transactional.id"):
            p.init_transactions()


def test_zombie_fenced(mini_broker):
    topic = f"t-{uuid.uuid4().hex[:6]}"
    zombie = _producer(mini_broker, "tx-zombie")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(ProducerData(topic, b"zombie", partition=0))
    with _producer(mini_broker, "tx-zombie") as fresh:
        fresh.init_transactions()
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction()
        with pytest.raises(ProducerFencedError):
            zombie.begin_transaction()
    zombie.close()
    assert _read(mini_broker, topic, "read_committed") == []


def test_error_classes():
    assert isinstance(fenced(InvalidProducerEpochError("x")), ProducerFencedError)
    assert is_abortable(TopicAuthorizationFailedError("t"))
    assert is_abortable(TimeoutError("a batch timed out"))
    assert not is_abortable(ProducerFencedError("f"))
    assert not is_abortable(TransactionalIdAuthorizationFailedError("t"))


def _ends(broker, topic):
    """(last stable offset, high watermark) as a read_committed fetch reports them."""
    host, port = broker.bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), isolation_level="read_committed") as c:
        ms = c.fetch((topic, 0, 0, 1 << 16))
        return [ms.last_stable_offset, ms.high_watermark]


@pytest.mark.parametrize("abort", [True, False])
def test_close_aborts_an_open_transaction_unless_told_not_to(mini_broker, abort):
    topic = f"t-{uuid.uuid4().hex[:6]}"
    p = _producer(mini_broker, f"tx-close-{abort}", "async")
    p.init_transactions()
    p.begin_transaction()
    p.send([ProducerData(topic, b"v%d" % i, partition=0) for i in range(3)])
    p.flush()
    p.close(abort_transaction=abort)
    # aborted: an abort marker at 3, stable to the end; left open: stable offset stays at 0
    assert _ends(mini_broker, topic) == ([4, 4] if abort else [0, 3])


def consume_transform_produce_chaos(
    bootstrap: str, source: str, sink: str, host: str, port: int, n: int = 3000, kills: int = 5
) -> None:
    """Run tests/producer/txn_worker.py from ``source`` to ``sink``, kill it with -9 ``kills``
    times at random points, let a last run finish; the sink must hold, read_committed, every
    input exactly once and in order, and (read_uncommitted) the killed runs' aborted data.  A
    zombie holding the id's previous epoch, with a transaction open, is fenced by the last run
    and its record is not visible."""
    import random
    import subprocess
    import sys
    import time
    from pathlib import Path

    with Producer({"metadata.broker.list": bootstrap, "producer.type": "async"}) as p:
        p.send([ProducerData(source, b"m%05d" % i, partition=0) for i in range(n)])
    tid, group = f"ctp-{uuid.uuid4().hex[:8]}", f"ctp-{uuid.uuid4().hex[:8]}"
    cmd = [
        sys.executable,
        "-m",
        "tests.producer.txn_worker",
        bootstrap,
        host,
        str(port),
        source,
        sink,
        group,
        tid,
        "10",
        "0.02",
    ]
    root = Path(__file__).resolve().parents[2]
    rng = random.Random(12)
    hit = 0
    for _ in range(kills):
        proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.2, 1.5))
        if proc.poll() is None:
            proc.kill()  # SIGKILL: no close, no abort
            hit += 1
        proc.wait()
    zombie = Producer(
        {"metadata.broker.list": bootstrap, "transactional.id": tid, "request.required.acks": -1}
    )
    zombie.init_transactions()  # a process with the id and the epoch before the last
    zombie.begin_transaction()
    zombie.send(ProducerData(sink, b"ZOMBIE", partition=0))
    final = subprocess.run(cmd, cwd=root, capture_output=True, timeout=300)
    assert final.returncode == 0 and b"done" in final.stdout, final.stderr[-2000:]
    assert hit == kills  # every kill hit the worker mid-run
    with pytest.raises(ProducerFencedError):  # the last run fenced the zombie's epoch
        zombie.commit_transaction()
    zombie.close()
    for isolation in ("read_committed", "read_uncommitted"):
        with SimpleConsumer(host, int(port), so_timeout=15000, isolation_level=isolation) as c:
            got = [m.message.value for m in c.iter_messages(sink, 0)]
        if isolation == "read_committed":
            assert got == [b"M%05d" % i for i in range(n)]
        else:
            assert len(got) > n, "no killed run left aborted data: the test proved nothing"


def test_consume_transform_produce_exactly_once_across_kill_9(mini_broker):
    host, port = mini_broker.bootstrap.rsplit(":", 1)
    consume_transform_produce_chaos(mini_broker.bootstrap, "ctp-in", "ctp-out", host, int(port))


def group_transform(bootstrap: str, source: str, sink: str, group: str, n: int = 40) -> None:
    """A group ConsumerConnector reads ``source`` (n messages, written here); a transactional
    producer writes them upper-cased to ``sink`` and commits the connector's consumed offsets
    with its group metadata in the same transaction; a first transaction is aborted.  After the
    commit the group's committed offset is the source's end, and read_committed ``sink`` holds
    every message once."""
    from kclient import consumer
    from kclient.errors import ConsumerTimeoutError

    with Producer({"metadata.broker.list": bootstrap, "producer.type": "sync"}) as plain:
        plain.send([ProducerData(source, b"g%03d" % i, partition=0) for i in range(n)])
    conf = {
        "metadata.broker.list": bootstrap,
        "group.id": group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 1000,
        "auto.commit.enable": False,
    }
    p = Producer(
        {
            "metadata.broker.list": bootstrap,
            "producer.type": "async",
            "transactional.id": f"gt-{group}",
            "request.required.acks": -1,
        }
    )
    with p, consumer.create(conf) as c:
        (stream,) = c.create_message_streams({source: 1})[source]
        got = []
        try:
            for m in stream:
                got.append(m.message)
                if len(got) == n:
                    break
        except ConsumerTimeoutError:
            pass
        assert len(got) == n
        meta = c.group_metadata()
        assert meta.group_id == group
        p.init_transactions()
        p.begin_transaction()  # aborted: offsets not committed
        p.send([ProducerData(sink, v.upper(), partition=0) for v in got])
        p.send_offsets_to_transaction(c.consumed_offsets(), meta)
        p.abort_transaction()
        assert c.offset_store is not None
        assert c.offset_store.fetch([(source, 0)]) == {(source, 0): -1}
        p.begin_transaction()
        p.send([ProducerData(sink, v.upper(), partition=0) for v in got])
        p.send_offsets_to_transaction(c.consumed_offsets(), meta)
        p.commit_transaction()
        # Kafka writes the commit marker to __consumer_offsets after EndTxn answers: the
        # offset shows a moment later (-1 read at once in a full run)
        deadline = time.monotonic() + 10
        while (
            c.offset_store.fetch([(source, 0)]) != {(source, 0): n} and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert c.offset_store.fetch([(source, 0)]) == {(source, 0): n}
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with SimpleConsumer(host, int(port), isolation_level="read_committed") as s:
        assert [m.message.value for m in s.iter_messages(sink, 0)] == [
            b"G%03d" % i for i in range(n)
        ]


def test_group_connector_offsets_committed_in_a_transaction(mini_broker):
    group_transform(mini_broker.bootstrap, "gt-in", "gt-out", "gt-group")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_batch_refused_with_invalid_txn_state_only_aborts_the_transaction(mini_broker, mode):
    """INVALID_TXN_STATE on Produce (a leader's verdict when the coordinator lost or ended the
    transaction, as across its restart) is abortable, as in Java's producer: the application
    aborts and goes on with the same producer (it was fatal: abort_transaction raised it)."""
    from kclient.errors import InvalidTxnStateError, KafkaError, TransactionAbortableError
    from kclient.protocol.apis import PRODUCE

    topic = f"t-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, 1)
    with _producer(mini_broker, f"tx-its-{mode}-{uuid.uuid4().hex[:4]}", mode) as p:
        p.init_transactions()
        p.begin_transaction()
        mini_broker.faults.inject(PRODUCE.key, InvalidTxnStateError.errno)
        with pytest.raises(KafkaError):
            p.send(ProducerData(topic, b"refused", partition=0))
            p.commit_transaction()
        with pytest.raises(TransactionAbortableError):
            p.commit_transaction()
        p.abort_transaction()
        p.begin_transaction()
        p.send(ProducerData(topic, b"kept", partition=0))
        p.commit_transaction()
    assert _read(mini_broker, topic, "read_committed") == [b"kept"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_busy_or_loading_coordinator_is_waited_for(mini_broker, mode):
    """A coordinator that is loading its state (COORDINATOR_LOAD_IN_PROGRESS, just after its
    restart), still writing the last transaction's markers (CONCURRENT_TRANSACTIONS) or moved
    (NOT_COORDINATOR) is asked again, as Java's producer does: the transaction commits."""
    from kclient.protocol.apis import END_TXN, INIT_PRODUCER_ID

    topic = f"t-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, 1)
    faults = mini_broker.faults
    with _producer(mini_broker, f"tx-busy-{mode}-{uuid.uuid4().hex[:4]}", mode) as p:
        faults.inject(INIT_PRODUCER_ID.key, 14)  # COORDINATOR_LOAD_IN_PROGRESS
        p.init_transactions()
        p.begin_transaction()
        p.send(ProducerData(topic, b"one", partition=0))
        for code in (14, 51, 16):  # ... CONCURRENT_TRANSACTIONS, NOT_COORDINATOR
            faults.inject(END_TXN.key, code)
        p.commit_transaction()
        assert faults.pending(END_TXN.key) == 0
    assert _read(mini_broker, topic, "read_committed") == [b"one"]


def test_a_transaction_open_across_a_cluster_restart_commits(tmp_path):
    """The whole cluster restarted mid-transaction (the chaos harness's fault): the coordinator
    reloads the open transaction and the producer commits it, or, if a batch was refused,
    aborts and goes on; it does not become fatal."""
    from kclient.broker import MiniCluster

    with MiniCluster(1, log_dir=tmp_path) as cluster:
        cluster.create_topic("t", 1)
        boot = cluster.broker(0).bootstrap
        with _producer(cluster.broker(0), "tx-restart", "async") as p:
            p.init_transactions()
            p.begin_transaction()
            p.send(ProducerData("t", b"before", partition=0))
            p.flush()
            cluster.stop_broker(0)
            cluster.start_broker(0)
            p.send(ProducerData("t", b"after", partition=0))
            p.commit_transaction()
            p.begin_transaction()
            p.send(ProducerData("t", b"next", partition=0))
            p.commit_transaction()
        host, port = boot.rsplit(":", 1)
        with SimpleConsumer(
            host, int(port), so_timeout=10000, isolation_level="read_committed"
        ) as c:
            assert [m.message.value for m in c.iter_messages("t", 0)] == [
                b"before",
                b"after",
                b"next",
            ]
