"""The mini-broker's request metrics (issue 30): per API requests, errors, bytes, latency and
connections, in MiniBroker.metrics() and through the Prometheus endpoint of `kclient broker
--prometheus-port`, scraped over HTTP."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request

from kclient import Producer
from kclient.protocol.apis import HEARTBEAT
from tests.needs import need_module

from .test_prometheus import value


def test_request_metrics_count_what_was_asked(mini_broker, raw_client):
    mini_broker.create_topic("bm", partitions=1)
    before = mini_broker.metrics()["apis"].get("Produce", {"requests": 0})["requests"]
    with Producer(bootstrap_servers=mini_broker.bootstrap, producer_type="sync") as p:
        for _ in range(4):
            p.produce("bm", b"v" * 100)
    c = raw_client(mini_broker.bootstrap)
    answer = c.request(HEARTBEAT, 0, {"group_id": "nobody", "generation_id": 1, "member_id": "m"})
    assert answer.error_code != 0
    m = mini_broker.metrics()
    assert m["type"] == "broker" and m["node_id"] == mini_broker.node_id
    produce = m["apis"]["Produce"]
    assert produce["requests"] - before == 4 and produce["errors"] == 0
    assert produce["bytes_in"] > 4 * 100 and produce["bytes_out"] > 0
    assert produce["latency"]["count"] == produce["requests"]
    assert sum(produce["latency"]["buckets"]) == produce["requests"]
    assert 0 < produce["latency"]["sum"] < 10
    assert m["apis"]["Heartbeat"] == {**m["apis"]["Heartbeat"], "requests": 1, "errors": 1}
    assert m["connections_accepted"] >= 2 and m["connections"] >= 1


def test_kclient_broker_prometheus_port(tmp_path):
    need_module("prometheus_client")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kclient.cli",
            "broker",
            "--log-dir",
            str(tmp_path / "b"),
            "--port",
            "0",
            "--prometheus-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
        bootstrap = re.search(r"listening on (\S+)", lines[0]).group(1)
        url = re.search(r"Prometheus at (\S+)", lines[1]).group(1)
        with Producer(bootstrap_servers=bootstrap, producer_type="sync") as p:
            for _ in range(3):
                p.produce("auto", b"x")
        parser = need_module("prometheus_client.parser")
        deadline = time.monotonic() + 10
        while True:
            with urllib.request.urlopen(url, timeout=10) as r:
                text = r.read().decode()
            s = {
                (x.name, frozenset(x.labels.items())): x.value
                for f in parser.text_string_to_metric_families(text)
                for x in f.samples
            }
            if (
                value(s, "kclient_broker_connections_accepted_total") >= 1
                or time.monotonic() > deadline
            ):
                break
        assert value(s, "kclient_broker_requests_total", kafka_api="Produce") == 3
        assert value(s, "kclient_broker_request_duration_seconds_count", kafka_api="Produce") == 3
        assert value(s, "kclient_broker_received_bytes_total", kafka_api="Produce") > 3 * 50
        assert value(s, "kclient_broker_request_errors_total", kafka_api="Produce") == 0
    finally:
        proc.terminate()
        proc.wait(20)


def test_kclient_perf_prometheus_port(cli, mini_broker):
    need_module("prometheus_client")
    mini_broker.create_topic("pp", partitions=1)
    done = cli("perf", "produce", "pp", "-n", "200", "--prometheus-port", "0", check=0)
    assert re.search(rb"metrics for Prometheus at http://127\.0\.0\.1:\d+/metrics", done.stderr)
    assert b"200 records sent" in done.stdout
