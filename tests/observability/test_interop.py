"""Trace context across clients (issue 30): a kclient producer's trace continued by a
confluent-kafka consumer instrumented with opentelemetry-instrumentation-confluent-kafka, and
the reverse, on the mini-broker.  That instrumentation names spans ``{topic} send`` /
``{topic} process`` and links its process span to the producer's (no parent), as its
semantic conventions version says; kclient makes its process span a child."""

from __future__ import annotations

import time
import uuid

from kclient import Consumer, Producer
from tests.needs import need_module


def instrumentor():
    need_module("confluent_kafka")
    mod = need_module("opentelemetry.instrumentation.confluent_kafka")
    return mod.ConfluentKafkaInstrumentor


def test_kclient_trace_continued_by_instrumented_confluent_consumer(mini_broker, traces):
    import confluent_kafka

    topic = f"ic-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=1)
    with traces.tracer.start_as_current_span("request") as request:
        with Producer(
            bootstrap_servers=mini_broker.bootstrap,
            producer_type="sync",
            tracer_provider=traces.provider,
        ) as p:
            p.produce(topic, b"from-kclient", key=b"k1")
    (send,) = traces.spans("send ")
    assert send.context.trace_id == request.context.trace_id
    raw = confluent_kafka.Consumer(
        {
            "bootstrap.servers": mini_broker.bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c = instrumentor().instrument_consumer(raw, tracer_provider=traces.provider)
    try:
        c.subscribe([topic])
        msg, deadline = None, time.monotonic() + 30
        while msg is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                msg = m
        assert msg is not None and msg.value() == b"from-kclient"
        assert (
            dict(msg.headers())["traceparent"].decode().split("-")[1]
            == f"{send.context.trace_id:032x}"
        )
        c.poll(0.1)  # the instrumentation ends its process span here
    finally:
        c.close()
    (process,) = traces.spans(f"{topic} process")
    assert [ln.context.span_id for ln in process.links] == [send.context.span_id]
    assert process.links[0].context.trace_id == request.context.trace_id


def test_instrumented_confluent_trace_continued_by_kclient(mini_broker, traces):
    import confluent_kafka

    topic = f"ik-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=1)
    raw = confluent_kafka.Producer(
        {"bootstrap.servers": mini_broker.bootstrap, "acks": 1, "enable.idempotence": False}
    )
    p = instrumentor().instrument_producer(raw, tracer_provider=traces.provider)
    with traces.tracer.start_as_current_span("request") as request:
        p.produce(topic, b"from-confluent", key=b"k2")
    assert p.flush(10) == 0
    (send,) = traces.spans(f"{topic} send")
    assert send.context.trace_id == request.context.trace_id
    got = []
    with Consumer(
        topic,
        bootstrap_servers=mini_broker.bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
        tracer_provider=traces.provider,
    ) as c:
        for r in c:
            with traces.tracer.start_as_current_span("handle"):
                got.append(r)
            break
    assert got[0].value == b"from-confluent"
    (process,) = traces.spans(f"process {topic}")
    assert process.parent.span_id == send.context.span_id
    assert process.context.trace_id == request.context.trace_id, "one trace"
    (handle,) = traces.spans("handle")
    assert handle.parent.span_id == process.context.span_id
    (poll,) = traces.spans(f"poll {topic}")
    assert [ln.context.span_id for ln in poll.links] == [send.context.span_id]
