"""The idempotent producer (enable.idempotence) under faults: lost acks, connections dropped
mid-request, NOT_LEADER answers and a broker killed with -9 and restarted, with 5 requests in
flight. The log must hold every message exactly once, in send order.  The fault tests run the
threaded Producer and AIOProducer (``driver``): both keep the core's idempotent state."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kclient.aio import AIOProducer
from kclient.errors import FailedToSendMessageError, InvalidConfigError
from kclient.producer import Producer, ProducerData
from kclient.protocol.records import iter_batches
from kclient.testing import free_port
from tests.waiting import wait_until

from .conftest import read_partition

PRODUCE = 0
NOT_LEADER = 6
OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID = 45, 46, 59


def _cfg(bootstrap: str, mode: str = "async", **extra) -> dict:
    cfg = {
        "metadata.broker.list": bootstrap,
        "producer.type": mode,
        "enable.idempotence": True,
        "acks": "all",
        "retry.backoff.ms": 10,
        "queue.buffering.max.ms": 1,
        "batch.num.messages": 25,
        "max.in.flight.requests.per.connection": 5,
        "message.send.max.retries": 1000,
    }
    cfg.update(extra)
    return cfg


def _values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(n)]


@pytest.mark.parametrize(
    "bad,key",
    [
        ({"acks": 1}, "request.required.acks"),
        ({"acks": 0}, "request.required.acks"),
        ({"retries": 0}, "message.send.max.retries"),
        ({"max.in.flight.requests.per.connection": 6}, "max.in.flight.requests.per.connection"),
    ],
)
def test_invalid_combinations_are_config_errors(bad, key):
    cfg = {"metadata.broker.list": "127.0.0.1:9", "enable.idempotence": True, "acks": "all", **bad}
    with pytest.raises(InvalidConfigError, match="enable.idempotence") as info:
        Producer(cfg)
    assert info.value.key == key


def test_default_is_off_and_batches_carry_no_producer_id(mini_broker):
    mini_broker.create_topic("plain", 1)
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        p.send([ProducerData("plain", v) for v in _values("p", 10)])
    log, _ = mini_broker.partition_log("plain", 0)
    assert log is not None and log.producer_state.producers == {}


@pytest.mark.parametrize("mode", ["sync", "async", "asyncio"])
def test_batches_carry_producer_id_epoch_and_sequences(mini_broker, mode):
    mini_broker.create_topic("seq", 2)
    if mode == "asyncio":

        async def main():
            async with AIOProducer(_cfg(mini_broker.bootstrap, "async")) as p:
                for i in range(200):
                    await p.enqueue("seq", b"v%d" % i, key=b"k%d" % (i % 7))

        asyncio.run(main())
    else:
        with Producer(_cfg(mini_broker.bootstrap, mode)) as p:
            for i in range(200):
                p.send(ProducerData("seq", b"v%d" % i, key=b"k%d" % (i % 7)))
    for partition in (0, 1):
        log, _ = mini_broker.partition_log("seq", partition)
        data = b"".join(seg.read_entry(info) for seg in log.segments for info in seg.entries())
        batches = list(iter_batches(data))
        assert {b.producer_id for b in batches} == {batches[0].producer_id} != {-1}
        expected = 0
        for b in batches:
            assert (b.producer_epoch, b.base_sequence) == (0, expected)
            expected += b.record_count


DRIVERS = ["threaded", "asyncio"]


def _produce_with(
    mini_broker, topic: str, values: list[bytes], arm, driver: str = "threaded", **extra
) -> list[BaseException | None]:
    """Send ``values`` in chunks from an idempotent producer (the threaded async one, or
    AIOProducer), calling ``arm(i)`` before chunk ``i``; returns each message's error (None:
    acknowledged)."""
    cfg = _cfg(mini_broker.bootstrap, **extra)
    if driver == "asyncio":
        return asyncio.run(_aio_produce_with(cfg, topic, values, arm))
    reports: list = []
    with Producer(cfg, on_report=reports.append) as p:
        for i in range(0, len(values), 50):
            arm(i // 50)
            p.send([ProducerData(topic, v, partition=0) for v in values[i : i + 50]])
            time.sleep(0.002)
        p.flush()
    return [r.error for r in reports for _ in range(len(r))]


async def _aio_produce_with(
    cfg: dict, topic: str, values: list[bytes], arm
) -> list[BaseException | None]:
    cfg = {k: v for k, v in cfg.items() if k != "producer.type"}
    futs = []
    async with AIOProducer(cfg) as p:
        for i in range(0, len(values), 50):
            await asyncio.to_thread(arm, i // 50)
            futs += [await p.enqueue(topic, v, partition=0) for v in values[i : i + 50]]
            await asyncio.sleep(0.002)
        await p.flush()
    return [f.exception() for f in futs]


@pytest.mark.parametrize("driver", DRIVERS)
def test_faults_with_five_in_flight_keep_every_message_once_in_order(mini_broker, driver):
    topic = "idem-faults"
    mini_broker.create_topic(topic, 1)
    values = _values("f", 3000)
    faults = mini_broker.faults

    def arm(i: int) -> None:
        kind = i % 4
        if kind == 0:
            faults.lose_response(PRODUCE, count=2)  # written, ack lost
        elif kind == 1:
            faults.drop_connection(PRODUCE, count=1)  # disconnect mid-request
        elif kind == 2:
            faults.inject(PRODUCE, error=NOT_LEADER, count=2)

    errors = _produce_with(mini_broker, topic, values, arm, driver)
    fired = {kind for _, kind in faults.fired}
    assert fired >= {"lose", "drop", "error"}, fired
    assert errors == [None] * len(values), [e for e in errors if e][:3]
    stored = [bytes(r.value) for r in read_partition(mini_broker.bootstrap, topic, 0)]
    assert stored == values


def _wait_stored(mini_broker, topic: str, n: int) -> None:
    wait_until(
        lambda: len(read_partition(mini_broker.bootstrap, topic, 0)) >= n,
        10,
        f"{n} records stored in {topic}",
    )


def _epochs(mini_broker, topic: str) -> list[int]:
    log, _ = mini_broker.partition_log(topic, 0)
    data = b"".join(seg.read_entry(info) for seg in log.segments for info in seg.entries())
    return [b.producer_epoch for b in iter_batches(data)]


@pytest.mark.parametrize("driver", DRIVERS)
def test_kip360_errors_bump_the_epoch_and_lose_nothing(mini_broker, driver):
    """OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID (answered without writing; the
    requests behind get real sequence gaps): the producer bumps its epoch, restarts sequences
    and resends, in order, losing nothing."""
    topic = "idem-kip360"
    mini_broker.create_topic(topic, 1)
    values = _values("e", 2400)
    faults = mini_broker.faults

    def arm(i: int) -> None:
        if i == 1:  # the broker knows the producer first (a real one accepts an unknown
            _wait_stored(mini_broker, topic, 1)  # producer's batch at any sequence)
        elif i >= 4 and i % 4 == 0:
            faults.inject(PRODUCE, error=OUT_OF_ORDER_SEQUENCE_NUMBER, count=1)
        elif i >= 4 and i % 4 == 2:
            faults.inject(PRODUCE, error=UNKNOWN_PRODUCER_ID, count=1)

    errors = _produce_with(mini_broker, topic, values, arm, driver)
    assert len(faults.fired) >= 20
    assert errors == [None] * len(values), [e for e in errors if e][:3]
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, topic, 0)] == values
    epochs = _epochs(mini_broker, topic)
    assert epochs == sorted(epochs) and epochs[-1] >= 10, epochs


@pytest.mark.parametrize("driver", DRIVERS)
def test_duplicate_sequence_number_counts_as_sent(mini_broker, driver):
    """A written batch whose acknowledgement was lost, retried and answered
    DUPLICATE_SEQUENCE_NUMBER (older brokers' answer): delivered, not written again."""
    topic = "idem-dup"
    mini_broker.create_topic(topic, 1)
    values = _values("d", 600)

    def arm(i: int) -> None:
        if i in (2, 6):
            _wait_stored(mini_broker, topic, 50 * i)  # nothing else in flight
            mini_broker.faults.lose_response(PRODUCE, count=1)  # written, ack lost
            mini_broker.faults.inject(PRODUCE, error=DUPLICATE_SEQUENCE_NUMBER, count=1)

    errors = _produce_with(mini_broker, topic, values, arm, driver)
    assert [kind for _, kind in mini_broker.faults.fired] == ["lose", "error"] * 2
    assert errors == [None] * len(values), [e for e in errors if e][:3]
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, topic, 0)] == values
    assert set(_epochs(mini_broker, topic)) == {0}


