"""Delivery reports in sync and async mode, acks 0/1/-1, close draining, interpreter exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kclient.errors import (
    FailedToSendMessageError,
    InvalidConfigError,
    MessageSizeTooLargeError,
    UnknownTopicOrPartitionError,
)
from kclient.producer import DeliveryReport, Producer, ProducerData, RecordMetadata

from ..waiting import LOAD_SLACK
from .conftest import assert_reports_match_log, read_partition

ROOT = Path(__file__).resolve().parents[2]


def test_sync_send_returns_acknowledged_offsets(mini_broker):
    mini_broker.create_topic("d-sync", 1)
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        r1 = p.send(ProducerData("d-sync", b"one"))
        r2 = p.send([ProducerData("d-sync", b"two"), ProducerData("d-sync", b"three")])
    assert [(r.partition, r.base_offset, len(r)) for r in r1 + r2] == [(0, 0, 1), (0, 1, 2)]
    assert list(r2[0].offsets) == [1, 2]
    assert [o for _, o in r2[0]] == [1, 2]
    assert r2[0].metadata() == [RecordMetadata("d-sync", 0, 1), RecordMetadata("d-sync", 0, 2)]
    assert assert_reports_match_log(mini_broker.bootstrap, r1 + r2) == 3


def test_async_reports_cover_every_message(mini_broker):
    mini_broker.create_topic("d-async", 4)
    reports: list[DeliveryReport] = []
    sent = [ProducerData("d-async", b"v%d" % i, key=b"k%d" % (i % 13)) for i in range(2000)]
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "batch.num.messages": 300,
        },
        on_report=reports.append,
    ) as p:
        for m in sent[:1000]:
            p.send(m)
        p.send(sent[1000:])
        p.flush()
        assert p.queued == 0
        assert p.stats["acknowledged"] == 2000 and p.stats["failed"] == 0
    # every message in exactly one report (reports rebuild equal ProducerData objects)
    assert sorted(m.value for r in reports for m in r.messages) == sorted(m.value for m in sent)
    assert all(m in sent for m in reports[0].messages)
    from kclient.partitioner import murmur2

    assert {r.partition for r in reports} == {
        (murmur2(b"k%d" % i) & 0x7FFFFFFF) % 4 for i in range(13)
    }
    assert assert_reports_match_log(mini_broker.bootstrap, reports) == 2000
    # keyed messages keep their per-key order in their partition
    for r in reports:
        assert r.ok and r.base_offset >= 0


@pytest.mark.parametrize("acks", [0, 1, -1, "all"])
def test_acks(mini_broker, acks):
    topic = f"d-acks-{acks}"
    mini_broker.create_topic(topic, 1)
    with Producer({"metadata.broker.list": mini_broker.bootstrap, "acks": acks}) as p:
        reports = p.send([ProducerData(topic, b"a"), ProducerData(topic, b"b")])
    if acks == 0:
        assert reports[0].ok and reports[0].base_offset == -1 and list(reports[0].offsets) == []
        deadline = time.monotonic() + 5
        while len(read_partition(mini_broker.bootstrap, topic, 0)) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    else:
        assert reports[0].base_offset == 0
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, topic, 0)] == [b"a", b"b"]


def test_close_drains_a_lingering_queue(mini_broker):
    mini_broker.create_topic("d-drain", 1)
    reports = []
    p = Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "queue.buffering.max.ms": 60000,
            "batch.num.messages": 100000,
        },
        on_report=reports.append,
    )
    for i in range(5000):
        p.send(ProducerData("d-drain", b"%d" % i))
    assert read_partition(mini_broker.bootstrap, "d-drain", 0) == []  # still lingering
    start = time.monotonic()
    p.close()
    assert time.monotonic() - start < 10
    assert sum(len(r) for r in reports) == 5000
    assert len(read_partition(mini_broker.bootstrap, "d-drain", 0)) == 5000
    p.close()  # idempotent


def test_flush_skips_the_linger(mini_broker):
    mini_broker.create_topic("d-flush", 1)
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "queue.buffering.max.ms": 60000,
        }
    ) as p:
        p.send(ProducerData("d-flush", b"x"))
        start = time.monotonic()
        p.flush()
        assert time.monotonic() - start < LOAD_SLACK  # not the 60 s linger
        assert len(read_partition(mini_broker.bootstrap, "d-flush", 0)) == 1


def test_linger_sends_without_flush(mini_broker):
    mini_broker.create_topic("d-linger", 1)
    reports = []
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "queue.buffering.max.ms": 100,
        },
        on_report=reports.append,
    ) as p:
        p.send(ProducerData("d-linger", b"x"))
        deadline = time.monotonic() + 5
        while not reports:
            assert time.monotonic() < deadline
            time.sleep(0.01)


_EXIT_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from kclient.producer import Producer, ProducerData
    p = Producer({{"metadata.broker.list": {bootstrap!r}, "producer.type": "async",
                  "queue.buffering.max.ms": 60000, "batch.num.messages": 100000}})
    p.send([ProducerData({topic!r}, b"%d" % i) for i in range(3000)])
    for i in range(2000):
        p.send(ProducerData({topic!r}, b"single%d" % i))
    {ending}
""")


