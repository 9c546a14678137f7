"""queue.enqueue.timeout.ms: -1 blocks, 0 raises at once, >0 waits then raises; a dead or hung
broker never makes send(), flush() or close() hang past the configured timeouts."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kclient.errors import FailedToSendMessageError, IllegalStateError, QueueFullError
from kclient.producer import CallbackHandler, DeliveryReport, EventHandler, Producer, ProducerData
from kclient.testing import free_port

from ..waiting import LOAD_SLACK, wait_until


class GateHandler(EventHandler):
    """An EventHandler that blocks in handle() until the test opens the gate."""

    def __init__(self):
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.handled = []

    def handle(self, events):
        self.entered.set()
        self.gate.wait(10)
        self.handled += events
        return [DeliveryReport(events[0].topic, 0, list(events), len(self.handled) - len(events))]


def _producer(timeout_ms, handler, capacity=5, **extra):
    cfg = {
        "metadata.broker.list": "127.0.0.1:1",
        "producer.type": "async",
        "queue.buffering.max.messages": capacity,
        "batch.num.messages": capacity,
        "queue.buffering.max.ms": 0,
        "queue.enqueue.timeout.ms": timeout_ms,
        "event.handler": handler,
    }
    cfg.update(extra)
    return Producer(cfg)


def _fill(p, handler, capacity=5):
    """One batch stuck in the handler, then a full queue behind it."""
    p.send([ProducerData("t", b"first%d" % i) for i in range(capacity)])
    assert handler.entered.wait(5)
    for i in range(capacity):
        p.send(ProducerData("t", b"queued%d" % i))


def test_timeout_zero_raises_at_once():
    h = GateHandler()
    p = _producer(0, h)
    _fill(p, h)
    start = time.monotonic()
    with pytest.raises(QueueFullError) as info:
        p.send(ProducerData("t", b"overflow"))
    assert time.monotonic() - start < LOAD_SLACK  # the gate stays shut: waiting would hang
    assert "queue.enqueue.timeout.ms" in str(info.value)
    assert [d.value for d in info.value.not_queued] == [b"overflow"]
    h.gate.set()
    p.close()
    assert len(h.handled) == 10


def test_positive_timeout_waits_then_raises():
    h = GateHandler()
    p = _producer(300, h)
    _fill(p, h)
    start = time.monotonic()
    with pytest.raises(QueueFullError):
        p.send(ProducerData("t", b"overflow"))
    assert 0.28 <= time.monotonic() - start < 0.3 + LOAD_SLACK  # the gate stays shut
    h.gate.set()
    p.close()


def test_positive_timeout_succeeds_when_room_appears():
    h = GateHandler()
    p = _producer(30000, h)
    _fill(p, h)
    threading.Timer(0.2, h.gate.set).start()
    start = time.monotonic()
    p.send(ProducerData("t", b"late"))
    assert 0.15 <= time.monotonic() - start < 0.2 + LOAD_SLACK  # woken by room, not the 30 s
    p.close()
    assert h.handled[-1].value == b"late"


def test_minus_one_blocks_until_room():
    h = GateHandler()
    p = _producer(-1, h)
    _fill(p, h)
    threading.Timer(0.3, h.gate.set).start()
    start = time.monotonic()
    p.send(ProducerData("t", b"blocked"))
    assert time.monotonic() - start >= 0.25
    p.close()
    assert [d.value for d in h.handled][-1] == b"blocked" and len(h.handled) == 11


def test_list_send_partially_queued_names_the_rest():
    h = GateHandler()
    p = _producer(0, h)
    p.send([ProducerData("t", b"first%d" % i) for i in range(5)])
    assert h.entered.wait(5)
    with pytest.raises(QueueFullError) as info:
        p.send([ProducerData("t", b"x%d" % i) for i in range(8)])
    assert [d.value for d in info.value.not_queued] == [b"x5", b"x6", b"x7"]
    assert "3 of 8 messages were not queued" in str(info.value)
    h.gate.set()
    p.close()
    assert len(h.handled) == 10


def test_after_enqueue_sees_refused_message():
    calls = []

    class Hooks(CallbackHandler):
        def after_enqueue(self, data, added):
            calls.append((data.value, added))

    h = GateHandler()
    p = _producer(0, h, **{"callback.handler": Hooks()})
    _fill(p, h)
    with pytest.raises(QueueFullError):
        p.send(ProducerData("t", b"refused"))
    assert calls[-1] == (b"refused", False)
    assert all(added for _, added in calls[:-1])
    h.gate.set()
    p.close()


def test_send_after_close_is_refused():
    h = GateHandler()
    h.gate.set()
    p = _producer(-1, h)
    p.close()
    with pytest.raises(IllegalStateError):
        p.send(ProducerData("t", b"x"))
    with pytest.raises(IllegalStateError):
        p.send([ProducerData("t", b"x")])


def test_blocked_sender_is_released_by_close():
    """A caller blocked on a full queue (-1) gets an error when another thread closes."""
    h = GateHandler()
    p = _producer(-1, h)
    _fill(p, h)
    errors = []

    def blocked():
        try:
            p.send(ProducerData("t", b"waiting"))
        except Exception as exc:  # noqa: BLE001 - asserted by the test
            errors.append(exc)

    t = threading.Thread(target=blocked)
    t.start()
    wait_until(lambda: p._thread.full_waiters == 1, 10, "the sender blocked on the full queue")
    threading.Timer(0.2, h.gate.set).start()
    p.close()
    t.join(5)
    assert not t.is_alive()


# ----------------------------------------------------------------- a real broker that is gone
def _down_config(port, **extra):
    cfg = {
        "metadata.broker.list": f"127.0.0.1:{port}",
        "producer.type": "async",
        "queue.buffering.max.messages": 20,
        "batch.num.messages": 10,
        "queue.buffering.max.ms": 0,
        "message.send.max.retries": 2,
        "retry.backoff.ms": 50,
        "connect.timeout.ms": 500,
    }
    cfg.update(extra)
    return cfg


@pytest.mark.parametrize("timeout_ms", [-1, 200])
def test_dead_broker_full_queue_does_not_hang(timeout_ms):
    """Nothing listens: batches fail after their retries, so a blocked send() moves on."""
    reports = []
    p = Producer(
        _down_config(free_port(), **{"queue.enqueue.timeout.ms": timeout_ms}),
        on_report=reports.append,
    )
    start = time.monotonic()
    refused = 0
    for i in range(100):
        try:
            p.send(ProducerData("gone", b"m%d" % i))
        except QueueFullError:
            refused += 1
    with pytest.raises(FailedToSendMessageError) as info:
        p.close()
    elapsed = time.monotonic() - start
    assert elapsed < 20
    failed = sum(len(r) for r in reports if r.error is not None)
    assert failed + refused == 100 and all(r.error is not None for r in reports)
    assert f"failed to send {failed} message(s)" in str(info.value)
    assert "ProducerData('gone', b'm" in str(info.value)
    if timeout_ms == -1:
        assert refused == 0


class HungBroker:
    """Accepts connections, reads requests, never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.alive = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self.alive:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    @staticmethod
    def _drain(conn):
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass

    def close(self):
        self.alive = False
        self.sock.close()
        for c in self.conns:
            c.close()