@pytest.mark.parametrize("driver", DRIVERS)
def test_without_idempotence_lost_acks_duplicate(mini_broker, driver):
    """The same lost acknowledgements without idempotence write messages twice: what the test
    above guards against."""
    topic = "plain-faults"
    mini_broker.create_topic(topic, 1)
    values = _values("d", 500)

    def arm(i: int) -> None:
        if i % 2 == 0:
            mini_broker.faults.lose_response(PRODUCE, count=1)

    _produce_with(
        mini_broker,
        topic,
        values,
        arm,
        driver,
        **{"enable.idempotence": False, "max.in.flight.requests.per.connection": 1},
    )
    stored = [bytes(r.value) for r in read_partition(mini_broker.bootstrap, topic, 0)]
    assert len(stored) > len(values) and set(stored) == set(values)


def test_broker_killed_and_restarted(tmp_path):
    """kill -9 while 5 requests are in flight, restart on the same log directory: the producer
    state comes back from the log and the retried batches are recognised."""
    from tests.broker.test_server_crash import BrokerProcess

    broker = BrokerProcess(tmp_path / "logs", free_port())
    broker.start()
    values = _values("k", 6000)
    reports: list = []
    try:
        from kclient.broker.server import MiniBroker  # noqa: F401 - same code as the process

        with Producer(
            _cfg(broker.bootstrap, **{"retry.backoff.ms": 100, "delivery.timeout.ms": 120000}),
            on_report=reports.append,
        ) as p:
            p.send([ProducerData("crash", v, partition=0) for v in values[:100]])
            p.flush()

            acked = len(reports)

            def kill_and_restart() -> None:  # mid-stream: after more batches were acknowledged
                wait_until(lambda: len(reports) > acked + 2, 30, "batches acknowledged")
                broker.kill9()
                wait_until(lambda: p.metrics()["retries"] > 0, 30, "retries while it is down")
                broker.start()

            killer = threading.Thread(target=kill_and_restart)
            killer.start()
            for i in range(100, len(values), 50):
                p.send([ProducerData("crash", v, partition=0) for v in values[i : i + 50]])
                time.sleep(0.002)
            killer.join()
            p.flush()
        assert all(r.error is None for r in reports), [r.error for r in reports if r.error][:3]
        stored = [bytes(r.value) for r in read_partition(broker.bootstrap, "crash", 0)]
        assert stored == values
    finally:
        broker.cleanup()


