"""statistics.format=librdkafka: stats_cb gets librdkafka's STATISTICS.md layout (issue 30),
with values matching the traffic."""

from __future__ import annotations

import json
import threading
import time
import uuid

from kclient import Consumer, Producer, TopicPartition


def collector():
    docs, got = [], threading.Event()

    def cb(text: str) -> None:
        docs.append(json.loads(text))
        got.set()

    return docs, got, cb


def latest(docs, pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in reversed(list(docs)):
            if pred(d):
                return d
        time.sleep(0.05)
    raise AssertionError(f"no statistics matched; last: {docs[-1] if docs else None}")


def test_producer_and_consumer_statistics_in_librdkafka_layout(mini_broker):
    topic = f"st-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=2)
    docs, _, cb = collector()
    with Producer(
        bootstrap_servers=mini_broker.bootstrap,
        producer_type="async",
        client_id="stats-p",
        statistics_interval_ms=50,
        stats_cb=cb,
        statistics_format="librdkafka",
    ) as p:
        for i in range(20):
            p.produce(topic, b"x" * 10, partition=i % 2)
        p.flush(10)
        d = latest(docs, lambda d: d.get("txmsgs") == 20)
    assert d["type"] == "producer" and d["client_id"] == "stats-p"
    assert d["name"].startswith("stats-p#producer-")
    assert d["msg_cnt"] == 0 and d["tx"] >= 2 and d["tx_bytes"] > 200 and 2 <= d["rx"] <= d["tx"]
    assert isinstance(d["ts"], int) and d["age"] > 0 and abs(d["time"] - time.time()) < 60
    (broker,) = [b for b in d["brokers"].values() if b["nodeid"] >= 0]
    assert broker["nodename"] == mini_broker.bootstrap and broker["state"] == "UP"
    assert broker["req"]["Produce"] >= 1 and 1 <= broker["rtt"]["cnt"] <= broker["rx"]
    assert 0 < broker["rtt"]["min"] <= broker["rtt"]["p50"] <= broker["rtt"]["max"]
    parts = d["topics"][topic]["partitions"]
    assert {k: v["txmsgs"] for k, v in parts.items()} == {"0": 10, "1": 10}
    assert d["txmsg_bytes"] == sum(v["txbytes"] for v in parts.values()) > 0

    docs, _, cb = collector()
    c = Consumer(
        bootstrap_servers=mini_broker.bootstrap,
        group_id="stats-g",
        client_id="stats-c",
        auto_offset_reset="earliest",
        statistics_interval_ms=50,
        stats_cb=cb,
        statistics_format="librdkafka",
    )
    try:
        c.assign([TopicPartition(topic, 0)])
        n, deadline = 0, time.monotonic() + 10
        while n < 6 and time.monotonic() < deadline:
            n += sum(map(len, c.poll(200, max_records=6 - n).values()))
        d = latest(docs, lambda d: d.get("rxmsgs") == 6)
    finally:
        c.close(autocommit=False)
    p0 = d["topics"][topic]["partitions"]["0"]
    assert d["type"] == "consumer"
    assert (p0["app_offset"], p0["hi_offset"], p0["consumer_lag"]) == (6, 10, 4)
    assert p0["committed_offset"] == -1001
    assert d["cgrp"]["assignment_size"] == 1


def test_default_layout_is_kclients(mini_broker):
    docs, got, cb = collector()
    with Producer(bootstrap_servers=mini_broker.bootstrap, statistics_interval_ms=20, stats_cb=cb):
        assert got.wait(5)
    assert docs[0]["type"] == "producer" and "delivery" in docs[0] and "txmsgs" not in docs[0]
