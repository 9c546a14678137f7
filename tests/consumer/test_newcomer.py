"""Issue 24, kclient.Consumer rows: loud failures and the calls users bring from elsewhere."""

from __future__ import annotations

import logging
import time

import pytest

from kclient import Consumer, Producer, TopicPartition
from kclient.errors import (
    BrokersUnreachableError,
    IllegalStateError,
    KafkaConnectionError,
    NoBrokersAvailableError,
)
from tests.waiting import LOAD_SLACK


def test_unreachable_brokers_warn_at_once_then_raise_naming_them(caplog):
    """Row 2: no more empty polls for ever: a WARNING, then an error naming what was tried."""
    c = Consumer("t", bootstrap_servers="127.0.0.1:1", group_id="g")
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="kclient.consumer"):
        with pytest.raises(BrokersUnreachableError, match=r"tried 127\.0\.0\.1:1") as info:
            c.poll(timeout_ms=1500)
    took = time.monotonic() - start
    assert 1.4 < took < 10, took
    assert isinstance(info.value, KafkaConnectionError)
    assert isinstance(info.value, NoBrokersAvailableError)
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "cannot reach any broker (127.0.0.1:1)" in warned[0].getMessage()
    c.close()


def test_unreachable_for_socket_timeout_raises_even_in_short_polls():
    c = Consumer("t", bootstrap_servers="127.0.0.1:1", group_id="g", socket_timeout_ms=1000)
    start = time.monotonic()
    with pytest.raises(BrokersUnreachableError):
        while time.monotonic() - start < 10:
            c.poll(timeout_ms=0)
    c.close()


@pytest.fixture
def loaded(mini_broker):
    mini_broker.create_topic("kp", partitions=2)
    with Producer(bootstrap_servers=mini_broker.bootstrap) as p:
        for i in range(6):
            p.produce("kp", b"v%d" % i, partition=i % 2)
    return mini_broker


def test_poll_takes_seconds_as_timeout_and_refuses_a_positional_float(loaded):
    """Row 3: poll(timeout=1.0) is seconds; poll(1.0) is refused naming both keywords;
    kafka-python's positional int stays milliseconds."""
    with Consumer(bootstrap_servers=loaded.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([("kp", 0)])
        with pytest.raises(TypeError, match=r"timeout=1\.0\).*timeout_ms=1000\)"):
            c.poll(1.0)
        got = c.poll(timeout=5.0)
        assert [r.value for r in got[TopicPartition("kp", 0)]] == [b"v0", b"v2", b"v4"]
        start = time.monotonic()
        assert c.poll(300) == {} and c.poll(timeout_ms=300) == {}
        assert c.poll(timeout=0.3) == {}
        assert 0.8 < time.monotonic() - start < 0.9 + LOAD_SLACK  # not 300 s
        with pytest.raises(TypeError, match="not both"):
            c.poll(timeout=1, timeout_ms=5)


def test_partition_arguments_take_tuples_and_lists(loaded):
    """Row 5: pause([tp]), seek(("kp", 0), 0), assign/committed/resume with tuples or lists."""
    with Consumer(
        bootstrap_servers=loaded.bootstrap,
        group_id="g5",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    ) as c:
        c.assign(("kp", 0))
        assert c.assignment() == {TopicPartition("kp", 0)}
        c.assign([("kp", 0), TopicPartition("kp", 1)])
        tp0 = TopicPartition("kp", 0)
        c.pause([tp0])
        c.pause(("kp", 1))
        assert c.paused() == {tp0, TopicPartition("kp", 1)}
        assert c.poll(timeout=0.2) == {}
        c.resume([("kp", 0), ("kp", 1)])
        c.seek(("kp", 0), 2)
        records = c.consume(num_messages=10, timeout=5.0)
        assert sorted((r.partition, r.offset) for r in records) == [(0, 2), (1, 0), (1, 1), (1, 2)]
        assert c.committed(("kp", 0)) is None
        assert c.commit(asynchronous=False) is None
        assert c.committed(("kp", 0)) == 3
        assert c.committed([("kp", 0), ("kp", 1)]) == {tp0: 3, TopicPartition("kp", 1): 3}
        c.commit(message=records[0])
        c.commit({("kp", 1): 1}, asynchronous=True).result(10)
        assert c.committed(TopicPartition("kp", 1)) == 1
        with pytest.raises(TypeError, match=r"TopicPartition or a \(topic, partition\) tuple"):
            c.pause("kp")
        with pytest.raises(IllegalStateError, match="not assigned"):
            c.resume(("other", 0))


def test_consume_and_list_topics(loaded):
    """Row 9: confluent's consume(num_messages, timeout) and list_topics()."""
    with Consumer(
        "kp", bootstrap_servers=loaded.bootstrap, group_id="g9", auto_offset_reset="earliest"
    ) as c:
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 6 and time.monotonic() < deadline:
            got += c.consume(num_messages=6, timeout=1.0)
        assert sorted(r.value for r in got) == [b"v%d" % i for i in range(6)]
        assert c.consume(1, timeout=0) == []
        md = c.list_topics("kp")
        assert sorted(md.topics["kp"].partitions) == [0, 1]
        with pytest.raises(ValueError, match="num_messages"):
            c.consume(0)