@pytest.mark.parametrize("ending", ["p.close()", "pass", "sys.exit(0)"])
def test_nothing_lost_at_interpreter_exit(mini_broker, ending):
    topic = "d-exit-" + {"p.close()": "close", "pass": "atexit", "sys.exit(0)": "sysexit"}[ending]
    mini_broker.create_topic(topic, 1)
    script = _EXIT_SCRIPT.format(
        root=str(ROOT), bootstrap=mini_broker.bootstrap, topic=topic, ending=ending
    )
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60, env=env)
    assert len(read_partition(mini_broker.bootstrap, topic, 0)) == 5000


def test_flush_raises_failures_once(mini_broker):
    mini_broker.create_topic("d-fail", 1)
    mini_broker.faults.inject(0, error=10, count=1)  # MESSAGE_TOO_LARGE, not retriable
    with Producer({"metadata.broker.list": mini_broker.bootstrap, "producer.type": "async"}) as p:
        p.send(ProducerData("d-fail", b"bad"))
        with pytest.raises(FailedToSendMessageError) as info:
            p.flush()
        assert info.value.failed[0][0].value == b"bad"
        p.send(ProducerData("d-fail", b"good"))
        p.flush()  # the earlier failure is not raised twice
        assert p.stats["failed"] == 1 and p.stats["acknowledged"] == 1


def test_oversize_message_fails_before_queueing(mini_broker):
    mini_broker.create_topic("d-big", 1)
    for mode in ("sync", "async"):
        with Producer(
            {
                "metadata.broker.list": mini_broker.bootstrap,
                "producer.type": mode,
                "message.max.bytes": 1000,
            }
        ) as p:
            with pytest.raises(MessageSizeTooLargeError, match="message.max.bytes"):
                p.send(ProducerData("d-big", b"x" * 1001))
            with pytest.raises(MessageSizeTooLargeError):
                p.send([ProducerData("d-big", b"ok"), ProducerData("d-big", "é" * 600)])
            with pytest.raises(MessageSizeTooLargeError):
                p.send(ProducerData("d-big", b"x" * 600, key=b"k" * 600))
            assert p.queued == 0
    assert read_partition(mini_broker.bootstrap, "d-big", 0) == []


def test_oversize_after_serialization_is_reported(mini_broker):
    mini_broker.create_topic("d-json", 1)
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "message.max.bytes": 100,
            "serializer.class": "json",
        }
    ) as p:
        with pytest.raises(FailedToSendMessageError) as info:
            p.send([ProducerData("d-json", {"a": 1}), ProducerData("d-json", {"b": "x" * 200})])
        assert len(info.value.failed) == 1
        assert isinstance(info.value.failed[0][1], MessageSizeTooLargeError)
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "d-json", 0)] == [
        b'{"a":1}'
    ]


def test_serialization_error_fails_only_that_message(mini_broker):
    mini_broker.create_topic("d-ser", 1)
    with Producer(
        {"metadata.broker.list": mini_broker.bootstrap, "serializer.class": "string"}
    ) as p:
        with pytest.raises(FailedToSendMessageError) as info:
            p.send([ProducerData("d-ser", "ok"), ProducerData("d-ser", 42)])
        assert [m.value for m, _ in info.value.failed] == [42]
        assert isinstance(info.value.failed[0][1], TypeError)
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, "d-ser", 0)] == [b"ok"]


def test_unknown_topic_fails_after_the_propagation_wait(tmp_path):
    from kclient.broker import MiniBroker

    with MiniBroker(log_dir=tmp_path, config={"auto.create.topics.enable": "false"}) as b:
        with Producer(
            {
                "metadata.broker.list": b.bootstrap,
                "retry.backoff.ms": 10,
                "message.send.max.retries": 2,
                "topic.metadata.propagation.max.ms": 300,
            }
        ) as p:
            started = time.monotonic()
            with pytest.raises(FailedToSendMessageError) as info:
                p.send(ProducerData("nope", b"x"))
            assert time.monotonic() - started >= 0.3  # waited for the topic, beyond 2 retries
            assert isinstance(info.value.failed[0][1], UnknownTopicOrPartitionError)
            assert "nope" in str(info.value)


def test_explicit_partition_and_bad_partition(mini_broker):
    mini_broker.create_topic("d-part", 3)
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        r = p.send(ProducerData("d-part", b"x", partition=2))
        assert r[0].partition == 2
        with pytest.raises(FailedToSendMessageError, match="partition 7"):
            p.send(ProducerData("d-part", b"y", partition=7))


