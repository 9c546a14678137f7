"""kclient's JSON Schema and Protobuf serdes against confluent-kafka's on the mini-broker's
registry: the same bytes, the same subjects and ids, each reads what the other wrote."""

import json

import pytest
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJSONDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CProtoDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CProtoSerializer
from confluent_kafka.serialization import MessageField as CField
from confluent_kafka.serialization import SerializationContext as CContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

from kclient.schema_registry import SerializationContext, SerializationError
from kclient.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from kclient.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from kclient.schema_registry.wire import decode_indexes, encode_indexes

PERSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "score": {"type": ["number", "null"]},
    },
    "required": ["name", "age"],
}
PEOPLE = [
    {"name": "Åse", "age": 40, "tags": ["a", "ü"], "score": 1.5},
    {"name": "", "age": 0, "score": None},
]


@pytest.mark.parametrize(
    "draft",
    ["http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"],
)
def test_json_schema_same_bytes_both_ways(clients, draft):
    ours, theirs = clients
    schema = json.dumps(dict(PERSON, **{"$schema": draft}))
    ser, cser = JSONSerializer(schema, ours), CJSONSerializer(schema, theirs)
    de, cde = (
        JSONDeserializer(None, schema_registry_client=ours),
        CJSONDeserializer(None, schema_registry_client=theirs),
    )
    for person in PEOPLE:
        a = ser(person, SerializationContext("people"))
        b = cser(person, CContext("people", CField.VALUE))
        assert a == b
        assert de(b, SerializationContext("people")) == person
        assert cde(a, CContext("people", CField.VALUE)) == person
    assert theirs.get_subjects() == ["people-value"]


def test_json_schema_validation_errors(clients):
    ours, _ = clients
    ser = JSONSerializer(json.dumps(PERSON), ours)
    with pytest.raises(SerializationError, match="at age: -1 is less than the minimum"):
        ser({"name": "x", "age": -1}, SerializationContext("p"))
    with pytest.raises(SerializationError, match="'age' is a required property"):
        ser({"name": "x"}, SerializationContext("p"))
    loose = JSONSerializer(json.dumps(PERSON), ours, conf={"validate": False})
    assert loose({"name": "x"}, SerializationContext("p"))[5:] == b'{"name":"x"}'
    record = JSONSerializer(json.dumps(PERSON), ours, conf={"subject.name.strategy": "record"})
    record({"name": "x", "age": 1}, SerializationContext("p"))
    assert "Person" in ours.get_subjects()


def _pool_with_messages():
    """A pool holding common.proto (Money) and shop.proto (Order with a nested Line, importing
    common.proto and google/protobuf/timestamp.proto): message classes as protoc makes them."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    common = descriptor_pb2.FileDescriptorProto(
        name="common.proto", package="shop", syntax="proto3"
    )
    money = common.message_type.add(name="Money")
    money.field.add(name="cents", number=1, type=3, label=1)  # int64
    money.field.add(name="currency", number=2, type=9, label=1)  # string
    pool.Add(common)
    shop = descriptor_pb2.FileDescriptorProto(
        name="shop.proto",
        package="shop",
        syntax="proto3",
        dependency=["common.proto", "google/protobuf/timestamp.proto"],
    )
    shop.message_type.add(name="Ping").field.add(name="n", number=1, type=5, label=1)
    order = shop.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=9, label=1)
    order.field.add(name="total", number=2, type=11, label=1, type_name=".shop.Money")
    order.field.add(name="at", number=3, type=11, label=1, type_name=".google.protobuf.Timestamp")
    order.field.add(name="lines", number=4, type=11, label=3, type_name=".shop.Order.Line")
    line = order.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=9, label=1)
    line.field.add(name="qty", number=2, type=5, label=1)
    pool.Add(shop)
    get = message_factory.GetMessageClass
    return (
        get(pool.FindMessageTypeByName("shop.Order")),
        get(pool.FindMessageTypeByName("shop.Order.Line")),
        get(pool.FindMessageTypeByName("shop.Ping")),
    )


def test_protobuf_same_bytes_both_ways(clients):
    ours, theirs = clients
    Order, Line, Ping = _pool_with_messages()
    order = Order(id="o-1")
    order.total.cents, order.total.currency = 1999, "NOK"
    order.at.seconds = 1700000000
    order.lines.add(sku="x", qty=2)
    cases = [(Order, order, [1]), (Line, Line(sku="y", qty=-3), [1, 0]), (Ping, Ping(n=7), [0])]
    for n, (cls, message, path) in enumerate(cases):
        topic = f"shop{n}"
        conf = {"use.deprecated.format": False}
        a = ProtobufSerializer(cls, ours)(message, SerializationContext(topic))
        b = CProtoSerializer(cls, theirs, conf)(message, CContext(topic, CField.VALUE))
        assert a == b
        assert decode_indexes(a, 5)[0] == path
        assert ProtobufDeserializer(cls)(b, SerializationContext(topic)) == message
        assert CProtoDeserializer(cls, conf)(a, CContext(topic, CField.VALUE)) == message
    assert sorted(theirs.get_subjects()) == [
        "common.proto",
        "shop0-value",
        "shop1-value",
        "shop2-value",
    ]
    refs = theirs.get_latest_version("shop0-value").schema.references
    assert [(r.name, r.subject, r.version) for r in refs] == [("common.proto", "common.proto", 1)]
    framed = ProtobufSerializer(Order, ours)(order, SerializationContext("shop0"))
    with pytest.raises(SerializationError, match="do not name shop.Ping"):
        ProtobufDeserializer(Ping)(framed, SerializationContext("shop0"))


@pytest.mark.parametrize("path", [[0], [1], [0, 0], [2, 5, 1], [300, 0, 70000]])
def test_message_indexes_round_trip(path):
    data = b"\x00\x00\x00\x00\x07" + encode_indexes(path) + b"rest"
    assert decode_indexes(data, 5) == (path, len(data) - 4)
    assert encode_indexes([0]) == b"\x00" and encode_indexes([1]) == b"\x02\x02"