def test_batches_without_a_leader_wait_out_the_retry_backoff(tmp_path):
    """An idempotent Producer whose partition has no leader (its broker away) retries the
    partition's first batch every retry.backoff.ms: the batches held behind it (due at once)
    sent it again at once, a busy loop that counted about a thousand attempts in 1.5 s (16,957
    in a minute during the Kafka chaos run's whole-cluster restart, issue 25)."""
    import re

    from kclient.broker import MiniCluster

    with MiniCluster(2, log_dir=tmp_path) as cluster:
        cluster.create_topic("t", 2)
        away = cluster.leaders("t")[1]
        home = cluster.broker(cluster.leaders("t")[0]).bootstrap
        conf = {
            "bootstrap.servers": home,
            "producer.type": "async",
            "acks": "all",
            "enable.idempotence": True,
            "retry.backoff.ms": 100,
            "message.send.max.retries": 1_000_000,
            "delivery.timeout.ms": 1500,
            "request.timeout.ms": 1000,
            "linger.ms": 0,
            "batch.num.messages": 1,
        }
        p = Producer(conf)
        try:
            p.produce("t", b"first", partition=1).result(timeout=30)
            cluster.stop_broker(away)
            futures = [p.produce("t", b"x%d" % i, partition=1) for i in range(5)]
            attempts = []
            for f in futures:
                with pytest.raises(Exception, match="expired after") as info:
                    f.result(timeout=30)
                attempts.append(int(re.search(r"after (\d+) attempt", str(info.value))[1]))
            # 1.5 s / 0.1 s is 15 attempts at most; the busy loop made hundreds
            assert max(attempts) <= 30, attempts
        finally:
            with pytest.raises(FailedToSendMessageError):  # close reports the failed sends
                p.close(timeout=10)