def test_hung_broker_times_out_within_budget():
    hung = HungBroker()
    try:
        reports = []
        p = Producer(
            _down_config(hung.port, **{"socket.timeout.ms": 300, "message.send.max.retries": 1}),
            on_report=reports.append,
        )
        start = time.monotonic()
        p.send([ProducerData("hung", b"a"), ProducerData("hung", b"b")])
        with pytest.raises(FailedToSendMessageError) as info:
            p.flush()
        elapsed = time.monotonic() - start
        # 2 sends x (metadata attempt + one tenacity retry) x 0.3 s, plus backoffs
        assert elapsed < 2 + LOAD_SLACK, elapsed
        assert {m.value for m, _ in info.value.failed} == {b"a", b"b"}
        start = time.monotonic()
        p.close(timeout=2)
        assert time.monotonic() - start < 2 + LOAD_SLACK
    finally:
        hung.close()


def test_close_timeout_fails_what_is_left():
    hung = HungBroker()
    try:
        reports = []
        p = Producer(
            _down_config(hung.port, **{"socket.timeout.ms": 1000, "message.send.max.retries": 50}),
            on_report=reports.append,
        )
        p.send([ProducerData("hung", b"m%d" % i) for i in range(5)])
        start = time.monotonic()
        with pytest.raises(FailedToSendMessageError):
            p.close(timeout=0.5)
        assert time.monotonic() - start < 0.5 + LOAD_SLACK  # not 50 retries x 1 s
        assert sum(len(r) for r in reports) == 5
        assert all(r.error is not None for r in reports)
    finally:
        hung.close()


# ----------------------------------------------------------------- lists queued as chunks
def test_chunks_count_as_their_messages():
    h = GateHandler()
    p = _producer(0, h, capacity=10, **{"batch.num.messages": 5})
    p.send([ProducerData("t", b"first%d" % i) for i in range(5)])
    assert h.entered.wait(5)
    p.send([ProducerData("t", b"a%d" % i) for i in range(4)])  # one chunk entry
    p.send(ProducerData("t", b"single"))
    t = p._thread
    assert (len(t.queue), t.size()) == (2, 5)
    with pytest.raises(QueueFullError) as info:
        p.send([ProducerData("t", b"b%d" % i) for i in range(6)])
    assert [d.value for d in info.value.not_queued] == [b"b5"]
    assert t.size() == 10
    with pytest.raises(QueueFullError):
        p.send(ProducerData("t", b"over"))
    h.gate.set()
    p.close()
    assert [d.value for d in h.handled] == [b"first%d" % i for i in range(5)] + [
        b"a%d" % i for i in range(4)
    ] + [b"single"] + [b"b%d" % i for i in range(5)]