def test_headers_and_timestamps(mini_broker):
    mini_broker.create_topic("d-headers", 1)
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        p.send(
            [
                ProducerData("d-headers", b"a", timestamp=1234567, headers=[("h", b"1")]),
                ProducerData("d-headers", b"b", key=b"k"),
            ]
        )
    a, b = read_partition(mini_broker.bootstrap, "d-headers", 0)
    assert a.timestamp == 1234567 and [(k, bytes(v)) for k, v in a.headers] == [("h", b"1")]
    assert bytes(b.key) == b"k" and b.timestamp > 1234567


def test_null_value_tombstone(mini_broker):
    mini_broker.create_topic("d-null", 1)
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        p.send(ProducerData("d-null", None, key=b"gone"))
    rec = read_partition(mini_broker.bootstrap, "d-null", 0)[0]
    assert rec.value is None and bytes(rec.key) == b"gone"


def test_config_errors_at_construction():
    with pytest.raises(InvalidConfigError, match="producer.typ"):
        Producer({"metadata.broker.list": "127.0.0.1:9092", "producer.typ": "async"})
    with pytest.raises(InvalidConfigError) as info:
        Producer({"metadata.broker.list": "127.0.0.1:9092", "producer.type": "fast"})
    assert info.value.key == "producer.type" and "async" in str(info.value)
    with pytest.raises(InvalidConfigError, match="metadata.broker.list"):
        Producer({})
    with pytest.raises(TypeError):
        Producer({"metadata.broker.list": "127.0.0.1:9092"}).send("not a message")


def test_overrides_and_aliases(mini_broker):
    mini_broker.create_topic("d-alias", 1)
    with Producer(
        {"bootstrap.servers": mini_broker.bootstrap},
        producer_type="async",
        queue_time=1,
        batch_num_messages=10,
        batch_size=4096,
    ) as p:
        assert p.config["queue.buffering.max.ms"] == 1
        assert p.config["batch.num.messages"] == 10
        assert p.config["batch.size"] == 4096, "bytes, no longer 0.7's count (issue 15)"
        assert not p.sync
        p.send([ProducerData("d-alias", b"%d" % i) for i in range(25)])
    assert len(read_partition(mini_broker.bootstrap, "d-alias", 0)) == 25


def test_list_send_validation(mini_broker):
    mini_broker.create_topic("d-validate", 1)

    class Mine(ProducerData):
        __slots__ = ()

    topic_a = "d-validate"
    topic_b = "".join(["d-", "validate"])  # equal, but another str object
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "message.max.bytes": 100,
        }
    ) as p:
        with pytest.raises(TypeError, match="ProducerData"):
            p.send([ProducerData(topic_a, b"ok"), b"raw bytes"])
        with pytest.raises(MessageSizeTooLargeError):
            p.send([ProducerData(topic_a, b"ok"), ProducerData(topic_a, b"x" * 101)])
        assert p.queued == 0
        p.send(
            [
                ProducerData(topic_a, b"1"),
                ProducerData(topic_b, b"2"),
                Mine(topic_a, b"3"),
                ProducerData(topic_a, "4"),
                ProducerData(topic_a, b"5", key=b"k"),
            ]
        )
        p.send(Mine(topic_a, b"6"))
        with pytest.raises(FailedToSendMessageError) as info:
            p.flush()  # "4" is a str: the default encoder takes bytes only
        assert [m.value for m, _ in info.value.failed] == ["4"]
    assert [bytes(r.value) for r in read_partition(mini_broker.bootstrap, topic_a, 0)] == [
        b"1",
        b"2",
        b"3",
        b"5",
        b"6",
    ]


def test_send_values_queues_plain_values_without_producer_data(mini_broker):
    mini_broker.create_topic("d-values", 2)
    reports: list[DeliveryReport] = []
    values = [b"v%d" % i for i in range(2500)]
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "batch.num.messages": 1000,
        },
        on_report=reports.append,
    ) as p:
        assert p.send_values("d-values", values) is None
        p.send_values("d-values", [b"tomb", None])  # not all bytes: goes through send()
        p.flush()
        assert p.stats["acknowledged"] == 2502
    got = [
        r.value for part in (0, 1) for r in read_partition(mini_broker.bootstrap, "d-values", part)
    ]
    assert sorted(got, key=lambda v: (v is None, v)) == sorted(
        values + [b"tomb"], key=lambda v: v
    ) + [None]
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as sync:
        sent = sync.send_values("d-values", [b"s1", b"s2"])
        assert sum(len(r) for r in sent) == 2
    with pytest.raises(MessageSizeTooLargeError):
        with Producer(
            {
                "metadata.broker.list": mini_broker.bootstrap,
                "producer.type": "async",
                "message.max.bytes": 10,
            }
        ) as small:
            small.send_values("d-values", [b"x" * 20])
