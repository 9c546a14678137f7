"""Share consumers traced (issue 30): a record produced by kclient in a request's trace and
taken from a share group by kclient.ShareConsumer and AIOShareConsumer gives a ``poll`` span
linked to the producer span and a ``process`` span inside the producer's trace."""

from __future__ import annotations

import asyncio
import uuid

from integration.share_scenarios import conf, new_group
from kclient import Producer, ShareConsumer
from kclient.aio import AIOShareConsumer
from tests.waiting import wait_until


def produce_in_a_request(bootstrap: str, topic: str, traces, values: list[bytes]):
    """Send ``values`` inside an application span; the producer's ``send`` spans by key."""
    with traces.tracer.start_as_current_span("POST /jobs") as request:
        with Producer(
            bootstrap_servers=bootstrap, producer_type="async", tracer_provider=traces.provider
        ) as p:
            for v in values:
                p.produce(topic, v, key=v)
            p.flush(10)
    sends = {s.attributes["messaging.kafka.message.key"]: s for s in traces.spans("send ")}
    assert len(sends) == len(values)
    return request.get_span_context().trace_id, sends


def check_spans(traces, topic: str, group: str, trace_id: int, sends: dict) -> None:
    processes = traces.spans("process ")
    assert len(processes) == len(sends)
    for s in processes:
        a = s.attributes
        producer_span = sends[a["messaging.kafka.message.key"]]
        assert s.parent.span_id == producer_span.context.span_id
        assert s.context.trace_id == trace_id, "producer and share consumer share one trace"
        assert a["messaging.consumer.group.name"] == group
        assert a["messaging.destination.name"] == topic
        assert a["messaging.kafka.offset"] == producer_span.attributes["messaging.kafka.offset"]
    polls = traces.spans("poll")
    assert polls, "a poll span per poll that returned records"
    assert {ln.context.span_id for s in polls for ln in s.links} == {
        s.context.span_id for s in sends.values()
    }
    for s in polls:
        assert s.attributes["messaging.operation.type"] == "receive"
        assert s.attributes["messaging.consumer.group.name"] == group


def test_share_consumer_iteration_is_in_the_producers_trace(mini_broker, traces):
    topic = f"str-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, 1)
    group = new_group(mini_broker.bootstrap)
    trace_id, sends = produce_in_a_request(mini_broker.bootstrap, topic, traces, [b"a", b"b"])
    got = []
    with ShareConsumer(
        conf(mini_broker.bootstrap, group, **{"tracer.provider": traces.provider}), topic
    ) as c:
        for record in c:
            got.append(record.value)
            if len(got) == 2:
                break
    assert sorted(got) == [b"a", b"b"]
    check_spans(traces, topic, group, trace_id, sends)


def test_aio_share_consumer_is_in_the_producers_trace(mini_broker, traces):
    topic = f"stra-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, 1)
    group = new_group(mini_broker.bootstrap)
    trace_id, sends = produce_in_a_request(mini_broker.bootstrap, topic, traces, [b"x", b"y"])

    async def main() -> list[bytes]:
        got: list[bytes] = []
        c = AIOShareConsumer(
            conf(mini_broker.bootstrap, group, **{"tracer.provider": traces.provider})
        )
        c.subscribe([topic])
        await c.start()
        try:
            async for record in c:
                got.append(record.value)
                if len(got) == 2:
                    break
        finally:
            await c.close()
        return got

    assert sorted(asyncio.run(asyncio.wait_for(main(), 60))) == [b"x", b"y"]
    wait_until(lambda: len(traces.spans("process ")) == 2, 10, "both process spans ended")
    check_spans(traces, topic, group, trace_id, sends)


def test_untraced_share_consumer_keeps_its_class(mini_broker):
    c = ShareConsumer(conf(mini_broker.bootstrap, "g-untraced"))
    try:
        assert type(c) is ShareConsumer and not hasattr(c, "_tracing")
    finally:
        c.close()
