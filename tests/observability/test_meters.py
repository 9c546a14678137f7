"""OpenTelemetry metrics from the registry (kclient.metrics.instrument_meter), read with the
SDK's in-memory reader; process durations from process spans reach the registry."""

from __future__ import annotations

import uuid

import pytest

import kclient.metrics as km
from kclient import Consumer, Producer
from tests.needs import need_module


@pytest.fixture
def reader():
    sdk = need_module("opentelemetry.sdk.metrics")
    export = need_module("opentelemetry.sdk.metrics.export")
    r = export.InMemoryMetricReader()
    provider = sdk.MeterProvider(metric_readers=[r])
    km.instrument_meter(provider)
    yield r
    km._SINK = km._PROCESS_SINK = None  # later clients of this process record nothing
    provider.shutdown()


def points(reader) -> dict:
    """``{metric name: [data point]}`` of one collection."""
    out: dict = {}
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out.setdefault(m.name, []).extend(m.data.data_points)
    return out


def test_semantic_convention_metrics(mini_broker, reader, traces):
    topic = f"m-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=1)
    with Producer(
        bootstrap_servers=mini_broker.bootstrap, producer_type="sync", client_id="mp"
    ) as p:
        for i in range(5):
            p.produce(topic, f"v{i}".encode())
        got = points(reader)
    sent = [
        d
        for d in got["messaging.client.sent.messages"]
        if d.attributes["messaging.destination.name"] == topic
    ]
    assert [d.value for d in sent] == [5]
    assert sent[0].attributes["messaging.client.id"] == "mp"
    durations = [
        d
        for d in got["messaging.client.operation.duration"]
        if d.attributes["messaging.operation.name"] == "send"
        and d.attributes["server.port"] == mini_broker.port
    ]
    assert sum(d.count for d in durations) == 5, "one Produce request per sync send"
    processed = []
    with Consumer(
        topic,
        bootstrap_servers=mini_broker.bootstrap,
        group_id="mg",
        client_id="mc",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
        tracer_provider=traces.provider,
    ) as c:
        for r in c:
            processed.append(r)
            if len(processed) == 5:
                break
        got = points(reader)
        snap = c.metrics()
    consumed = [
        d
        for d in got["messaging.client.consumed.messages"]
        if d.attributes["messaging.destination.name"] == topic
    ]
    assert sum(d.value for d in consumed) == 5
    assert consumed[0].attributes["messaging.consumer.group.name"] == "mg"
    lag = [
        d
        for d in got["kclient.consumer.lag"]
        if d.attributes["messaging.destination.name"] == topic
    ]
    assert [d.value for d in lag] == [0]
    assert snap["process_seconds"][topic]["count"] == 5, (
        "leaving the loop ended the last record's process span"
    )
    (proc,) = [
        d
        for d in points(reader)["messaging.process.duration"]
        if d.attributes["messaging.destination.name"] == topic
    ]
    assert proc.count == 5 and proc.sum == pytest.approx(snap["process_seconds"][topic]["sum"])
