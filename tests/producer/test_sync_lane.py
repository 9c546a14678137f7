"""The sync producer's one-message lane (kclient/producer/sync_lane.py) on the mini-broker: the
same outcomes as the generic path, and every failure handed to the generic retries."""

from __future__ import annotations

import pytest

from kclient.errors import (
    FailedToSendMessageError,
    MessageSizeTooLargeError,
    UnknownTopicOrPartitionError,
)
from kclient.producer import Producer, ProducerData

from .conftest import assert_reports_match_log, read_partition

PRODUCE = 0
NOT_LEADER = 6
INVALID_RECORD = 87


def _sync(bootstrap: str, on_report=None, **extra: object) -> Producer:
    cfg = {"metadata.broker.list": bootstrap, "producer.type": "sync", "retry.backoff.ms": 20}
    cfg.update(extra)
    return Producer(cfg, on_report=on_report)


@pytest.mark.parametrize(
    "settings",
    [{}, {"api.version.request": False, "broker.version.fallback": "0.10.0"}],  # v9+, v2
    ids=["newest", "produce-v2"],
)
def test_one_message_sends_read_back(mini_broker, settings):
    mini_broker.create_topic("lane", 3)
    with _sync(mini_broker.bootstrap, **settings) as p:
        pinned = [p.send(ProducerData("lane", b"p%d" % i, partition=1))[0] for i in range(5)]
        sticky = [p.send(ProducerData("lane", b"s%d" % i))[0] for i in range(6)]
        lanes = dict(p.event_handler._lanes)
        stats = dict(p.event_handler.partition_stats)
    assert set(lanes) == {("lane", 0), ("lane", 1), ("lane", 2)}  # the lane ran
    assert [r.base_offset for r in pinned] == [0, 1, 2, 3, 4]
    assert all(r.ok and r.attempts == 1 and r.create_time > 0 for r in pinned + sticky)
    assert [m.value for r in pinned for m in r.messages] == [b"p%d" % i for i in range(5)]
    assert sorted(r.partition for r in sticky) == [0, 0, 1, 1, 2, 2]  # rotating, as batches do
    assert assert_reports_match_log(mini_broker.bootstrap, pinned + sticky) == 11
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "lane", 1)][:5] == [
        b"p%d" % i for i in range(5)
    ]
    assert stats[("lane", 1)][:2] == [7, 7]  # requests and messages, as the generic path counts


def test_retriable_error_and_dropped_connection_are_retried(mini_broker):
    mini_broker.create_topic("lane-retry", 1)
    with _sync(mini_broker.bootstrap) as p:
        p.send(ProducerData("lane-retry", b"first", partition=0))  # the lane is set up
        mini_broker.faults.inject(PRODUCE, error=NOT_LEADER, count=2)
        (retried,) = p.send(ProducerData("lane-retry", b"second", partition=0))
        mini_broker.faults.drop_connection(PRODUCE, count=1)
        (reconnected,) = p.send(ProducerData("lane-retry", b"third"))
        (after,) = p.send(ProducerData("lane-retry", b"fourth", partition=0))
    assert retried.ok and retried.attempts == 3 and retried.base_offset == 1
    assert reconnected.ok and reconnected.attempts == 2 and reconnected.base_offset == 2
    assert after.ok and after.attempts == 1 and after.base_offset == 3
    values = [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "lane-retry", 0)]
    assert values == [b"first", b"second", b"third", b"fourth"]


def test_errors_fail_as_on_the_generic_path(mini_broker):
    mini_broker.create_topic("lane-fail", 2)
    reports = []
    with _sync(mini_broker.bootstrap, on_report=reports.append) as p:
        p.send(ProducerData("lane-fail", b"ok", partition=0))
        mini_broker.faults.inject(PRODUCE, error=INVALID_RECORD, count=1)
        with pytest.raises(FailedToSendMessageError) as refused:
            p.send(ProducerData("lane-fail", b"refused", partition=0))
        with pytest.raises(FailedToSendMessageError) as unknown:
            p.send(ProducerData("lane-fail", b"nowhere", partition=7))
        assert p.stats == {"acknowledged": 1, "failed": 2, "batches": 3}
    ((msg, exc),) = refused.value.failed
    assert msg.value == b"refused" and "partition 0" in str(exc) and exc.errno == INVALID_RECORD
    assert reports[1].attempts == 1 and reports[1].messages[0].value == b"refused"
    assert isinstance(unknown.value.failed[0][1], UnknownTopicOrPartitionError)
    values = [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "lane-fail", 0)]
    assert values == [b"ok"]


def test_a_value_over_message_max_bytes_is_refused_before_it_is_sent(mini_broker):
    """The lane skips the generic preparation; the face's size check still comes first."""
    mini_broker.create_topic("lane-big", 1)
    with _sync(mini_broker.bootstrap, **{"message.max.bytes": 1000}) as p:
        p.send(ProducerData("lane-big", b"small", partition=0))  # the lane is set up
        with pytest.raises(MessageSizeTooLargeError, match="message.max.bytes"):
            p.send(ProducerData("lane-big", b"x" * 1001, partition=0))
        assert p.stats["batches"] == 1  # no Produce request went out for it
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "lane-big", 0)] == [
        b"small"
    ]
