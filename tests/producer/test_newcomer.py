"""Issue 24, producer rows: what a kafka-python / confluent-kafka user types, on a mini-broker."""

from __future__ import annotations

import logging

import pytest

from kclient import FailedToSendMessageError, Producer
from kclient.compat import ClusterMetadata

from .conftest import read_partition


@pytest.fixture
def broker(mini_broker):
    mini_broker.create_topic("t", partitions=1)
    return mini_broker


def test_sync_produce_of_a_failing_message_raises(broker):
    """Row 1: a sync produce() whose message cannot be sent raises, naming why."""
    with Producer(bootstrap_servers=broker.bootstrap) as p:
        with pytest.raises(TypeError, match="DefaultEncoder only passes bytes"):
            p.produce("t", "a str value")
        assert p.stats["failed"] == 1


def test_async_failure_sets_the_future_and_logs_a_warning(broker, caplog):
    """Row 1, async: the future raises and the failure is logged at WARNING; flush raises."""
    p = Producer(bootstrap_servers=broker.bootstrap, producer_type="async")
    with caplog.at_level(logging.WARNING, logger="kclient.producer"):
        fut = p.produce("t", "a str value")
        with pytest.raises(FailedToSendMessageError):
            p.flush(10)
    with pytest.raises(TypeError, match="DefaultEncoder"):
        fut.result(5)
    assert any(
        r.levelno == logging.WARNING and "failed to deliver 1 message" in r.getMessage()
        for r in caplog.records
    )
    p.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_producer_on_delivery_takes_err_and_metadata_per_message(broker, mode):
    """Row 4: Producer(on_delivery=) has produce(on_delivery=)'s signature, once per message."""
    got = []
    with Producer(
        bootstrap_servers=broker.bootstrap,
        producer_type=mode,
        on_delivery=lambda err, md: got.append((err, md.topic, md.offset)),
    ) as p:
        for v in (b"a", b"b", b"c"):
            p.produce("t", v)
        p.flush()
    assert got == [(None, "t", 0), (None, "t", 1), (None, "t", 2)]


def test_one_argument_on_delivery_is_the_batch_report_with_a_deprecation(broker):
    """The 0.1 per-batch hook still works, pointed at its new name on_report."""
    reports, batches = [], []
    with pytest.warns(DeprecationWarning, match="on_report"):
        p = Producer(bootstrap_servers=broker.bootstrap, on_delivery=reports.append)
    with p:
        p.produce("t", b"x")
    with Producer(bootstrap_servers=broker.bootstrap, on_report=batches.append) as p2:
        p2.produce("t", b"y")
    assert [len(r) for r in reports] == [1] and [r.base_offset for r in batches] == [1]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_headers_as_dict_and_str_values(broker, mode):
    """Row 7: headers as a dict or pairs, str values sent as UTF-8."""
    with Producer(bootstrap_servers=broker.bootstrap, producer_type=mode) as p:
        p.produce("t", b"1", headers={"a": "é", "b": b"x", "n": None}).result(10)
        p.produce("t", b"2", headers=[("s", "text")]).result(10)
    recs = read_partition(broker.bootstrap, "t", 0)
    assert [r.headers for r in recs] == [
        [("a", "é".encode()), ("b", b"x"), ("n", None)],
        [("s", b"text")],
    ]


def test_a_bad_header_value_is_a_clear_error(broker):
    with Producer(bootstrap_servers=broker.bootstrap) as p:
        with pytest.raises(TypeError, match="header 'n' has a int value"):
            p.produce("t", b"1", headers={"n": 5})


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_callback_is_an_alias_of_on_delivery_and_timestamp_ms_of_timestamp(broker, mode):
    """Row 8 (confluent's older name) and row 16 (one name for the timestamp)."""
    got = []
    with Producer(bootstrap_servers=broker.bootstrap, producer_type=mode) as p:
        p.produce(
            "t",
            b"v",
            callback=lambda err, md: got.append(md.offset),
            timestamp_ms=1_700_000_000_000,
        ).result(10)
        with pytest.raises(TypeError, match="on_delivery and callback: they are aliases"):
            p.produce("t", b"v", callback=print, on_delivery=repr)
    assert got == [0]
    assert read_partition(broker.bootstrap, "t", 0)[0].timestamp == 1_700_000_000_000


def test_poll_len_and_list_topics(broker):
    """Row 9: confluent's p.poll(0), len(p), p.list_topics()."""
    served = []
    with Producer(
        bootstrap_servers=broker.bootstrap, producer_type="async", queue_buffering_max_ms=50
    ) as p:
        assert len(p) == 0 and bool(p)
        for i in range(5):
            p.produce("t", b"%d" % i, callback=lambda err, md: served.append(md.offset))
        assert len(p) >= 1  # still queued (50 ms linger)
        n = 0
        while n < 5:
            n += p.poll(1.0)
        assert n == 5 and sorted(served) == [0, 1, 2, 3, 4] and len(p) == 0
        assert p.poll(0) == 0
        md = p.list_topics()
        assert isinstance(md, ClusterMetadata) and list(md.topics["t"].partitions) == [0]
        assert md.brokers and p.list_topics("missing").topics["missing"].error_code == 3
    with Producer(bootstrap_servers=broker.bootstrap) as p:
        assert "missing" not in p.list_topics().topics  # list_topics("missing") made none
