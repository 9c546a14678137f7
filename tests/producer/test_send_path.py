"""One place chooses each Producer's send()/produce(): kclient/producer/send_path.py's table.
The name it records says which ran, and each row's functions behave as that row says."""

from __future__ import annotations

import pytest

from kclient import Producer, ProducerData
from kclient.errors import IllegalStateError
from kclient.producer import CallbackHandler, data, send_path
from kclient.producer.event_handler import DefaultEventHandler
from tests.needs import need_c


class EnqueueHook(CallbackHandler):
    def before_enqueue(self, d):
        return d


class OwnHandle(DefaultEventHandler):
    """An event handler with its own handle(): the sync lane must not go around it."""

    def __init__(self):
        super().__init__()
        self.handled = 0

    def handle(self, events):
        self.handled += len(events)
        return super().handle(events)


class DequeueHook(CallbackHandler):
    def after_dequeuing_existing_data(self, data):
        return data


def _make(broker, **extra):
    return Producer({"metadata.broker.list": broker.bootstrap, **extra})


@pytest.mark.parametrize("pure", [False, True])
def test_each_row_of_the_table(mini_broker, monkeypatch, pure):
    c = "python" if pure else "c"
    if pure:
        monkeypatch.setattr(send_path, "speedups", None)
    else:
        need_c(data.speedups, "the C send path")  # KCLIENT_REQUIRE_ALL=1: a failure if not built
    rows = [
        ({"producer.type": "sync"}, "sync-lane"),
        ({"producer.type": "sync", "callback.handler": EnqueueHook()}, "sync"),
        ({"producer.type": "async"}, f"async-{c}"),
        ({"producer.type": "async", "callback.handler": EnqueueHook()}, "async-hooked"),
        ({"producer.type": "async", "callback.handler": DequeueHook()}, f"async-{c}-hooked"),
        (
            {"producer.type": "async", "transactional.id": "tx-path", "acks": "all"},
            f"async-{c}+transactional",
        ),
    ]
    for extra, name in rows:
        with _make(mini_broker, **extra) as p:
            assert p.send_path == name, extra
            fast = name.startswith("async-c") and "+" not in name  # (a guard wraps it)
            assert (type(p.send).__name__ == "FastSend") == fast
            if name.endswith("hooked"):
                with pytest.raises(IllegalStateError, match="hooks"):
                    p.produce("t", b"v")
            elif name.endswith("transactional"):
                with pytest.raises(IllegalStateError, match="IN_TRANSACTION"):
                    p.send(ProducerData("t", b"v"))
            else:
                p.produce("t-path", b"v").result(10)


def test_produce_is_replaced_by_its_fast_function_after_the_first_call(mini_broker):
    with _make(mini_broker, **{"producer.type": "async"}) as p:
        first = p.produce
        p.produce("t-path", b"a").result(10)
        assert p.produce is not first  # the switch-on wrapper is gone
        p.produce("t-path", b"b").result(10)


def test_a_sync_producer_with_its_own_handle_runs_it(mini_broker):
    """The sync lane is bound only under DefaultEventHandler's own handle()."""
    h = OwnHandle()
    with _make(mini_broker, **{"producer.type": "sync", "event.handler": h}) as p:
        (report,) = p.send(ProducerData("t-own", b"v"))
        assert p.send_path == "sync" and report.ok
    assert h.handled == 1
