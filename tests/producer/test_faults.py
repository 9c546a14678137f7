"""Fault-injected retries on the mini-broker: every message ends exactly as its report says."""

from __future__ import annotations

import threading
import time

import pytest

from kclient.errors import (
    FailedToSendMessageError,
    NotLeaderForPartitionError,
    RequestTimedOutError,
)
from kclient.producer import Producer, ProducerData

from ..waiting import wait_until
from .conftest import assert_reports_match_log, read_partition

PRODUCE = 0
NOT_LEADER = 6
REQUEST_TIMED_OUT = 7


def _cfg(bootstrap, mode="async", **extra):
    cfg = {
        "metadata.broker.list": bootstrap,
        "producer.type": mode,
        "retry.backoff.ms": 20,
        "queue.buffering.max.ms": 5,
    }
    cfg.update(extra)
    return cfg


def _messages(topic, n, prefix=b"m"):
    return [ProducerData(topic, prefix + b"%05d" % i) for i in range(n)]


def _every_message_reported_once(sent, reports):
    def ident(m):
        return (m.topic, m.value, m.key, m.partition)

    seen = sorted(ident(m) for r in reports for m in r.messages)
    assert seen == sorted(ident(m) for m in sent), "a message was lost or reported twice"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("code", [NOT_LEADER, REQUEST_TIMED_OUT])
def test_retriable_errors_then_success(mini_broker, mode, code):
    topic = f"faults-{mode}-{code}"
    mini_broker.create_topic(topic, 1)
    mini_broker.faults.inject(PRODUCE, error=code, count=3)
    reports = []
    sent = _messages(topic, 50)
    with Producer(_cfg(mini_broker.bootstrap, mode), on_report=reports.append) as p:
        p.send(sent)
        p.flush()
    _every_message_reported_once(sent, reports)
    assert all(r.ok for r in reports)
    assert reports[0].attempts == 4  # three refusals, then accepted
    assert assert_reports_match_log(mini_broker.bootstrap, reports) == 50
    # an error answer means nothing was appended: no duplicates
    assert len(read_partition(mini_broker.bootstrap, topic, 0)) == 50


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_dropped_connections_then_success(mini_broker, mode):
    topic = f"faults-drop-{mode}"
    mini_broker.create_topic(topic, 2)
    mini_broker.faults.drop_connection(PRODUCE, count=2)
    reports = []
    sent = [ProducerData(topic, b"v%d" % i, key=b"k%d" % i) for i in range(40)]
    with Producer(_cfg(mini_broker.bootstrap, mode), on_report=reports.append) as p:
        p.send(sent)
        p.flush()
    _every_message_reported_once(sent, reports)
    assert all(r.ok for r in reports)
    assert assert_reports_match_log(mini_broker.bootstrap, reports) == 40


def test_late_response_is_retried_and_reports_the_retry(mini_broker):
    """A response slower than the socket timeout: the retry's offsets are the ones reported."""
    topic = "faults-late"
    mini_broker.create_topic(topic, 1)
    mini_broker.faults.delay(PRODUCE, ms=1500, count=1)
    reports = []
    sent = _messages(topic, 10)
    with Producer(
        _cfg(mini_broker.bootstrap, "sync", **{"socket.timeout.ms": 400}), on_report=reports.append
    ) as p:
        p.send(sent)
    _every_message_reported_once(sent, reports)
    assert reports[0].attempts == 2
    # the delayed first attempt is appended when its delay ends: at least once, never lost
    wait_until(
        lambda: len(read_partition(mini_broker.bootstrap, topic, 0)) == 20,
        20,
        "the delayed first attempt appended after the retry",
    )
    assert assert_reports_match_log(mini_broker.bootstrap, reports) == 10


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_budget_exhausted_names_the_messages(mini_broker, mode):
    topic = f"faults-exhausted-{mode}"
    mini_broker.create_topic(topic, 1)
    mini_broker.faults.inject(PRODUCE, error=NOT_LEADER, count=100)
    reports = []
    sent = _messages(topic, 3, b"lost")
    p = Producer(
        _cfg(mini_broker.bootstrap, mode, **{"message.send.max.retries": 2}),
        on_report=reports.append,
    )
    with pytest.raises(FailedToSendMessageError) as info:
        p.send(sent)
        p.flush()
    err = info.value
    assert [m for m, _ in err.failed] == sent
    assert all(isinstance(e, NotLeaderForPartitionError) for _, e in err.failed)
    text = str(err)
    assert "failed to send 3 message(s)" in text and "b'lost00002'" in text
    assert "NOT_LEADER" in text
    assert reports[0].attempts == 3 and reports[0].error is not None
    assert list(reports[0]) == [(m, -1) for m in sent]
    mini_broker.faults.clear()
    p.close()
    assert read_partition(mini_broker.bootstrap, topic, 0) == []


