"""Producer.produce: a DeliveryFuture per message (issue 15), in sync and async modes, through
the C speed-ups and their Python twins; per-message callbacks; failures per message."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import gc
import threading

import pytest

from kclient import DeliveryFuture, Producer, RecordMetadata
from kclient.errors import FailedToSendMessageError, IllegalStateError
from kclient.producer import CallbackHandler, data, future, producer, send_path
from kclient.producer.data import _PyProducerData
from kclient.protocol.error_codes import MessageSizeTooLargeError, UnknownTopicOrPartitionError
from tests.needs import need_c

from .conftest import read_partition

MODES = ["sync", "async-c", "async-python"]


@pytest.fixture(params=MODES)
def make(request, mini_broker, monkeypatch):
    """A factory of producers in one mode (C speed-ups or their Python twins for async)."""
    mode = request.param
    if mode == "async-python":
        monkeypatch.setattr(producer, "speedups", None)
        monkeypatch.setattr(send_path, "speedups", None)
        monkeypatch.setattr(producer, "ProducerData", _PyProducerData)
        monkeypatch.setattr(send_path, "ProducerData", _PyProducerData)
    elif mode == "async-c":
        need_c(data.speedups)
    made = []

    def new(**cfg):
        p = Producer(
            {
                "metadata.broker.list": mini_broker.bootstrap,
                "producer.type": mode.split("-")[0],
                **cfg,
            }
        )
        made.append(p)
        return p

    new.mode = mode
    yield new
    for p in made:
        try:
            p.close()
        except FailedToSendMessageError:
            pass


def test_futures_resolve_to_the_offsets_in_the_log(mini_broker, make):
    mini_broker.create_topic("pf", partitions=3)
    p = make(**{"batch.num.messages": 7})
    calls: list = []
    futs = [
        p.produce(
            "pf",
            b"v%d" % i,
            key=b"k%d" % (i % 5),
            on_delivery=lambda err, md: calls.append((err, md)),
        )
        for i in range(40)
    ]
    futs.append(p.produce("pf", b"plain"))  # no key: the three-field entry
    futs.append(p.produce("pf", b"stamped", partition=1, timestamp=1234567, headers=[("h", b"x")]))
    p.flush()
    assert all(isinstance(f, DeliveryFuture) and isinstance(f, cf.Future) for f in futs)
    mds = [f.result(timeout=5) for f in futs]
    logs = {
        part: {r.offset: r for r in read_partition(mini_broker.bootstrap, "pf", part)}
        for part in range(3)
    }
    values = [b"v%d" % i for i in range(40)] + [b"plain", b"stamped"]
    for md, value in zip(mds, values):
        assert isinstance(md, RecordMetadata) and md.topic == "pf"
        assert bytes(logs[md.partition][md.offset].value) == value
        assert md.timestamp == logs[md.partition][md.offset].timestamp
    assert mds[-1].partition == 1 and mds[-1].timestamp == 1234567
    assert sum(map(len, logs.values())) == 42
    assert len(calls) == 40 and all(err is None for err, _ in calls)
    assert sorted((m.partition, m.offset) for _, m in calls) == sorted(
        (m.partition, m.offset) for m in mds[:40]
    )
    assert p.stats["acknowledged"] == 42


def test_failures_raise_per_message(mini_broker, make):
    mini_broker.create_topic("pe", partitions=2)
    p = make(**{"message.send.max.retries": 0})
    errors: list = []
    good = p.produce("pe", b"fine")
    if p.sync:  # sync: a failed message raises its error (on_delivery got it first)
        with pytest.raises(UnknownTopicOrPartitionError) as raised:
            p.produce("pe", b"lost", partition=9, on_delivery=lambda e, m: errors.append((e, m)))
        bad = cf.Future()
        bad.set_exception(raised.value)
    else:
        bad = p.produce("pe", b"lost", partition=9, on_delivery=lambda e, m: errors.append((e, m)))
    good2 = p.produce("pe", b"fine too", key=b"k")
    assert good.result(5).offset >= 0 and good2.result(5).offset >= 0
    with pytest.raises(UnknownTopicOrPartitionError):
        bad.result(5)
    assert isinstance(bad.exception(5), UnknownTopicOrPartitionError)
    assert len(errors) == 1 and isinstance(errors[0][0], UnknownTopicOrPartitionError)
    assert errors[0][1].offset == -1 and errors[0][1].topic == "pe"
    if p.sync:
        p.flush()  # sync failures went to the future, not to a later flush
    else:  # async: flush() still names every failure, as send()'s contract says
        with pytest.raises(FailedToSendMessageError, match="lost"):
            p.flush()
    with pytest.raises(MessageSizeTooLargeError):  # argument errors raise at once, as send()
        p.produce("pe", b"x" * 2_000_000)


def test_awaitable_and_concurrent_futures_helpers(mini_broker, make):
    mini_broker.create_topic("pa", partitions=1)
    p = make()

    async def main():
        a = await p.produce("pa", b"a")
        b = await asyncio.wrap_future(p.produce("pa", b"b"))
        return a, b

    a, b = asyncio.run(main())
    assert (a.offset, b.offset) == (0, 1)
    futs = [p.produce("pa", b"%d" % i) for i in range(20)]
    done, pending = cf.wait(futs, timeout=10)
    assert len(done) == 20 and not pending
    assert {f.result().offset for f in cf.as_completed(futs, timeout=10)} == set(range(2, 22))
    seen = []
    f = p.produce("pa", b"cb")
    f.add_done_callback(lambda fut: seen.append(fut.result().offset))
    p.flush()
    f.add_done_callback(lambda fut: seen.append(-fut.get().offset))  # already done: now
    assert seen == [22, -22] and f.done() and not f.cancel() and not f.cancelled()
    assert repr(f) == "<DeliveryFuture RecordMetadata('pa', 0, 22)>"


def test_result_waits_across_threads(mini_broker, make):
    mini_broker.create_topic("pw", partitions=1)
    p = make(**{"queue.buffering.max.ms": 300})
    f = p.produce("pw", b"later")
    got: list = []
    waiters = [threading.Thread(target=lambda: got.append(f.result(10).offset)) for _ in range(3)]
    for w in waiters:
        w.start()
    for w in waiters:
        w.join(10)
    assert got == [0, 0, 0]
    with pytest.raises(cf.TimeoutError):
        # a queue that never drains: a timeout, not a hang
        blocked = make(**{"queue.buffering.max.ms": 60_000, "batch.num.messages": 1000})
        if blocked.sync:
            raise cf.TimeoutError("sync futures are resolved on return")
        blocked.produce("pw", b"waits").result(timeout=0.2)


def test_no_reference_cycle_per_message(mini_broker, make):
    # a future keeps its report's outcome, not the report (whose entries hold the future)
    mini_broker.create_topic("pc", partitions=1)
    p = make()
    futs = [p.produce("pc", b"x") for _ in range(100)]
    p.flush()
    gc.collect()
    del futs
    assert gc.collect() == 0


def test_send_and_produce_mix(mini_broker, make):
    mini_broker.create_topic("pm", partitions=1)
    p = make()
    reports: list = []
    p.on_delivery = reports.append
    pd = producer.ProducerData  # (the class of the mode under test)
    p.send(pd("pm", b"s0"))
    f = p.produce("pm", b"p1")
    p.send([pd("pm", b"s2"), pd("pm", b"s3", key=b"k")])
    p.flush()
    assert f.result().offset == 1
    assert sorted(m.value for r in reports for m in r.messages) == [b"p1", b"s0", b"s2", b"s3"]


def test_queue_hooks_refuse_produce(mini_broker):
    class Hooks(CallbackHandler):
        def before_enqueue(self, d):
            return d

    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "callback.handler": Hooks,
        }
    ) as p:
        with pytest.raises(IllegalStateError, match="use send"):
            p.produce("t", b"v")


def test_the_python_resolver_matches_the_c_one():
    need_c(data.speedups)
    for resolve in (future.resolve, data.speedups.resolve):
        fs = [DeliveryFuture(), DeliveryFuture(timestamp=5)]
        es = [("t", b"a"), ("t", b"b", fs[0]), ("t", b"c", None, None, 5, None, fs[1])]
        r = data.DeliveryReport("t", 2, None, 10, None, -1, entries=es)
        r.create_time = 99
        resolve([r])
        assert [f.result(0) for f in fs] == [RecordMetadata("t", 2, 11), RecordMetadata("t", 2, 12)]
        assert [f.result(0).timestamp for f in fs] == [99, 5]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_transactional_produce(mini_broker, mode):
    mini_broker.create_topic("ptx", partitions=1)
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": mode,
            "transactional.id": f"ptx-{mode}",
            "request.required.acks": -1,
        }
    ) as p:
        with pytest.raises(IllegalStateError):
            p.produce("ptx", b"outside a transaction")
        with pytest.raises(TypeError, match=r"p\.produce\('ptx', b'v'\)"):
            p.send("ptx", b"v")
        p.init_transactions()
        p.begin_transaction()
        futs = [p.produce("ptx", b"%d" % i) for i in range(3)]
        p.commit_transaction()
        assert [f.result(5).offset for f in futs] == [0, 1, 2]
        with pytest.raises(IllegalStateError):
            p.produce("ptx", b"after the commit")


@pytest.mark.parametrize("pure", [False, True], ids=["async-c", "async-python"])
def test_failed_futures_are_collected(mini_broker, monkeypatch, pure):
    # an error's traceback can lead back to the batch and its futures: that cycle must stay
    # visible to the cycle collector (the C path takes futures out of it while they wait)
    import logging
    import weakref

    # (pytest keeps log records, whose arguments hold the errors: keep kclient's out of it)
    monkeypatch.setattr(logging.getLogger("kclient"), "propagate", False)
    if pure:
        monkeypatch.setattr(producer, "speedups", None)
        monkeypatch.setattr(send_path, "speedups", None)
    else:
        need_c(data.speedups)
    mini_broker.create_topic("pg", partitions=1)
    p = Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "message.send.max.retries": 0,
            "connect.timeout.ms": 300,
        }
    )
    p.produce("pg", b"warm").result(5)
    mini_broker.stop()
    futs = [p.produce("pg", b"x") for _ in range(20)]
    assert all(f.exception(10) is not None for f in futs)
    refs = [weakref.ref(f) for f in futs]
    del futs
    try:
        p.close()
    except FailedToSendMessageError:
        pass
    del p
    gc.collect()
    assert sum(r() is not None for r in refs) == 0
