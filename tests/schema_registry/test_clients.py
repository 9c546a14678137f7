"""Registry serdes plugged into kclient's clients the way encoders and decoders are:
Producer / AIOProducer ``value.serializer`` (bound to each topic, so each topic gets its
subject), kclient.Consumer / AIOConsumer ``value.deserializer``; confluent-kafka's serializers
on the other side of each."""

import asyncio
import json

from confluent_kafka.schema_registry import SchemaRegistryClient as CClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CAvroSerializer
from confluent_kafka.serialization import MessageField as CField
from confluent_kafka.serialization import SerializationContext as CContext

from kclient import Consumer, Producer
from kclient.aio import AIOConsumer, AIOProducer
from kclient.schema_registry import SchemaRegistryClient
from kclient.schema_registry.avro import AvroDeserializer, AvroSerializer
from kclient.simple import FetchRequest, SimpleConsumer

EVENT = json.dumps(
    {
        "type": "record",
        "name": "Event",
        "fields": [{"name": "id", "type": "long"}, {"name": "what", "type": "string"}],
    }
)
KEY = json.dumps({"type": "record", "name": "Key", "fields": [{"name": "k", "type": "string"}]})


def raw(bootstrap, topic):
    host, port = bootstrap.split(":")
    with SimpleConsumer(host, int(port), client_id="t") as c:
        return [mo.message for mo in c.fetch(FetchRequest(topic, 0, 0, 1 << 20))]


def test_producer_and_consumer(registry):
    sr = SchemaRegistryClient(registry.schema_registry_url)
    csr = CClient({"url": registry.schema_registry_url})
    for topic in ("a", "b"):
        registry.create_topic(topic)
    events = [{"id": i, "what": f"e{i}"} for i in range(5)]
    ser = AvroSerializer(sr, EVENT)
    with Producer(
        bootstrap_servers=registry.bootstrap,
        value_serializer=ser,
        key_serializer=AvroSerializer(sr, KEY).as_key(),
    ) as p:
        for e in events:
            p.produce("a", e, key={"k": str(e["id"])})
            p.produce("b", e, key={"k": "b"})
    assert sorted(csr.get_subjects()) == ["a-key", "a-value", "b-key", "b-value"]
    cde, cctx = CAvroDeserializer(csr), CContext("a", CField.VALUE)
    assert [cde(m.value, cctx) for m in raw(registry.bootstrap, "a")] == events
    cser = CAvroSerializer(csr, EVENT)
    assert raw(registry.bootstrap, "b")[0].value == cser(events[0], CContext("b", CField.VALUE))
    with Consumer(
        "a",
        bootstrap_servers=registry.bootstrap,
        group_id="g",
        auto_offset_reset="earliest",
        value_deserializer=AvroDeserializer(sr),
        key_deserializer=AvroDeserializer(sr),
    ) as c:
        got = []
        while len(got) < 5:
            for records in c.poll(timeout_ms=1000, max_records=10).values():
                got += records
    assert [r.value for r in got] == events
    assert [r.key for r in got] == [{"k": str(i)} for i in range(5)]


def test_asyncio_producer_and_consumer(registry):
    sr = SchemaRegistryClient(registry.schema_registry_url)
    registry.create_topic("c")
    events = [{"id": i, "what": "x" * i} for i in range(4)]

    async def run():
        async with AIOProducer(
            bootstrap_servers=registry.bootstrap, value_serializer=AvroSerializer(sr, EVENT)
        ) as p:
            for e in events:
                await p.send("c", e)
        out = []
        async with AIOConsumer(
            "c",
            bootstrap_servers=registry.bootstrap,
            group_id="g2",
            auto_offset_reset="earliest",
            value_deserializer=AvroDeserializer(sr),
        ) as c:
            async for record in c:
                out.append(record.value)
                if len(out) == len(events):
                    break
        return out

    assert asyncio.run(run()) == events
    csr = CClient({"url": registry.schema_registry_url})
    assert csr.get_subjects() == ["c-value"]
    cde = CAvroDeserializer(csr)
    assert [
        cde(m.value, CContext("c", CField.VALUE)) for m in raw(registry.bootstrap, "c")
    ] == events


def test_unbound_use_is_refused(registry):
    import pytest

    from kclient.schema_registry import (
        AsyncSchemaRegistryClient,
        SerializationContext,
        SerializationError,
    )

    sr = SchemaRegistryClient(registry.schema_registry_url)
    with pytest.raises(SerializationError, match="needs the topic"):
        AvroSerializer(sr, EVENT).to_message({"id": 1, "what": ""})
    aio = AsyncSchemaRegistryClient(registry.schema_registry_url)
    with pytest.raises(SerializationError, match="serialize_async"):
        AvroSerializer(aio, EVENT)({"id": 1, "what": ""}, SerializationContext("t"))


def test_connector_streams_decode(registry):
    from kclient import consumer

    sr = SchemaRegistryClient(registry.schema_registry_url)
    registry.create_topic("d")
    events = [{"id": i, "what": "s"} for i in range(6)]
    with Producer(
        bootstrap_servers=registry.bootstrap, value_serializer=AvroSerializer(sr, EVENT)
    ) as p:
        for e in events:
            p.produce("d", e)
    conn = consumer.create(
        {
            "metadata.broker.list": registry.bootstrap,
            "group.id": "g3",
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 5000,
            "value.decoder.class": AvroDeserializer(sr),
        }
    )
    try:
        stream = conn.create_message_streams({"d": 1})["d"][0]
        got = [next(iter(stream)).message for _ in events]
    finally:
        conn.shutdown()
    assert got == events
