"""kclient.metrics: the registry's sums and percentiles, the stats_cb thread (issue 15)."""

from __future__ import annotations

import json
import threading

from kclient.errors import KafkaConnectionError
from kclient.metrics import ClientMetrics, ConnectionStats, StatsReporter, error_name, percentile
from kclient.protocol.error_codes import UnknownTopicOrPartitionError


def test_percentiles_by_nearest_rank():
    samples = list(range(1, 101))
    assert percentile(samples, 0.5) == 50 and percentile(samples, 0.99) == 99
    assert percentile([7.0], 0.99) == 7.0 and percentile([], 0.5) is None


def test_connections_sum_per_broker():
    m = ClientMetrics()
    a, b, c = ConnectionStats("h:1", None), ConnectionStats("h:1", 3), ConnectionStats("h:2", 4)
    for s in (a, b, c):
        m.register(s)
    a.requests, a.bytes_out, a.state = 2, 100, "DOWN"
    b.requests, b.responses, b.bytes_in, b.state = 5, 5, 900, "UP"
    b.by_api.update({"Produce": 4, "Metadata": 1})
    a.by_api.update({"Metadata": 2})
    b.rtts.extend([1.0, 2.0, 3.0])
    brokers = m.brokers()
    assert brokers["h:1"]["requests"] == 7 and brokers["h:1"]["node_id"] == 3
    assert brokers["h:1"]["state"] == "UP" and brokers["h:2"]["state"] == "INIT"
    assert brokers["h:1"]["requests_by_api"] == {"Produce": 4, "Metadata": 3}
    assert brokers["h:1"]["rtt_ms"] == {
        "p50": 2.0,
        "p75": 3.0,
        "p90": 3.0,
        "p95": 3.0,
        "p99": 3.0,
        "min": 1.0,
        "max": 3.0,
        "avg": 2.0,
        "samples": 3,
    }
    m.error(UnknownTopicOrPartitionError("x"))
    m.error(KafkaConnectionError("h", 1, "gone"), 2)
    m.retry()
    m.rebalanced()
    snap = m.snapshot(type="t")
    assert snap["errors_by_code"] == {"UNKNOWN_TOPIC_OR_PARTITION": 1, "KafkaConnectionError": 2}
    assert (snap["retries"], snap["rebalances"], snap["type"]) == (1, 1, "t")
    assert snap["totals"]["requests"] == 7 and snap["totals"]["bytes_in"] == 900
    assert error_name(ValueError()) == "ValueError"


def test_stats_reporter_calls_back_with_json():
    got: list = []
    ready = threading.Event()

    def cb(text):
        got.append(json.loads(text))
        if len(got) >= 3:
            ready.set()

    r = StatsReporter(lambda: {"n": len(got)}, cb, 10)
    r.start()
    assert ready.wait(5)
    r.stop()
    assert [g["n"] for g in got[:3]] == [0, 1, 2] and not r.is_alive()
