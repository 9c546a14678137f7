"""Tracing with the OpenTelemetry SDK's in-memory exporter (issue 30): a record produced and
consumed by kclient - threaded and asyncio - is one trace, with the messaging semantic
conventions' attribute names; old names under OTEL_SEMCONV_STABILITY_OPT_IN; errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid

import pytest

from kclient import Consumer, Producer, ProducerData, TopicPartition
from kclient.aio import AIOConsumer, AIOProducer


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def consume(bootstrap: str, topic: str, want: int, traces, on_record=None, **extra) -> list:
    """Iterate a kclient.Consumer (group g-<topic>) until ``want`` records came."""
    got = []
    with Consumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10000,
        fetch_wait_max_ms=50,
        tracer_provider=traces.provider,
        **extra,
    ) as c:
        for r in c:
            got.append(r)
            if on_record is not None:
                on_record(r)
            if len(got) == want:
                break
    return got


def by_id(spans) -> dict:
    return {s.context.span_id: s for s in spans}


def test_threaded_produce_and_consume_is_one_trace(mini_broker, traces):
    topic = topic_name("tr")
    mini_broker.create_topic(topic, partitions=2)
    with traces.tracer.start_as_current_span("POST /orders") as request:
        with Producer(
            bootstrap_servers=mini_broker.bootstrap,
            producer_type="async",
            client_id="orders-api",
            tracer_provider=traces.provider,
        ) as p:
            f = p.produce(topic, b"order-1", key=b"user-1", headers=[("h", b"x")])
            assert f.result(10).offset == 0 or f.result(10).offset >= 0
            p.send(ProducerData(topic, b"order-2", key=b"user-2"))
            p.flush(10)
    sends = traces.spans("send ")
    assert len(sends) == 2
    trace_id = request.get_span_context().trace_id
    for s in sends:
        assert s.kind is traces.SpanKind.PRODUCER and s.name == f"send {topic}"
        assert s.context.trace_id == trace_id and s.parent.span_id == request.context.span_id
        a = s.attributes
        assert a["messaging.system"] == "kafka"
        assert a["messaging.operation.name"] == "send" and a["messaging.operation.type"] == "send"
        assert a["messaging.destination.name"] == topic
        assert a["messaging.destination.partition.id"] in ("0", "1")
        assert isinstance(a["messaging.kafka.offset"], int)
        assert a["messaging.client.id"] == "orders-api"
        assert a["server.address"] == "127.0.0.1" and a["server.port"] == mini_broker.port
        assert a["messaging.kafka.message.key"] in ("user-1", "user-2")
        assert "messaging.operation" not in a and "messaging.kafka.message.offset" not in a

    processed = []

    def work(record) -> None:
        with traces.tracer.start_as_current_span("charge card") as s:
            processed.append((record, s))

    records = consume(mini_broker.bootstrap, topic, 2, traces, on_record=work)
    assert sorted(r.value for r in records) == [b"order-1", b"order-2"]
    first = next(r for r in records if r.value == b"order-1")
    assert ("h", b"x") in first.headers, "the application's own headers are kept"
    assert any(k == "traceparent" for k, _ in first.headers)

    spans = by_id(traces.exporter.get_finished_spans())
    send_of = {s.attributes["messaging.kafka.message.key"]: s for s in sends}
    processes = traces.spans("process ")
    assert len(processes) == 2
    for s in processes:
        a = s.attributes
        assert s.kind is traces.SpanKind.CONSUMER and s.name == f"process {topic}"
        producer_span = send_of[a["messaging.kafka.message.key"]]
        assert s.parent.span_id == producer_span.context.span_id
        assert s.context.trace_id == trace_id, "producer and consumer share one trace"
        assert a["messaging.consumer.group.name"] == f"g-{topic}"
        assert a["messaging.kafka.offset"] == producer_span.attributes["messaging.kafka.offset"]
        assert (
            a["messaging.destination.partition.id"]
            == producer_span.attributes["messaging.destination.partition.id"]
        )
        assert a["messaging.operation.type"] == "process"
    for record, work_span in processed:
        parent = spans[work_span.parent.span_id]
        assert parent.name == f"process {topic}", "the application's span is inside process"
        assert parent.attributes["messaging.kafka.offset"] == record.offset

    polls = traces.spans("poll")
    assert polls, "a poll span per poll that returned records"
    linked = {ln.context.span_id for s in polls for ln in s.links}
    assert linked == {s.context.span_id for s in sends}
    for s in polls:
        assert s.kind is traces.SpanKind.CLIENT
        assert s.attributes["messaging.operation.type"] == "receive"
        assert s.attributes["messaging.batch.message_count"] == len(s.links)


def test_asyncio_produce_and_consume_is_one_trace(mini_broker, traces):
    topic = topic_name("atr")
    mini_broker.create_topic(topic, partitions=1)
    bs = mini_broker.bootstrap

    async def main() -> tuple[list, list]:
        with traces.tracer.start_as_current_span("handler"):
            async with AIOProducer(
                bootstrap_servers=bs, client_id="aio-api", tracer_provider=traces.provider
            ) as p:
                mds = [await p.send(topic, f"m{i}".encode(), key=b"k") for i in range(3)]
        seen = []
        async with AIOConsumer(
            topic,
            bootstrap_servers=bs,
            group_id=f"g-{topic}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            tracer_provider=traces.provider,
        ) as c:
            async for rec in c:
                with traces.tracer.start_as_current_span("work"):
                    seen.append(rec)
                if len(seen) == 2:
                    break
            more = await c.getmany(timeout_ms=5000)
        return mds, seen + [r for rs in more.values() for r in rs]

    mds, seen = asyncio.run(main())
    assert [r.offset for r in seen] == [0, 1, 2] and [m.offset for m in mds] == [0, 1, 2]
    handler = traces.spans("handler")[0]
    sends = traces.spans("send ")
    assert len(sends) == 3
    for s, md in zip(sorted(sends, key=lambda s: s.attributes["messaging.kafka.offset"]), mds):
        assert s.kind is traces.SpanKind.PRODUCER and s.parent.span_id == handler.context.span_id
        assert s.attributes["messaging.kafka.offset"] == md.offset
        assert s.attributes["messaging.destination.partition.id"] == "0"
        assert s.attributes["messaging.client.id"] == "aio-api"
    processes = traces.spans("process ")
    assert len(processes) == 2, "one per record of async for"
    send_ids = {s.context.span_id for s in sends}
    for s in processes:
        assert s.parent.span_id in send_ids and s.context.trace_id == handler.context.trace_id
    work = traces.spans("work")
    assert {w.parent.span_id for w in work} == {p.context.span_id for p in processes}
    polls = traces.spans("poll ")
    assert len(polls) == 1 and len(polls[0].links) == 1, "getmany of the third record"


def test_old_and_duplicated_attribute_names(mini_broker, traces, monkeypatch):
    topic = topic_name("old")
    mini_broker.create_topic(topic, partitions=1)
    for mode, name in (("messaging/old", f"{topic} publish"), ("messaging/dup", f"send {topic}")):
        monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", f"http,{mode}")
        traces.exporter.clear()
        with Producer(
            bootstrap_servers=mini_broker.bootstrap,
            producer_type="sync",
            client_id="c",
            tracer_provider=traces.provider,
        ) as p:
            p.produce(topic, b"v", key=b"k")
        (s,) = traces.exporter.get_finished_spans()
        a = s.attributes
        assert s.name == name
        assert a["messaging.operation"] == "publish"
        assert a["messaging.kafka.destination.partition"] == 0
        assert isinstance(a["messaging.kafka.message.offset"], int)
        assert a["messaging.client_id"] == "c"
        new = (
            "messaging.operation.type",
            "messaging.kafka.offset",
            "messaging.client.id",
            "messaging.destination.partition.id",
        )
        if mode == "messaging/old":
            assert not any(k in a for k in new)
        else:
            assert all(k in a for k in new)
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "messaging/old")
    records = consume(mini_broker.bootstrap, topic, 1, traces)
    assert records
    (proc,) = traces.spans(f"{topic} process")
    assert proc.attributes["messaging.kafka.consumer.group"] == f"g-{topic}"
    (poll,) = traces.spans(f"{topic} receive")
    assert (
        poll.kind is traces.SpanKind.CONSUMER
        and poll.attributes["messaging.operation"] == "receive"
    )


def test_failed_delivery_ends_the_span_with_error_type(mini_broker, traces):
    topic = topic_name("err")
    mini_broker.create_topic(topic, partitions=1)
    with Producer(
        bootstrap_servers=mini_broker.bootstrap,
        producer_type="async",
        message_send_max_retries=0,
        tracer_provider=traces.provider,
    ) as p:
        f = p.produce(topic, b"v", partition=7)
        with pytest.raises(Exception) as info:
            f.result(10)
        with pytest.raises(Exception):
            p.flush(10)
    (s,) = traces.spans("send ")
    assert s.status.status_code is traces.StatusCode.ERROR
    assert (
        s.attributes["error.type"] == type(info.value).__name__
        or s.attributes["error.type"].isupper()
    )
    assert "messaging.kafka.offset" not in s.attributes


def test_no_provider_means_no_tracing_and_no_headers(mini_broker):
    topic = topic_name("off")
    mini_broker.create_topic(topic, partitions=1)
    with Producer(bootstrap_servers=mini_broker.bootstrap, producer_type="async") as p:
        assert p._tracing is None
        p.produce(topic, b"v").result(10)
    c = Consumer(bootstrap_servers=mini_broker.bootstrap, auto_offset_reset="earliest")
    try:
        assert type(c) is Consumer, "an untraced consumer keeps its own class"
        c.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + 10
        recs = []
        while not recs and time.monotonic() < deadline:
            recs = [r for rs in c.poll(200).values() for r in rs]
        assert recs and recs[0].headers == []
    finally:
        c.close()


def test_opentelemetry_absent_is_no_tracing():
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from kclient.observability import provider_from, tracing_for\n"
        "from kclient.config import load_config\n"
        "assert provider_from(None) is None\n"
        "assert tracing_for(load_config('producer', bootstrap_servers='127.0.0.1:1')) is None\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


def test_extract_reads_headers_with_none_values(traces):
    from opentelemetry import trace

    from kclient.observability.tracing import extract

    ctx = extract([("traceparent", None), ("x", b"1")])
    assert not trace.get_current_span(ctx).get_span_context().is_valid


def test_kafka_stream_records_are_processed_in_their_producer_trace(mini_broker, traces):
    from kclient import consumer

    topic = topic_name("st")
    mini_broker.create_topic(topic, partitions=1)
    with Producer(
        bootstrap_servers=mini_broker.bootstrap,
        producer_type="sync",
        tracer_provider=traces.provider,
    ) as p:
        for i in range(3):
            p.produce(topic, f"s{i}".encode())
    conn = consumer.create(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "group.id": "gs",
            "consumer.timeout.ms": 5000,
            "auto.offset.reset": "smallest",
            "auto.commit.enable": False,
            "rebalance.backoff.ms": 200,
            "tracer.provider": traces.provider,
        }
    )
    try:
        (stream,) = conn.create_message_streams({topic: 1})[topic]
        got = [next(stream) for _ in range(2)]  # next(): the first span is ended
        it = iter(stream)
        got.append(next(it))
        it.close()  # and the iterator's at its end
    finally:
        conn.shutdown()
    assert [m.offset for m in got] == [0, 1, 2]
    sends = {s.attributes["messaging.kafka.offset"]: s for s in traces.spans("send ")}
    processes = traces.spans("process ")
    assert len(processes) == 3
    for s in processes:
        producer_span = sends[s.attributes["messaging.kafka.offset"]]
        assert s.parent.span_id == producer_span.context.span_id
        assert s.attributes["messaging.consumer.group.name"] == "gs"


def test_processing_in_a_poll_loop(mini_broker, traces):
    from kclient.observability import processing

    topic = topic_name("pl")
    mini_broker.create_topic(topic, partitions=1)
    with Producer(
        bootstrap_servers=mini_broker.bootstrap,
        producer_type="sync",
        tracer_provider=traces.provider,
    ) as p:
        p.produce(topic, b"v")
    (send,) = traces.spans("send ")
    with (
        Consumer(
            bootstrap_servers=mini_broker.bootstrap,
            auto_offset_reset="earliest",
            tracer_provider=traces.provider,
        ) as c,
        Consumer(bootstrap_servers=mini_broker.bootstrap, auto_offset_reset="earliest") as off,
    ):
        for consumer in (c, off):
            consumer.assign([TopicPartition(topic, 0)])
            recs, deadline = [], time.monotonic() + 10
            while not recs and time.monotonic() < deadline:
                recs = [r for rs in consumer.poll(200).values() for r in rs]
            with processing(consumer, recs[0]) as span:
                assert (span is None) == (consumer is off)
            with pytest.raises(ValueError), processing(consumer, recs[0]):
                raise ValueError("bad record")
    ok, failed = traces.spans("process ")
    assert ok.parent.span_id == failed.parent.span_id == send.context.span_id
    assert failed.status.status_code is traces.StatusCode.ERROR
    assert failed.attributes["error.type"] == "ValueError"


def test_spans_of_messages_a_hook_dropped_are_ended(mini_broker, traces, monkeypatch):
    from kclient import CallbackHandler
    from kclient.observability import clients

    class DropAll(CallbackHandler):
        def before_sending_data(self, messages):
            return []

    monkeypatch.setattr(clients, "MAX_OPEN", 2)
    with Producer(
        bootstrap_servers=mini_broker.bootstrap,
        producer_type="sync",
        callback_handler=DropAll(),
        tracer_provider=traces.provider,
    ) as p:
        for i in range(3):
            p.send(ProducerData(topic_name("drop"), f"v{i}".encode()))
    (ended,) = traces.spans("send ")
    assert ended.attributes["error.type"] == "_NoReport"
    assert ended.status.status_code is traces.StatusCode.ERROR


def test_opt_in_values():
    from kclient.observability.semconv import Names, mode_from_env

    assert mode_from_env(None) == mode_from_env("") == mode_from_env("http,database") == "new"
    assert mode_from_env("messaging") == "new"
    assert mode_from_env(" http/dup , messaging/dup") == "dup"
    assert mode_from_env("messaging/old") == "old"
    assert mode_from_env("messaging/old,messaging/dup") == "dup", "dup keeps both"
    with pytest.raises(ValueError, match="new, dup or old"):
        Names("both")
    old = Names("old").attributes(
        {
            "messaging.operation.type": "send",
            "messaging.kafka.offset": 3,
            "messaging.destination.partition.id": "2",
            "x": None,
        }
    )
    assert old == {
        "messaging.operation": "publish",
        "messaging.kafka.message.offset": 3,
        "messaging.kafka.destination.partition": 2,
    }