def test_non_retriable_error_fails_at_once(mini_broker):
    topic = "faults-fatal"
    mini_broker.create_topic(topic, 1)
    mini_broker.faults.inject(PRODUCE, error=10, count=1)  # MESSAGE_TOO_LARGE
    with Producer(_cfg(mini_broker.bootstrap, "sync")) as p:
        with pytest.raises(FailedToSendMessageError) as info:
            p.send(ProducerData(topic, b"x"))
        assert "MESSAGE_TOO_LARGE" in str(info.value)
        assert p.send(ProducerData(topic, b"y"))[0].attempts == 1


def test_leader_moves_to_another_broker(mini_cluster):
    topic = "faults-move"
    leaders = mini_cluster.create_topic(topic, 3)
    reports = []
    with Producer(_cfg(mini_cluster.bootstrap, "async"), on_report=reports.append) as p:
        first = [ProducerData(topic, b"a%d" % i, partition=i % 3) for i in range(30)]
        p.send(first)
        p.flush()
        old = leaders[0]
        new = (old + 1) % 3
        mini_cluster.move_leader(topic, 0, new)
        assert mini_cluster.leaders(topic)[0] == new
        second = [ProducerData(topic, b"b%d" % i, partition=i % 3) for i in range(30)]
        p.send(second)
        p.flush()
    _every_message_reported_once(first + second, reports)
    moved = [r for r in reports if r.partition == 0 and r.messages[0].value.startswith(b"b")]
    assert moved and all(r.ok and r.attempts >= 2 for r in moved)
    assert assert_reports_match_log(mini_cluster.bootstrap, reports) == 60
    assert len(read_partition(mini_cluster.bootstrap, topic, 0)) == 20


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_broker_restarted_within_retry_budget(mini_broker, how):
    """Bounce the only broker while an async producer keeps sending: nothing is lost."""
    topic = f"faults-bounce-{how}"
    mini_broker.create_topic(topic, 2)
    reports = []
    sent = []
    p = Producer(
        _cfg(
            mini_broker.bootstrap,
            "async",
            **{
                "message.send.max.retries": 60,
                "retry.backoff.ms": 100,
                "connect.timeout.ms": 1000,
                "socket.timeout.ms": 2000,
            },
        ),
        on_report=reports.append,
    )
    stop = threading.Event()

    def produce():
        i = 0
        while not stop.is_set():
            batch = [ProducerData(topic, b"x%06d" % (i + j)) for j in range(50)]
            sent.extend(batch)
            p.send(batch)
            i += 50
            time.sleep(0.005)

    t = threading.Thread(target=produce)
    t.start()
    wait_until(lambda: len(reports) >= 2, 20, "acknowledged batches before the bounce")
    getattr(mini_broker, how)()
    wait_until(lambda: p.metrics()["retries"] > 0, 20, "the producer retrying while it is down")
    mini_broker.start()
    before = len(reports)
    wait_until(lambda: len(reports) > before + 2, 30, "batches acknowledged after the restart")
    stop.set()
    t.join()
    p.close()
    _every_message_reported_once(sent, reports)
    assert all(r.ok for r in reports), [r for r in reports if not r.ok][:3]
    assert any(r.attempts > 1 for r in reports)
    assert assert_reports_match_log(mini_broker.bootstrap, reports) == len(sent)


def test_sync_retry_error_types(mini_broker):
    mini_broker.create_topic("faults-types", 1)
    mini_broker.faults.inject(PRODUCE, error=REQUEST_TIMED_OUT, count=5)
    p = Producer(_cfg(mini_broker.bootstrap, "sync", **{"message.send.max.retries": 1}))
    with pytest.raises(FailedToSendMessageError) as info:
        p.send(ProducerData("faults-types", b"x"))
    assert isinstance(info.value.failed[0][1], RequestTimedOutError)
    mini_broker.faults.clear()
    p.close()


def test_periodic_metadata_refresh_finds_a_moved_leader(mini_cluster):
    """With a short topic.metadata.refresh.interval.ms the new leader is known before sending."""
    topic = "faults-refresh"
    leaders = mini_cluster.create_topic(topic, 1)
    with Producer(
        _cfg(mini_cluster.bootstrap, "sync", **{"topic.metadata.refresh.interval.ms": 100})
    ) as p:
        assert p.send(ProducerData(topic, b"before"))[0].attempts == 1
        mini_cluster.move_leader(topic, 0, (leaders[0] + 1) % 3)
        cluster = p.event_handler.cluster  # the refresh is due before the next send
        wait_until(lambda: time.monotonic() - cluster.last_refresh >= 0.1, 10, "refresh due")
        report = p.send(ProducerData(topic, b"after"))[0]
        assert report.ok and report.attempts == 1 and report.base_offset == 1
    other = "faults-norefresh"
    leaders = mini_cluster.create_topic(other, 1)
    with Producer(
        _cfg(mini_cluster.bootstrap, "sync", **{"topic.metadata.refresh.interval.ms": -1})
    ) as p:
        assert p.send(ProducerData(other, b"x"))[0].attempts == 1
        mini_cluster.move_leader(other, 0, (leaders[0] + 1) % 3)  # synchronous
        report = p.send(ProducerData(other, b"y"))[0]
        assert report.ok and report.attempts == 2  # learned from NOT_LEADER, then refreshed
