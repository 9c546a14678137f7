"""kclient's Avro serdes against confluent-kafka's, both on the mini-broker's registry: the
same bytes for the same schema and record, and each reads what the other wrote."""

import json

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CAvroSerializer
from confluent_kafka.serialization import MessageField as CField
from confluent_kafka.serialization import SerializationContext as CContext

from kclient.schema_registry import (
    AsyncSchemaRegistryClient,
    MessageField,
    SerializationContext,
    SerializationError,
)
from kclient.schema_registry.avro import AvroDeserializer, AvroSerializer

USER = {
    "type": "record",
    "name": "User",
    "namespace": "com.example",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "age", "type": "int"},
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "scores", "type": {"type": "map", "values": "double"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "raw", "type": "bytes"},
        {"name": "big", "type": "long"},
        {"name": "ok", "type": "boolean"},
        {"name": "ratio", "type": "float"},
        {
            "name": "address",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Address",
                    "fields": [{"name": "city", "type": "string"}],
                },
            ],
            "default": None,
        },
    ],
}
RECORDS = [
    {
        "name": "ann",
        "age": 31,
        "email": "a@x",
        "tags": ["x", "y"],
        "scores": {"m": 1.5},
        "kind": "B",
        "hash": b"\x00\x01\x02\x03",
        "raw": b"\xff" * 40,
        "big": -(1 << 60),
        "ok": True,
        "ratio": 0.25,
        "address": {"city": "Oslo"},
    },
    {
        "name": "",
        "age": -1,
        "email": None,
        "tags": [],
        "scores": {},
        "kind": "A",
        "hash": b"abcd",
        "raw": b"",
        "big": 0,
        "ok": False,
        "ratio": -2.0,
        "address": None,
    },
]
SCHEMAS = [
    (json.dumps(USER), RECORDS),
    ('"string"', ["", "héllo wörld", "x" * 300]),
    ('"long"', [0, 1, -1, 1 << 62]),
    ('["null", "int", "string"]', [5, "five"]),
]


def ctx(topic, field=MessageField.VALUE, headers=None):
    return SerializationContext(topic, field, headers), CContext(topic, field, headers)


@pytest.mark.parametrize("n", range(len(SCHEMAS)))
@pytest.mark.parametrize("field", [MessageField.VALUE, MessageField.KEY])
def test_same_bytes_both_ways(clients, n, field):
    ours, theirs = clients
    schema, records = SCHEMAS[n]
    mine, other = ctx(f"t{n}", field)
    ser, cser = AvroSerializer(ours, schema), CAvroSerializer(theirs, schema)
    de, cde = AvroDeserializer(ours), CAvroDeserializer(theirs)
    for record in records:
        a, b = ser(record, mine), cser(record, other)
        assert a == b
        assert de(b, mine) == record
        assert cde(a, other) == record
    assert ours.get_subjects() == [f"t{n}-{field}"]


def test_ids_agree_between_clients(clients):
    ours, theirs = clients
    first = AvroSerializer(ours, '"string"')("x", SerializationContext("a"))
    second = CAvroSerializer(theirs, '"string"')("x", CContext("b", CField.VALUE))
    assert first == second  # one schema, one id across subjects
    assert sorted(theirs.get_subjects()) == ["a-value", "b-value"]
    assert ours.get_subjects_by_schema_id(1) == ["a-value", "b-value"]


def test_reader_schema_resolution(clients):
    ours, theirs = clients
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "string", "default": "d"}],
    }
    data = CAvroSerializer(theirs, json.dumps(v1))({"a": 3}, CContext("r", CField.VALUE))
    got = AvroDeserializer(ours, json.dumps(v2))(data, SerializationContext("r"))
    assert got == {"a": 3, "b": "d"}
    ours.register_schema("r-value", __import__("kclient").schema_registry.Schema(json.dumps(v2)))
    latest = AvroDeserializer(ours, conf={"use.latest.version": True})
    assert latest(data, SerializationContext("r")) == {"a": 3, "b": "d"}


