"""The mini-broker's registry through confluent-kafka's SchemaRegistryClient (a client we did
not write): subjects, versions, ids, deletes, settings, modes, and state kept in `_schemas`."""

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from kclient.broker import MiniBroker

V1 = json.dumps({"type": "record", "name": "E", "fields": [{"name": "a", "type": "int"}]})
V2 = json.dumps(
    {
        "type": "record",
        "name": "E",
        "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""}],
    }
)
BAD = json.dumps({"type": "record", "name": "E", "fields": [{"name": "c", "type": "int"}]})


def code(call):
    with pytest.raises(SchemaRegistryError) as err:
        call()
    return err.value.http_status_code, err.value.error_code


def test_versions_ids_and_lookups(registry, clients):
    _, sr = clients
    first = sr.register_schema("e-value", Schema(V1, "AVRO"))
    second = sr.register_schema("e-value", Schema(V2, "AVRO"))
    assert (first, second) == (1, 2)
    assert sr.register_schema("e-value", Schema(V1, "AVRO")) == 1  # known: no new version
    assert sr.get_versions("e-value") == [1, 2]
    latest = sr.get_latest_version("e-value")
    assert (latest.schema_id, latest.version, latest.subject) == (2, 2, "e-value")
    assert json.loads(sr.get_version("e-value", 1).schema.schema_str) == json.loads(V1)
    assert sr.lookup_schema("e-value", Schema(V2, "AVRO")).version == 2
    assert json.loads(
        SchemaRegistryClient({"url": registry.schema_registry_url}).get_schema(2).schema_str
    ) == json.loads(V2)
    assert code(lambda: sr.get_version("nope", 1)) == (404, 40401)
    assert code(lambda: sr.get_version("e-value", 9)) == (404, 40402)
    assert code(lambda: sr.get_schema(99)) == (404, 40403)
    assert code(lambda: sr.register_schema("x", Schema('{"type": "nope"}', "AVRO")))[1] == 42201
    assert sr.get_schema_types() == ["AVRO", "JSON", "PROTOBUF"]


def test_compatibility_settings_and_refusal(clients):
    _, sr = clients
    sr.register_schema("c", Schema(V1, "AVRO"))
    assert sr.get_compatibility() == "BACKWARD"
    assert code(lambda: sr.register_schema("c", Schema(BAD, "AVRO"))) == (409, 409)
    assert sr.test_compatibility("c", Schema(BAD, "AVRO")) is False
    assert sr.test_compatibility("c", Schema(V2, "AVRO")) is True
    assert sr.set_compatibility("c", "NONE") == {"compatibility": "NONE"}
    assert sr.get_compatibility("c") == "NONE"
    assert sr.register_schema("c", Schema(BAD, "AVRO")) == 2
    assert code(lambda: sr.set_compatibility("c", "SIDEWAYS"))[1] == 42203


def test_deletes(clients):
    _, sr = clients
    sr.register_schema("d", Schema(V1, "AVRO"))
    sr.register_schema("d", Schema(V2, "AVRO"))
    assert code(lambda: sr.delete_version("d", 1, permanent=True)) == (404, 40407)
    assert sr.delete_version("d", 1) == 1
    assert sr.get_versions("d") == [2]
    assert sr.delete_version("d", 1, permanent=True) == 1
    assert sr.delete_subject("d") == [2]
    assert sr.get_subjects() == []
    assert sr.delete_subject("d", permanent=True) == [2]
    assert code(lambda: sr.get_versions("d")) == (404, 40401)


def test_modes(clients):
    _, sr = clients
    assert sr.get_global_mode() == "READWRITE"
    sr.update_mode("ro", "READONLY")
    assert sr.get_mode("ro") == "READONLY"
    assert code(lambda: sr.register_schema("ro", Schema(V1, "AVRO")))[1] == 42205
    sr.delete_mode("ro")
    assert sr.register_schema("ro", Schema(V1, "AVRO")) == 1


def test_state_is_replayed_from_the_schemas_topic(tmp_path):
    with MiniBroker(log_dir=tmp_path / "b", schema_registry=True) as broker:
        url = broker.schema_registry_url
        sr = SchemaRegistryClient({"url": url})
        sr.register_schema("p", Schema(V1, "AVRO"))
        sr.register_schema("p", Schema(V2, "AVRO"))
        sr.set_compatibility("p", "FULL")
        sr.delete_version("p", 1)
        assert broker.topic_config("_schemas").cleanup_policy == ("compact",)
        broker.stop()
        broker.start()
        sr = SchemaRegistryClient({"url": broker.schema_registry_url})
        assert sr.get_versions("p") == [2]
        assert sr.get_versions("p", deleted=True) == [1, 2]
        assert sr.get_compatibility("p") == "FULL"
        assert sr.register_schema("q", Schema(BAD, "AVRO")) == 3  # ids go on


def test_kclient_client_api(clients):
    from kclient.schema_registry import Schema as KSchema
    from kclient.schema_registry import SchemaRegistryError as KError

    ours, _ = clients
    assert ours.register_schema("k", KSchema(V1)) == 1
    assert ours.get_latest_version("k").version == 1
    assert ours.test_compatibility("k", KSchema(BAD), verbose=True)["messages"]
    assert ours.set_compatibility("k", "FORWARD") == "FORWARD"
    assert ours.get_compatibility("k") == "FORWARD"
    with pytest.raises(KError) as err:
        ours.get_version("k", 7)
    assert (err.value.status, err.value.error_code) == (404, 40402)
    assert ours.delete_subject("k") == [1] and ours.get_subjects(deleted=True) == ["k"]


def test_failover_and_unreachable(registry):
    import socket

    from kclient.schema_registry import Schema as KSchema
    from kclient.schema_registry import SchemaRegistryClient as Ours

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with Ours({"url": f"{dead},{registry.schema_registry_url}", "retries.wait.ms": 1}) as client:
        assert client.register_schema("f", KSchema(V1)) == 1
        assert client.url == registry.schema_registry_url  # the live one is kept first
    with Ours({"url": dead, "max.retries": 2, "retries.wait.ms": 1}) as client:
        with pytest.raises(ConnectionError, match="after 3 attempts"):
            client.get_subjects()
    with pytest.raises(ValueError, match="unknown schema registry settings: nope"):
        Ours({"url": dead, "nope": 1})


def test_basic_auth(tmp_path):
    from kclient.schema_registry import Schema as KSchema
    from kclient.schema_registry import SchemaRegistryClient as Ours
    from kclient.schema_registry import SchemaRegistryError as KError

    with MiniBroker(
        log_dir=tmp_path / "b", schema_registry=True, schema_registry_users={"alice": "s3cret"}
    ) as broker:
        url = broker.schema_registry_url
        theirs = SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:s3cret"})
        assert theirs.register_schema("a", Schema(V1, "AVRO")) == 1
        assert code(lambda: SchemaRegistryClient({"url": url}).get_subjects())[0] == 401
        host = url.removeprefix("http://")
        with Ours(f"http://alice:s3cret@{host}") as ours:
            assert ours.get_subjects() == ["a"]
        with Ours({"url": url, "basic.auth.user.info": "alice:s3cret"}) as ours:
            assert ours.register_schema("b", KSchema(V2)) == 2
        with Ours({"url": url, "basic.auth.user.info": "alice:wrong"}) as ours:
            with pytest.raises(KError) as err:
                ours.get_subjects()
        assert err.value.status == 401