def test_mixed_lists_and_singles_keep_order(mini_broker):
    from .conftest import read_partition

    mini_broker.create_topic("mixed-order", 1)
    expected = []
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "batch.num.messages": 700,
            "queue.buffering.max.ms": 1,
        }
    ) as p:
        for round_no in range(20):
            batch = [
                ProducerData("mixed-order", b"L%d-%d" % (round_no, i))
                for i in range(round_no * 97 % 1500)
            ]
            p.send(batch)
            expected += [d.value for d in batch]
            for i in range(round_no % 4):
                d = ProducerData("mixed-order", b"S%d-%d" % (round_no, i))
                p.send(d)
                expected.append(d.value)
            keyed = [ProducerData("mixed-order", b"K%d" % round_no, key=b"k")]
            p.send(keyed)
            expected.append(keyed[0].value)
    got = [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "mixed-order", 0)]
    assert got == expected


def test_multi_topic_list_and_big_list(mini_broker):
    from .conftest import read_partition

    mini_broker.create_topic("mt-a", 1)
    mini_broker.create_topic("mt-b", 1)
    reports = []
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "batch.num.messages": 10000,
        },
        on_report=reports.append,
    ) as p:
        p.send([ProducerData("mt-a" if i % 3 else "mt-b", b"%d" % i) for i in range(3000)])
        p.send([ProducerData("mt-a", b"big%d" % i) for i in range(25000)])
        p.flush()
        assert p.queued == 0
    a = [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "mt-a", 0)]
    assert a == [b"%d" % i for i in range(3000) if i % 3] + [b"big%d" % i for i in range(25000)]
    assert len(read_partition(mini_broker.bootstrap, "mt-b", 0)) == 1000
    assert sum(len(r) for r in reports) == 28000


def test_queue_stays_within_capacity_against_a_slow_broker(mini_broker):
    """Memory is bounded by queue.buffering.max.messages: a slow broker blocks send()."""
    mini_broker.create_topic("slow", 1)
    mini_broker.faults.delay(0, ms=100, count=10)
    reports = []
    p = Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "queue.buffering.max.messages": 500,
            "batch.num.messages": 100,
        },
        on_report=reports.append,
        max_in_flight_requests_per_connection=2,
    )
    t = p._thread
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], t.size())
            time.sleep(0.0005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.monotonic()
    for i in range(3000):
        p.send(ProducerData("slow", b"%d" % i))
        if i % 500 == 0:
            p.send([ProducerData("slow", b"list%d" % i)] * 1)
    p.close()
    stop.set()
    sampler.join()
    assert peak[0] <= 500
    assert time.monotonic() - start > 0.3  # the delays were felt: send() blocked
    assert sum(len(r) for r in reports) == 3006 and all(r.ok for r in reports)


class TurnstileHandler(GateHandler):
    """A GateHandler that lets one batch through per permit."""

    def __init__(self):
        super().__init__()
        self.permits = threading.Semaphore(0)
        self.calls = 0

    def handle(self, events):
        self.calls += 1
        self.entered.set()
        assert self.permits.acquire(timeout=10)
        self.handled += events
        return [DeliveryReport(events[0].topic, 0, list(events), len(self.handled) - len(events))]


def test_a_list_waiting_for_room_is_queued_as_a_chunk():
    # a list send that waits for room used to be queued message by message, and the send
    # thread then took the whole batch apart again (a third of the list path's time on Kafka)
    h = TurnstileHandler()
    p = _producer(-1, h, capacity=10, **{"batch.num.messages": 5})
    p.send([ProducerData("t", b"first%d" % i) for i in range(5)])
    assert h.entered.wait(5)
    p.send([ProducerData("t", b"full%d" % i) for i in range(10)])
    t = p._thread
    blocked = threading.Thread(
        target=p.send, args=([ProducerData("t", b"late%d" % i) for i in range(5)],)
    )
    blocked.start()
    wait_until(lambda: t.full_waiters == 1, 10, "the list send waiting for room")
    assert blocked.is_alive(), "the queue is full: the list send waits"
    h.permits.release()  # the first batch is done, the next chunk goes to the handler
    blocked.join(5)
    assert not blocked.is_alive()
    assert [type(e).__name__ for e in t.queue] == ["Chunk", "Chunk"]
    assert t.size() == 10
    for _ in range(3):
        h.permits.release()
    p.close()
    assert [d.value for d in h.handled][-5:] == [b"late%d" % i for i in range(5)]
    assert len(h.handled) == 20
