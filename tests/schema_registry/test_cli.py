"""``kclient schemas`` and ``kclient produce/consume --value-format ... -r URL`` as
subprocesses against a mini-broker with its registry; confluent-kafka reads what the CLI
produced and the CLI prints what confluent-kafka produced."""

import json

import pytest
from confluent_kafka import Producer as CProducer
from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CAvroSerializer
from confluent_kafka.serialization import MessageField as CField
from confluent_kafka.serialization import SerializationContext as CContext

from kclient.simple import FetchRequest, SimpleConsumer
from tests.conftest import CliRunner

USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": "int"},
            {"name": "email", "type": ["null", "string"], "default": None},
        ],
    }
)
USER2 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": "long"},
            {"name": "email", "type": ["null", "string"], "default": None},
            {"name": "city", "type": "string", "default": "?"},
        ],
    }
)


@pytest.fixture
def cli(registry):
    runner = CliRunner(registry.bootstrap)
    env = {"KCLIENT_SCHEMA_REGISTRY": registry.schema_registry_url}
    return lambda *a, **kw: runner(*a, env=env, **kw)


def values(bootstrap, topic):
    host, port = bootstrap.split(":")
    with SimpleConsumer(host, int(port), client_id="t") as c:
        return [mo.message for mo in c.fetch(FetchRequest(topic, 0, 0, 1 << 20))]


def test_schemas_commands(cli, tmp_path):
    schema_file = tmp_path / "user.avsc"
    schema_file.write_text(USER)
    assert cli("schemas", "register", "users-value", f"@{schema_file}", check=0).stdout == b"1\n"
    assert cli("schemas", "compat", "users-value", USER2, check=0).stdout == b"compatible\n"
    bad = json.dumps({"type": "record", "name": "User", "fields": [{"name": "zip", "type": "int"}]})
    done = cli("schemas", "compat", "users-value", bad, check=1)
    assert done.stdout.startswith(b"incompatible\n") and b"zip has no default" in done.stdout
    assert cli("schemas", "register", "users-value", USER2, check=0).stdout == b"2\n"
    listed = cli("schemas", "list", check=0).stdout.decode().split()
    assert listed[-5:] == ["users-value", "2", "2", "2", "AVRO"]
    got = json.loads(cli("schemas", "get", "users-value", "--version", "1", check=0).stdout)
    assert got["schema"] == json.loads(USER) and (got["version"], got["id"]) == (1, 1)
    assert json.loads(cli("schemas", "get", "--id", "2", check=0).stdout)["schema"] == json.loads(
        USER2
    )
    assert cli("schemas", "config", check=0).stdout == b"BACKWARD\n"
    assert cli("schemas", "config", "users-value", "--set", "FULL", check=0).stdout == b"FULL\n"
    assert cli("schemas", "delete", "users-value", "--version", "1", check=0).stdout == b"1\n"
    assert cli("schemas", "delete", "users-value", check=0).stdout == b"2\n"
    assert cli("schemas", "delete", "users-value", "--permanent", check=0).stdout == b"1 2\n"
    done = cli("schemas", "get", "users-value", check=1)
    assert b"Subject 'users-value' not found" in done.stderr


def test_produce_avro_read_by_confluent_and_back(cli, registry):
    from confluent_kafka.schema_registry import SchemaRegistryClient

    lines = (
        b'{"name": "ann", "age": 30, "email": "a@x"}\n'
        b'{"name": "bob", "age": 4, "email": null}\n{"name": 5}\n'
    )
    done = cli(
        "produce",
        "users",
        "--value-format",
        "avro",
        "--value-schema",
        USER,
        "-p",
        "0",
        input=lines,
        check=1,
    )
    assert b"line 3: skipped" in done.stderr and b"delivered 2 of 2" in done.stderr
    sr = SchemaRegistryClient({"url": registry.schema_registry_url})
    cde = CAvroDeserializer(sr)
    got = [
        cde(m.value, CContext("users", CField.VALUE)) for m in values(registry.bootstrap, "users")
    ]
    assert got == [
        {"name": "ann", "age": 30, "email": "a@x"},
        {"name": "bob", "age": 4, "email": None},
    ]
    producer = CProducer({"bootstrap.servers": registry.bootstrap})
    cser = CAvroSerializer(sr, USER)
    producer.produce(
        "users",
        partition=0,
        value=cser({"name": "cy", "age": 1, "email": None}, CContext("users", CField.VALUE)),
    )
    producer.flush(10)
    out = (
        cli("consume", "users", "-o", "earliest", "-e", "--value-format", "avro", check=0)
        .stdout.decode()
        .splitlines()
    )
    assert [json.loads(line) for line in out] == got + [{"name": "cy", "age": 1, "email": None}]
    # latest schema, JSON lines with keys
    jsonl = b'{"key": "k", "value": {"name": "dee", "age": 9, "email": null}}\n'
    cli(
        "produce",
        "users",
        "--format",
        "json",
        "--value-format",
        "avro",
        "-p",
        "0",
        input=jsonl,
        check=0,
    )
    last = values(registry.bootstrap, "users")[-1]
    assert last.key == b"k" and last.value[:5] == b"\x00\x00\x00\x00\x01"


def test_json_schema_and_protobuf_formats(cli, registry):
    person = json.dumps(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    cli(
        "produce",
        "people",
        "--value-format",
        "json-schema",
        "--value-schema",
        person,
        "-p",
        "0",
        input=b'{"n": 1}\n{"n": 2}\n',
        check=0,
    )
    out = cli(
        "consume", "people", "-o", "earliest", "-e", "--value-format", "json-schema", check=0
    ).stdout
    assert out == b'{"n":1}\n{"n":2}\n'
    from google.protobuf import descriptor_pb2

    from kclient.schema_registry import Schema, SchemaRegistryClient

    proto = descriptor_pb2.FileDescriptorProto(name="m.proto", package="p", syntax="proto3")
    msg = proto.message_type.add(name="M")
    msg.field.add(name="text", number=1, type=9, label=1)
    msg.field.add(name="count", number=2, type=5, label=1)
    import base64

    with SchemaRegistryClient(registry.schema_registry_url) as sr:
        sr.register_schema(
            "pb-value", Schema(base64.b64encode(proto.SerializeToString()).decode(), "PROTOBUF")
        )
    cli(
        "produce",
        "pb",
        "--value-format",
        "protobuf",
        "-p",
        "0",
        input=b'{"text": "hi", "count": 3}\n',
        check=0,
    )
    raw = values(registry.bootstrap, "pb")[0].value
    assert raw == b"\x00\x00\x00\x00\x02\x00" + b"\x0a\x02hi\x10\x03"  # id 2, [0]
    out = cli("consume", "pb", "-o", "earliest", "-e", "--value-format", "protobuf", check=0).stdout
    assert json.loads(out) == {"text": "hi", "count": 3}


def test_usage_errors(registry):
    runner = CliRunner(registry.bootstrap)
    done = runner(
        "consume", "x", "--value-format", "avro", "-e", check=2, env={"KCLIENT_SCHEMA_REGISTRY": ""}
    )
    assert b"needs --schema-registry" in done.stderr
    done = runner("schemas", "list", "-r", "ftp://x", check=2)
    assert b"http:// or https://" in done.stderr
