"""The registry's compatibility answers on a table of Avro schema evolutions equal the rules of
Apache Avro's own library (avro.compatibility, the port of Java's SchemaCompatibility that
Confluent's registry applies), for every level, asked through confluent-kafka's client."""

import json

import avro.schema
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from confluent_kafka.schema_registry import Schema


def record(*fields, name="R", **extra):
    return dict({"type": "record", "name": name, "fields": list(fields)}, **extra)


def f(name, type_, **extra):
    return dict({"name": name, "type": type_}, **extra)


ENUM = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
LIST = record(f("value", "int"), f("next", ["null", "Node"], default=None), name="Node")
EVOLUTIONS = {
    "add field with default": (
        record(f("a", "int")),
        record(f("a", "int"), f("b", "string", default="x")),
    ),
    "add field without default": (record(f("a", "int")), record(f("a", "int"), f("b", "string"))),
    "remove field with default": (
        record(f("a", "int"), f("b", "string", default="x")),
        record(f("a", "int")),
    ),
    "remove field without default": (
        record(f("a", "int"), f("b", "string")),
        record(f("a", "int")),
    ),
    "rename field with alias": (
        record(f("name", "string")),
        record(f("full_name", "string", aliases=["name"])),
    ),
    "rename field without alias": (record(f("name", "string")), record(f("full_name", "string"))),
    "promote int to long": (record(f("a", "int")), record(f("a", "long"))),
    "narrow long to int": (record(f("a", "long")), record(f("a", "int"))),
    "promote float to double": (record(f("a", "float")), record(f("a", "double"))),
    "int to float": (record(f("a", "int")), record(f("a", "float"))),
    "string to bytes": (record(f("a", "string")), record(f("a", "bytes"))),
    "string to int": (record(f("a", "string")), record(f("a", "int"))),
    "int to nullable int": (record(f("a", "int")), record(f("a", ["null", "int"], default=None))),
    "nullable int to int": (record(f("a", ["null", "int"], default=None)), record(f("a", "int"))),
    "union gains a branch": (
        record(f("a", ["int", "string"])),
        record(f("a", ["int", "string", "boolean"])),
    ),
    "enum gains a symbol": (
        record(f("c", ENUM)),
        record(f("c", dict(ENUM, symbols=["RED", "GREEN", "BLUE"]))),
    ),
    "enum loses a symbol": (record(f("c", ENUM)), record(f("c", dict(ENUM, symbols=["RED"])))),
    "enum loses a symbol, reader default": (
        record(f("c", dict(ENUM, symbols=["RED", "GREEN", "BLUE"]))),
        record(f("c", dict(ENUM, symbols=["RED", "GREEN"], default="RED"))),
    ),
    "record renamed": (record(f("a", "int")), record(f("a", "int"), name="S")),
    "record renamed with alias": (
        record(f("a", "int")),
        record(f("a", "int"), name="S", aliases=["R"]),
    ),
    "fixed size changes": (
        record(f("h", {"type": "fixed", "name": "H", "size": 4})),
        record(f("h", {"type": "fixed", "name": "H", "size": 8})),
    ),
    "array items promoted": (
        record(f("xs", {"type": "array", "items": "int"})),
        record(f("xs", {"type": "array", "items": "long"})),
    ),
    "map values change": (
        record(f("m", {"type": "map", "values": "string"})),
        record(f("m", {"type": "map", "values": "int"})),
    ),
    "nested record gains a defaulted field": (
        record(f("in", record(f("x", "int"), name="In"))),
        record(f("in", record(f("x", "int"), f("y", "int", default=0), name="In"))),
    ),
    "recursive type gains a defaulted field": (
        LIST,
        dict(LIST, fields=LIST["fields"] + [f("tag", "string", default="")]),
    ),
    "primitive to record": ("string", record(f("a", "string"))),
    "same schema": (record(f("a", "int")), record(f("a", "int"))),
}


def reads(reader, writer):
    """Apache Avro's verdict: does ``reader`` read what ``writer`` wrote?"""
    result = ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(json.dumps(reader)), avro.schema.parse(json.dumps(writer))
    )
    return result.compatibility is SchemaCompatibilityType.compatible


def expected(level, old, new):
    backward, forward = reads(new, old), reads(old, new)
    return {"NONE": True, "BACKWARD": backward, "FORWARD": forward, "FULL": backward and forward}[
        level
    ]


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One registry for the whole table (a subject per case)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from kclient.broker import MiniBroker

    with MiniBroker(log_dir=tmp_path_factory.mktemp("table"), schema_registry=True) as broker:
        yield SchemaRegistryClient({"url": broker.schema_registry_url})


@pytest.mark.parametrize("case", sorted(EVOLUTIONS))
def test_table(shared, case):
    sr, subject = shared, case.replace(" ", "-").replace(",", "")
    old, new = EVOLUTIONS[case]
    sr.set_compatibility(subject, "NONE")
    sr.register_schema(subject, Schema(json.dumps(old), "AVRO"))
    verdicts = {}
    for level in ("NONE", "BACKWARD", "FORWARD", "FULL"):
        sr.set_compatibility(subject, level)
        got = sr.test_compatibility(subject, Schema(json.dumps(new), "AVRO"))
        verdicts[level] = got
        assert got == expected(level, old, new), (case, level)
    # registration follows the same verdict
    sr.set_compatibility(subject, "FULL")
    if verdicts["FULL"]:
        sr.register_schema(subject, Schema(json.dumps(new), "AVRO"))
    else:
        with pytest.raises(Exception, match="incompatible"):
            sr.register_schema(subject, Schema(json.dumps(new), "AVRO"))


def test_table_is_not_trivial():
    verdicts = {
        (level, case): expected(level, *EVOLUTIONS[case])
        for case in EVOLUTIONS
        for level in ("BACKWARD", "FORWARD")
    }
    assert any(verdicts.values()) and not all(verdicts.values())
    assert expected("BACKWARD", *EVOLUTIONS["add field with default"])
    assert not expected("BACKWARD", *EVOLUTIONS["add field without default"])


def test_transitive_levels(clients):
    _, sr = clients
    v1 = record(f("a", "int"))
    v2 = record(f("a", "int"), f("b", "string", default=""))
    v3 = record(f("a", "int"), f("b", "string"))  # reads v2's data, not v1's (no b there)
    sr.set_compatibility("tr", "BACKWARD")
    for schema in (v1, v2):
        sr.register_schema("tr", Schema(json.dumps(schema), "AVRO"))
    assert expected("BACKWARD", v2, v3) and not expected("BACKWARD", v1, v3)
    assert sr.test_compatibility("tr", Schema(json.dumps(v3), "AVRO")) is True
    assert sr.test_compatibility("tr", Schema(json.dumps(v3), "AVRO"), "1") is False
    sr.set_compatibility("tr", "BACKWARD_TRANSITIVE")
    with pytest.raises(Exception, match="incompatible"):
        sr.register_schema("tr", Schema(json.dumps(v3), "AVRO"))
    sr.set_compatibility("tr", "FULL_TRANSITIVE")
    assert sr.test_compatibility_all_versions("tr", Schema(json.dumps(v3), "AVRO")) is False
    sr.set_compatibility("tr", "BACKWARD")
    assert sr.register_schema("tr", Schema(json.dumps(v3), "AVRO")) == 3