def test_use_latest_version_and_no_auto_register(clients):
    ours, theirs = clients
    from kclient.schema_registry import SchemaRegistryError

    strict = AvroSerializer(ours, '"int"', {"auto.register.schemas": False})
    with pytest.raises(SchemaRegistryError) as err:
        strict(1, SerializationContext("n"))
    assert err.value.status == 404 and err.value.error_code in (40401, 40403)
    CAvroSerializer(theirs, '"int"')(1, CContext("n", CField.VALUE))
    assert strict(1, SerializationContext("n")) == b"\x00\x00\x00\x00\x01\x02"
    latest = AvroSerializer(
        ours, None, {"use.latest.version": True, "auto.register.schemas": False}
    )
    assert latest(1, SerializationContext("n")) == b"\x00\x00\x00\x00\x01\x02"


def test_record_strategies(clients):
    ours, theirs = clients
    schema = json.dumps(
        {"type": "record", "name": "P", "namespace": "ns", "fields": [{"name": "x", "type": "int"}]}
    )
    for strategy, subject in (("record", "ns.P"), ("topic_record", "tp-ns.P")):
        ser = AvroSerializer(ours, schema, {"subject.name.strategy": strategy})
        assert ser({"x": 1}, SerializationContext("tp"))[5:] == b"\x02"
        assert subject in theirs.get_subjects()
    with pytest.raises(ValueError, match="subject.name.strategy"):
        AvroSerializer(ours, schema, {"subject.name.strategy": "nope"})


def test_header_guid_both_ways(clients):
    from confluent_kafka.schema_registry import header_schema_id_serializer

    ours, theirs = clients
    record = RECORDS[0]
    theirs_headers = []
    cser = CAvroSerializer(
        theirs, json.dumps(USER), conf={"schema.id.serializer": header_schema_id_serializer}
    )
    payload = cser(record, CContext("h", CField.VALUE, theirs_headers))
    assert theirs_headers[0][0] == "__value_schema_id" and len(theirs_headers[0][1]) == 17
    assert (
        AvroDeserializer(ours)(payload, SerializationContext("h", headers=theirs_headers)) == record
    )
    our_headers = []
    mine = AvroSerializer(ours, json.dumps(USER), {"schema.id.serializer": "header"})
    data = mine(record, SerializationContext("h", headers=our_headers))
    assert data == payload and our_headers == theirs_headers
    assert CAvroDeserializer(theirs)(data, CContext("h", CField.VALUE, our_headers)) == record


def test_bad_payloads_are_named(clients):
    ours, _ = clients
    de = AvroDeserializer(ours)
    with pytest.raises(SerializationError, match="magic byte 7"):
        de(b"\x07\x00\x00\x00\x01\x02", SerializationContext("t"))
    with pytest.raises(SerializationError, match="too short"):
        de(b"\x00\x00", SerializationContext("t"))
    ser = AvroSerializer(ours, '"int"')
    with pytest.raises(SerializationError, match="does not match"):
        ser("not an int", SerializationContext("t"))
    data = ser(5, SerializationContext("t"))
    with pytest.raises(SerializationError, match="cannot decode"):
        de(data[:5], SerializationContext("t"))
    assert ser(None, SerializationContext("t")) is None and de(None) is None


def test_asyncio_client(registry, clients):
    import asyncio

    _, theirs = clients

    async def run():
        async with AsyncSchemaRegistryClient({"url": registry.schema_registry_url}) as client:
            ser = AvroSerializer(client, json.dumps(USER))
            data = await ser.serialize_async(RECORDS[0], SerializationContext("aio"))
            back = await AvroDeserializer(client).deserialize_async(data)
            return data, back, await client.get_subjects()

    data, back, subjects = asyncio.run(run())
    assert back == RECORDS[0] and subjects == ["aio-value"]
    assert data == CAvroSerializer(theirs, json.dumps(USER))(
        RECORDS[0], CContext("aio", CField.VALUE)
    )
