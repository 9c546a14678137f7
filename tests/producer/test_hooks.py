"""CallbackHandler hooks fire in pipeline order; plug-ins load by dotted path and by object."""

from __future__ import annotations

import pytest

from kclient.encoders import Encoder, StringEncoder
from kclient.partitioner import Partitioner
from kclient.producer import (
    CallbackHandler,
    DefaultEventHandler,
    DeliveryReport,
    EventHandler,
    Producer,
    ProducerData,
)

from .conftest import assert_reports_match_log, read_partition


def _async(broker, **kw):
    cfg = {
        "metadata.broker.list": broker.bootstrap,
        "producer.type": "async",
        "queue.buffering.max.ms": 50,
    }
    cfg.update(kw)
    return cfg


def test_async_hook_order_for_one_message(mini_broker, recorder):
    mini_broker.create_topic("hooks", 1)
    with Producer(_async(mini_broker, **{"callback.handler": recorder})) as p:
        p.send(ProducerData("hooks", b"a"))
        p.flush()
    assert recorder.names() == [
        "init",
        "before_enqueue",
        "after_enqueue",
        "after_dequeuing_existing_data",
        "before_sending_data",
        "on_delivery",
        "last_batch_before_close",
        "close",
    ]
    assert recorder.calls[2] == ("after_enqueue", b"a", True)
    assert recorder.calls[5] == ("on_delivery", [b"a"], True)


def test_async_hook_order_for_a_batch(mini_broker, recorder):
    mini_broker.create_topic("hooks-batch", 1)
    values = [b"m%d" % i for i in range(5)]
    with Producer(
        _async(mini_broker, **{"callback.handler": recorder, "queue.buffering.max.ms": 2000})
    ) as p:
        p.send([ProducerData("hooks-batch", v) for v in values])
        p.flush()
    names = recorder.names()
    # per message: before/after enqueue in the caller, in order
    enq = [c for c in recorder.calls if c[0] in ("before_enqueue", "after_enqueue")]
    assert enq == [c for v in values for c in (("before_enqueue", v), ("after_enqueue", v, True))]
    # the send thread dequeues each, then hands over the batch once, then one report
    deq = [c[1] for c in recorder.calls if c[0] == "after_dequeuing_existing_data"]
    assert deq == values
    assert names.index("before_sending_data") > names.index("after_enqueue")
    sending = [c for c in recorder.calls if c[0] == "before_sending_data"]
    assert sending == [("before_sending_data", values)]
    assert names[-3:] == ["on_delivery", "last_batch_before_close", "close"]
    assert recorder.reports[0].base_offset == 0 and len(recorder.reports[0]) == 5


def test_before_enqueue_can_drop_and_replace(mini_broker):
    mini_broker.create_topic("hooks-filter", 1)

    class Filter(CallbackHandler):
        def before_enqueue(self, data):
            if data.value.startswith(b"drop"):
                return None
            return ProducerData(data.topic, data.value.upper())

    with Producer(_async(mini_broker, **{"callback.handler": Filter()})) as p:
        p.send([ProducerData("hooks-filter", v) for v in (b"keep1", b"drop", b"keep2")])
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "hooks-filter", 0)] == [
        b"KEEP1",
        b"KEEP2",
    ]


def test_dequeue_and_before_sending_can_expand_and_filter(mini_broker):
    mini_broker.create_topic("hooks-expand", 1)

    class Expand(CallbackHandler):
        def after_dequeuing_existing_data(self, data):
            return [data, ProducerData(data.topic, data.value + b"-copy")]

        def before_sending_data(self, batch):
            return [d for d in batch if d.value != b"b-copy"]

        def last_batch_before_close(self):
            return [ProducerData("hooks-expand", b"last")]

    reports = []
    with Producer(
        _async(mini_broker, **{"callback.handler": Expand()}), on_report=reports.append
    ) as p:
        p.send([ProducerData("hooks-expand", b"a"), ProducerData("hooks-expand", b"b")])
        p.flush()
    values = [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "hooks-expand", 0)]
    assert values == [b"a", b"a-copy", b"b", b"last"]
    assert sum(len(r) for r in reports) == 4
    assert assert_reports_match_log(mini_broker.bootstrap, reports) == 4


def test_sync_mode_hooks(mini_broker, recorder):
    mini_broker.create_topic("hooks-sync", 1)
    with Producer(
        {"metadata.broker.list": mini_broker.bootstrap, "callback.handler": recorder}
    ) as p:
        p.send(ProducerData("hooks-sync", b"s"))
    assert recorder.names() == ["init", "before_sending_data", "on_delivery", "close"]


def test_hook_exceptions_do_not_kill_delivery(mini_broker, caplog):
    mini_broker.create_topic("hooks-raise", 1)

    class Bad(CallbackHandler):
        def on_delivery(self, report):
            raise RuntimeError("boom")

    seen = []
    with Producer(_async(mini_broker, **{"callback.handler": Bad()}), on_report=seen.append) as p:
        p.send(ProducerData("hooks-raise", b"x"))
        p.flush()
        p.send(ProducerData("hooks-raise", b"y"))
    assert [len(r) for r in seen] == [1, 1]
    assert "on_delivery raised" in caplog.text


