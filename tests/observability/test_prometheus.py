"""kclient.metrics.serve_prometheus scraped over HTTP (issue 30): the values match the traffic
the clients made; the families come from the registry metrics() reads."""

from __future__ import annotations

import time
import urllib.request
import uuid

from kclient import Consumer, Producer, TopicPartition
from kclient.metrics import live_snapshots, serve_prometheus
from tests.needs import need_module


def scrape(port: int) -> dict:
    """``{(sample name, frozenset(labels)): value}`` of one scrape."""
    parser = need_module("prometheus_client.parser")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        text = r.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for fam in parser.text_string_to_metric_families(text)
        for s in fam.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    want = set(labels.items())
    hits = [v for (n, ls), v in samples.items() if n == name and want <= ls]
    assert hits, f"no {name} with {labels}: {sorted(n for n, _ in samples)}"
    return sum(hits)


def test_scrape_matches_the_traffic(mini_broker):
    need_module("prometheus_client")
    topic = f"prom-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=2)
    server = serve_prometheus(0)
    try:
        with Producer(
            bootstrap_servers=mini_broker.bootstrap, producer_type="async", client_id="prom-p"
        ) as p:
            for i in range(30):
                p.produce(topic, f"v{i}".encode(), partition=i % 2)
            p.flush(10)
            c = Consumer(
                bootstrap_servers=mini_broker.bootstrap,
                client_id="prom-c",
                group_id="prom-g",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
            )
            try:
                c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
                got, deadline = 0, time.monotonic() + 20
                while got < 25 and time.monotonic() < deadline:
                    got += sum(map(len, c.poll(200, max_records=25 - got).values()))
                assert got == 25
                s = scrape(server.server_port)
            finally:
                c.close()
            after_close = scrape(server.server_port)
    finally:
        server.shutdown()
    for part in ("0", "1"):
        assert (
            value(
                s,
                "messaging_client_sent_messages_total",
                messaging_client_id="prom-p",
                messaging_destination_name=topic,
                messaging_destination_partition_id=part,
            )
            == 15
        )
    consumed = value(
        s,
        "messaging_client_consumed_messages_total",
        messaging_client_id="prom-c",
        messaging_destination_name=topic,
        messaging_consumer_group_name="prom-g",
    )
    assert consumed == 25
    lag = value(
        s, "kclient_consumer_lag", messaging_client_id="prom-c", messaging_destination_name=topic
    )
    assert lag == 30 - 25, "high watermarks 15 + 15, positions add up to 25"
    assert value(s, "kclient_producer_queue_depth", messaging_client_id="prom-p") == 0
    sends = value(
        s,
        "messaging_client_operation_duration_seconds_count",
        messaging_client_id="prom-p",
        messaging_operation_name="send",
    )
    produce_requests = value(
        s, "kclient_client_requests_total", messaging_client_id="prom-p", kafka_api="Produce"
    )
    assert sends == produce_requests >= 1
    assert (
        value(
            s,
            "messaging_client_operation_duration_seconds_bucket",
            messaging_client_id="prom-p",
            messaging_operation_name="send",
            le="+Inf",
        )
        == sends
    )
    assert (
        value(
            s,
            "messaging_client_operation_duration_seconds_count",
            messaging_client_id="prom-c",
            messaging_operation_name="poll",
        )
        >= 1
    )
    assert value(s, "kclient_client_sent_bytes_total", messaging_client_id="prom-p") > 30 * 2
    assert not any(ls >= {("messaging_client_id", "prom-c")} for _, ls in after_close), (
        "a closed client leaves the registry"
    )


def test_live_snapshots_forget_closed_clients(mini_broker):
    p = Producer(
        bootstrap_servers=mini_broker.bootstrap, producer_type="async", client_id="live-check"
    )
    assert any(s.get("client_id") == "live-check" for s in live_snapshots())
    p.close()
    assert not any(s.get("client_id") == "live-check" for s in live_snapshots())
