"""Producer.metrics() against known traffic (issue 15)."""

from __future__ import annotations

import json
import threading

import pytest

from kclient import Producer, ProducerData
from kclient.errors import FailedToSendMessageError

from .conftest import read_partition


def test_counts_match_the_traffic(mini_broker):
    mini_broker.create_topic("mt", partitions=2)
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "queue.buffering.max.ms": 1000,
        }
    ) as p:
        p.send([ProducerData("mt", b"x" * 10, partition=i % 2) for i in range(100)])
        p.flush()
        for i in range(30):  # three more requests of 10 messages each
            p.produce("mt", b"y" * 20, partition=0)
            if i % 10 == 9:
                p.flush()
        m = p.metrics()
    assert m["type"] == "producer" and m["delivery"] == {
        "acknowledged": 130,
        "failed": 0,
        "batches": 5,
    }
    (broker,) = m["brokers"].values()
    assert broker["requests_by_api"]["Produce"] == 4
    assert broker["requests_by_api"]["Metadata"] >= 1
    assert broker["requests"] == sum(broker["requests_by_api"].values())
    assert broker["responses"] == broker["requests"] and broker["errors"] == 0
    assert broker["state"] == "UP" and broker["connects"] == broker["connections"] == 2
    assert broker["rtt_ms"]["samples"] == broker["responses"]
    assert 0 < broker["rtt_ms"]["p50"] <= broker["rtt_ms"]["p99"]
    p0, p1 = m["partitions"]["mt/0"], m["partitions"]["mt/1"]
    assert (p0["batches"], p0["messages"], p1["batches"], p1["messages"]) == (4, 80, 1, 50)
    assert p0["avg_batch_messages"] == 20.0 and p1["avg_batch_messages"] == 50.0
    # record bytes: what the broker stored for the partition (one batch per request here)
    stored1 = read_partition(mini_broker.bootstrap, "mt", 1)
    assert len(stored1) == 50 and p1["bytes"] > 50 * 10
    assert broker["bytes_out"] > p0["bytes"] + p1["bytes"]
    assert m["queue_depth"] == 0 and p0["in_flight"] == 0
    assert m["retries"] == 0 and m["errors_by_code"] == {}
    assert m["totals"]["requests"] == broker["requests"]
    json.dumps(m)  # JSON-ready, as stats_cb gets it


def test_errors_by_code_and_stats_cb(mini_broker):
    mini_broker.create_topic("me", partitions=1)
    got: list = []
    two = threading.Event()

    def stats(text):
        got.append(json.loads(text))
        if len(got) >= 2:
            two.set()

    p = Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "async",
            "statistics.interval.ms": 50,
            "stats_cb": stats,
        }
    )
    p.produce("me", b"lost", partition=3)
    p.produce("me", b"kept")
    try:
        p.flush()
    except FailedToSendMessageError:
        pass
    assert two.wait(5)
    m = p.metrics()
    p.close()
    assert m["errors_by_code"] == {"UNKNOWN_TOPIC_OR_PARTITION": 1}
    assert m["delivery"]["acknowledged"] == 1 and m["delivery"]["failed"] == 1
    assert got[-1]["type"] == "producer" and "brokers" in got[-1]
    n = len(got)
    two.clear()
    assert not two.wait(0.2) and len(got) == n, "close() stops the stats thread"


def test_a_dead_broker_counts_errors_and_retries(mini_broker):
    mini_broker.create_topic("md", partitions=1)
    p = Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "sync",
            "message.send.max.retries": 2,
            "retry.backoff.ms": 10,
            "connect.timeout.ms": 500,
        }
    )
    p.send(ProducerData("md", b"ok"))
    mini_broker.stop()
    with pytest.raises(FailedToSendMessageError):
        p.send(ProducerData("md", b"lost"))
    m = p.metrics()
    p.close()
    (broker,) = m["brokers"].values()
    assert broker["errors"] >= 1 and broker["disconnects"] >= 1
    assert m["retries"] == 2, m
    assert sum(m["errors_by_code"].values()) == 3, m["errors_by_code"]