def test_callback_handler_by_dotted_path(mini_broker):
    mini_broker.create_topic("hooks-path", 1)
    with Producer(
        _async(mini_broker, **{"callback.handler": "tests.producer.test_hooks.CountingHandler"})
    ) as p:
        p.send(ProducerData("hooks-path", b"x"))
        p.flush()
        assert isinstance(p.callbacks, CountingHandler)
        assert p.callbacks.delivered == 1


class CountingHandler(CallbackHandler):
    def __init__(self):
        self.delivered = 0

    def on_delivery(self, report):
        self.delivered += len(report)


class UpperEncoder(Encoder):
    def to_message(self, data):
        return None if data is None else data.upper().encode()


class LastPartition(Partitioner):
    def partition(self, key, num_partitions):
        return num_partitions - 1


class ListEventHandler(EventHandler):
    """A custom EventHandler that only records what it is given."""

    instances: list = []

    def __init__(self):
        self.batches = []
        self.closed = False
        ListEventHandler.instances.append(self)

    def init(self, context):
        self.context = context

    def handle(self, events):
        self.batches.append(list(events))
        return [DeliveryReport(events[0].topic, 0, list(events), 100)]

    def close(self):
        self.closed = True


@pytest.mark.parametrize("by", ["path", "object"])
def test_encoder_and_partitioner_plugins(mini_broker, by):
    mini_broker.create_topic(f"plug-{by}", 3)
    if by == "path":
        cfg = {
            "serializer.class": "tests.producer.test_hooks.UpperEncoder",
            "key.serializer.class": "kclient.encoders.StringEncoder",
            "partitioner.class": "tests.producer.test_hooks.LastPartition",
        }
    else:
        cfg = {
            "serializer.class": UpperEncoder(),
            "key.serializer.class": StringEncoder(),
            "partitioner.class": LastPartition(),
        }
    with Producer({"metadata.broker.list": mini_broker.bootstrap, **cfg}) as p:
        reports = p.send(ProducerData(f"plug-{by}", "hello", key="k"))
    assert reports[0].partition == 2
    rec = read_partition(mini_broker.bootstrap, f"plug-{by}", 2)[0]
    assert (bytes(rec.key), bytes(rec.value)) == (b"k", b"HELLO")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("by", ["path", "object"])
def test_event_handler_plugin(mode, by):
    handler = "tests.producer.test_hooks.ListEventHandler" if by == "path" else ListEventHandler()
    ListEventHandler.instances.clear() if by == "path" else None
    reports = []
    p = Producer(
        {"metadata.broker.list": "127.0.0.1:1", "producer.type": mode, "event.handler": handler},
        on_report=reports.append,
    )
    eh = p.event_handler
    assert isinstance(eh, ListEventHandler) and eh.context.config is p.config
    p.send([ProducerData("t", b"1"), ProducerData("t", b"2")])
    p.close()
    assert [[d.value for d in b] for b in eh.batches] == [[b"1", b"2"]]
    assert eh.closed
    assert [(r.base_offset, len(r)) for r in reports] == [(100, 2)]


def test_event_handler_exception_reports_failure():
    class Broken(EventHandler):
        def handle(self, events):
            raise RuntimeError("cannot")

    reports = []
    p = Producer(
        {
            "metadata.broker.list": "127.0.0.1:1",
            "producer.type": "async",
            "event.handler": Broken(),
        },
        on_report=reports.append,
    )
    p.send(ProducerData("t", b"1"))
    with pytest.raises(Exception) as info:
        p.close()
    assert "cannot" in str(info.value) and "b'1'" in str(info.value)
    assert reports[0].error is not None


def test_default_event_handler_is_used():
    p = Producer({"metadata.broker.list": "127.0.0.1:1"})
    assert isinstance(p.event_handler, DefaultEventHandler)
    p.close()


def test_init_gets_the_resolved_config_once_before_any_other_hook(mini_broker):
    seen = []

    class Seen(CallbackHandler):
        def init(self, config):
            seen.append(("init", dict(config)))

        def before_enqueue(self, data):
            seen.append(("before_enqueue", data.value))
            return data

    mini_broker.create_topic("hinit", partitions=1)
    with Producer(
        {
            "bootstrap.servers": mini_broker.bootstrap,
            "producer.type": "async",
            "queue.time": 7,
            "callback.handler": Seen(),
        }
    ) as p:
        p.send(ProducerData("hinit", b"a"))
        p.send(ProducerData("hinit", b"b"))
    assert [s[0] for s in seen] == ["init", "before_enqueue", "before_enqueue"]
    config = seen[0][1]  # aliases resolved to Kafka's names, defaults filled in
    host, port = mini_broker.bootstrap.rsplit(":", 1)
    assert tuple(config["metadata.broker.list"]) == ((host, int(port)),)
    assert config["queue.buffering.max.ms"] == 7 and config["producer.type"] == "async"
    assert config["batch.num.messages"] > 0 and "queue.time" not in config
    assert [m.value for m in read_partition(mini_broker.bootstrap, "hinit", 0)] == [b"a", b"b"]
