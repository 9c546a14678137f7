"""Configuration: the key table, aliases, coercion, validation and the read-only Config."""

from __future__ import annotations

from pathlib import Path

import pytest

import kclient.config as kc
from kclient.config import Config, describe_keys, keys_markdown, load_config
from kclient.encoders import DefaultDecoder, DefaultEncoder, JsonDecoder, StringEncoder
from kclient.errors import InvalidConfigError, KafkaError
from kclient.partitioner import DefaultPartitioner, JavaHashPartitioner, RoundRobinPartitioner

DOCS = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def producer(config=None, **kw) -> Config:
    return load_config("producer", config, **kw)


def consumer(config=None, **kw) -> Config:
    return load_config("consumer", config, **kw)


def raises_config(fn, *args, **kw) -> InvalidConfigError:
    with pytest.raises(InvalidConfigError) as info:
        fn(*args, **kw)
    return info.value


# ---------------------------------------------------------------- defaults


@pytest.mark.parametrize(
    "key,value",
    [
        # Kafka 0.8.2 producer defaults kept as they were
        ("producer.type", "sync"),
        ("request.timeout.ms", 10000),
        ("message.send.max.retries", 3),
        ("retry.backoff.ms", 100),
        ("topic.metadata.refresh.interval.ms", 600000),
        ("queue.enqueue.timeout.ms", -1),
        ("compression.codec", "none"),
        ("compressed.topics", ()),
        ("socket.send.buffer.bytes", 102400),
        ("client.id", ""),
        ("metadata.broker.list", None),
        ("event.handler", None),
        # documented differences
        ("request.required.acks", 1),
        ("queue.buffering.max.ms", 5),
        ("batch.num.messages", 10000),
        ("queue.buffering.max.messages", 100000),
        ("message.max.bytes", 1000012),
    ],
)
def test_producer_defaults(key, value):
    assert producer()[key] == value


def test_producer_class_defaults_are_imported_classes():
    cfg = producer()
    assert cfg["serializer.class"] is DefaultEncoder
    assert cfg["key.serializer.class"] is DefaultEncoder
    assert cfg["partitioner.class"] is DefaultPartitioner


@pytest.mark.parametrize(
    "key,value",
    [
        ("group.id", None),
        ("consumer.id", None),
        ("socket.timeout.ms", 30000),
        ("socket.receive.buffer.bytes", 0),
        ("fetch.message.max.bytes", 1048576),
        ("num.consumer.fetchers", 1),
        ("auto.commit.enable", True),
        ("auto.commit.interval.ms", 60000),
        ("queued.max.message.chunks", 2),
        ("rebalance.max.retries", 4),
        ("fetch.min.bytes", 1),
        ("fetch.wait.max.ms", 100),
        ("rebalance.backoff.ms", 2000),
        ("refresh.leader.backoff.ms", 200),
        ("auto.offset.reset", "largest"),
        ("consumer.timeout.ms", -1),
        ("exclude.internal.topics", True),
        ("zookeeper.session.timeout.ms", 6000),
        ("zookeeper.connection.timeout.ms", 6000),
        ("zookeeper.sync.time.ms", 2000),
        ("offsets.channel.backoff.ms", 1000),
        ("offsets.channel.socket.timeout.ms", 10000),
        ("offsets.commit.max.retries", 5),
        ("partition.assignment.strategy", "range"),
        ("session.timeout.ms", 30000),
        ("heartbeat.interval.ms", 3000),
        ("key.decoder.class", DefaultDecoder),
        ("value.decoder.class", DefaultDecoder),
    ],
)
def test_consumer_defaults(key, value):
    assert consumer()[key] == value


def test_every_key_with_a_changed_default_is_in_the_differences_docstring():
    for key in kc.KEYS:
        if key.differs:
            assert f"``{key.name}``" in kc.__doc__, key.name


# ---------------------------------------------------------------- derived defaults


def test_key_serializer_follows_serializer_unless_set():
    assert producer({"serializer.class": "string"})["key.serializer.class"] is StringEncoder
    cfg = producer({"serializer.class": "string", "key.serializer.class": "default"})
    assert cfg["key.serializer.class"] is DefaultEncoder


def test_consumer_client_id_defaults_to_group_id():
    assert consumer({"group.id": "billing"})["client.id"] == "billing"
    assert consumer({"group.id": "billing", "client.id": "me"})["client.id"] == "me"


def test_zookeeper_derived_timeouts():
    cfg = consumer({"zookeeper.session.timeout.ms": "9000", "zookeeper.sync.time.ms": "300"})
    assert cfg["zookeeper.connection.timeout.ms"] == 9000
    assert cfg["rebalance.backoff.ms"] == 300


def test_offsets_storage_follows_zookeeper_presence():
    with_zk = consumer({"zookeeper.connect": "127.0.0.1:2181"})
    assert (with_zk["offsets.storage"], with_zk["dual.commit.enabled"]) == ("zookeeper", False)
    without = consumer({"metadata.broker.list": "127.0.0.1:9092"})
    assert (without["offsets.storage"], without["dual.commit.enabled"]) == ("kafka", False)
    migrating = consumer({"zookeeper.connect": "127.0.0.1:2181", "offsets.storage": "kafka"})
    assert migrating["dual.commit.enabled"] is True


# ---------------------------------------------------------------- aliases and precedence


@pytest.mark.parametrize(
    "role,alias,value,canonical,expected",
    [
        ("producer", "queue.time", "50", "queue.buffering.max.ms", 50),
        ("producer", "linger.ms", 7, "queue.buffering.max.ms", 7),
        ("producer", "zk.connect", "zk1:2181", "zookeeper.connect", "zk1:2181"),
        (
            "producer",
            "broker.list",
            "0:h1:9092,1:h2:9093",
            "metadata.broker.list",
            (("h1", 9092), ("h2", 9093)),
        ),
        ("producer", "bootstrap.servers", "h:1", "metadata.broker.list", (("h", 1),)),
        ("producer", "acks", "all", "request.required.acks", -1),
        ("producer", "retries", "0", "message.send.max.retries", 0),
        ("producer", "compression.type", "lz4", "compression.codec", "lz4"),
        ("producer", "queue.size", "20000", "queue.buffering.max.messages", 20000),
        ("producer", "send.buffer.bytes", "1024", "socket.send.buffer.bytes", 1024),
        ("producer", "max.message.size", "1000", "message.max.bytes", 1000),
        ("consumer", "enable.auto.commit", "false", "auto.commit.enable", False),
        ("consumer", "autocommit.enable", "false", "auto.commit.enable", False),
        ("consumer", "groupid", "g", "group.id", "g"),
        ("consumer", "fetch.size", "2048", "fetch.message.max.bytes", 2048),
        ("consumer", "autooffset.reset", "smallest", "auto.offset.reset", "smallest"),
        ("consumer", "metadata.max.age.ms", "1000", "topic.metadata.refresh.interval.ms", 1000),
        ("consumer", "value.deserializer", "json", "value.decoder.class", JsonDecoder),
        ("consumer", "zk.sessiontimeout.ms", "4000", "zookeeper.session.timeout.ms", 4000),
    ],
)
def test_alias_sets_canonical_key(role, alias, value, canonical, expected):
    cfg = load_config(role, {alias: value})
    assert cfg[canonical] == expected
    assert cfg[alias] == expected
    assert canonical in list(cfg) and alias not in list(cfg)
    assert cfg.is_set(canonical) and cfg.is_set(alias)


def test_overrides_use_underscores_and_win_over_the_mapping():
    cfg = producer(
        {"producer.type": "sync", "queue.buffering.max.ms": 100},
        producer_type="async",
        queue_time=3,
    )
    assert cfg["producer.type"] == "async"
    assert cfg["queue.buffering.max.ms"] == 3


def test_alias_and_canonical_in_one_layer_must_agree():
    err = raises_config(producer, {"queue.time": 10, "queue.buffering.max.ms": 20})
    assert "'queue.time' and 'queue.buffering.max.ms' both set 'queue.buffering.max.ms'" in str(err)
    assert "give only one" in str(err)
    assert producer({"queue.time": "10", "queue.buffering.max.ms": 10})["queue.time"] == 10


def test_two_aliases_in_overrides_must_agree():
    err = raises_config(producer, queue_time=1, linger_ms=2)
    assert err.key == "queue.buffering.max.ms"


# ---------------------------------------------------------------- unknown keys and roles


def test_unknown_key_names_the_closest_key():
    err = raises_config(producer, {"queue.tme": 1})
    assert isinstance(err, ValueError) and isinstance(err, KafkaError)
    assert err.key == "queue.tme"
    assert "unknown producer config key 'queue.tme'" in str(err)
    assert "did you mean 'queue.time' (alias of 'queue.buffering.max.ms')?" in str(err)


def test_unknown_key_close_to_a_canonical_name():
    err = raises_config(consumer, {"auto.offset.rest": "smallest"})
    assert "did you mean 'auto.offset.reset'?" in str(err)


def test_unknown_key_without_near_match_points_to_describe_keys():
    err = raises_config(consumer, {"xyzzy": 1})
    assert "see kclient.config.describe_keys('consumer')" in str(err)


def test_unknown_override_is_reported_with_dots():
    err = raises_config(producer, producer_typ="async")
    assert "'producer.typ'" in str(err) and "'producer.type'" in str(err)


def test_consumer_key_given_to_producer_names_its_role():
    err = raises_config(producer, {"group.id": "g1"})
    assert str(err) == "config 'group.id' is a consumer setting; the producer does not accept it"


def test_producer_key_given_to_consumer_names_its_role():
    err = raises_config(consumer, {"queue.time": "5"})
    assert "'queue.time' is a producer setting; the consumer does not accept it" in str(err)


def test_non_string_key():
    err = raises_config(producer, {5: "x"})
    assert "config keys must be strings" in str(err)


def test_unknown_role():
    with pytest.raises(ValueError, match="role must be one of producer, consumer"):
        load_config("broker", {})


# ---------------------------------------------------------------- values


def test_string_values_from_a_properties_file_are_typed():
    props = {
        "metadata.broker.list": "broker1:9092, broker2:9093",
        "producer.type": "async",
        "request.required.acks": "-1",
        "compression.codec": "gzip",
        "compressed.topics": "a, b,,c",
        "queue.buffering.max.ms": "250",
        "queue.enqueue.timeout.ms": "0",
        "api.version.request": "false",
        "broker.version.fallback": "0.8.2",
        "serializer.class": "kafka.serializer.StringEncoder",
        "partitioner.class": "kafka.producer.DefaultPartitioner",
        "serializer.encoding": "UTF8",
    }
    cfg = producer(props)
    assert cfg["metadata.broker.list"] == (("broker1", 9092), ("broker2", 9093))
    assert cfg["request.required.acks"] == -1
    assert cfg["compression.codec"] == "gzip"
    assert cfg["compressed.topics"] == ("a", "b", "c")
    assert cfg["queue.buffering.max.ms"] == 250 and cfg["queue.enqueue.timeout.ms"] == 0
    assert cfg["api.version.request"] is False
    assert cfg["broker.version.fallback"] == "0.8.2"
    assert cfg["serializer.class"] is StringEncoder
    assert cfg["partitioner.class"] is JavaHashPartitioner
    assert cfg["serializer.encoding"] == "utf-8"


@pytest.mark.parametrize(
    "value,expected",
    [(0, "none"), ("1", "gzip"), (2, "snappy"), ("3", "lz4"), (4, "zstd"), ("GZIP", "gzip")],
)
def test_compression_codec_numbers_and_case(value, expected):
    assert producer({"compression.codec": value})["compression.codec"] == expected


@pytest.mark.parametrize(
    "value,expected",
    [("earliest", "smallest"), ("latest", "largest"), ("LARGEST", "largest"), ("none", "none")],
)
def test_auto_offset_reset_value_aliases(value, expected):
    assert consumer({"auto.offset.reset": value})["auto.offset.reset"] == expected


@pytest.mark.parametrize(
    "value,expected",
    [
        ("true", True),
        ("FALSE", False),
        ("yes", True),
        ("off", False),
        ("1", True),
        (0, False),
        (True, True),
    ],
)
def test_booleans(value, expected):
    assert consumer({"auto.commit.enable": value})["auto.commit.enable"] is expected


@pytest.mark.parametrize(
    "role,key,value,fragments",
    [
        ("producer", "producer.type", "fast", ["'fast'", "'producer.type'", "one of sync, async"]),
        (
            "producer",
            "acks",
            2,
            ["value 2", "'request.required.acks' (given as 'acks')", "one of -1, 0, 1, all (= -1)"],
        ),
        ("producer", "request.required.acks", True, ["one of -1, 0, 1"]),
        (
            "producer",
            "compression.codec",
            "brotli",
            ["'brotli'", "none, gzip, snappy, lz4, zstd", "2 (= snappy)"],
        ),
        ("producer", "queue.buffering.max.ms", "soon", ["'soon'", "an integer >= 0"]),
        ("producer", "queue.buffering.max.ms", -5, ["-5", "an integer >= 0"]),
        ("producer", "queue.enqueue.timeout.ms", -2, ["an integer >= -1"]),
        ("producer", "batch.num.messages", 0, ["an integer >= 1"]),
        ("producer", "message.send.max.retries", True, ["True", "an integer"]),
        ("producer", "message.send.max.retries", 2.5, ["2.5", "an integer"]),
        ("producer", "metadata.broker.list", "", ["host:port", "no address given"]),
        ("producer", "metadata.broker.list", "h:abc", ["'h:abc'", "bad port 'abc'"]),
        ("producer", "metadata.broker.list", "h:70000", ["port 70000 out of range"]),
        ("producer", "metadata.broker.list", "a:b:c:d", ["cannot parse 'a:b:c:d'"]),
        ("producer", "zookeeper.connect", "zk:2181,:1/kafka", ["[/chroot]", "cannot parse ':1'"]),
        ("producer", "broker.version.fallback", "new", ["'new'", "such as 0.8.2"]),
        ("producer", "broker.version.fallback", 0.10, ["such as 0.8.2"]),
        ("producer", "client.id", 5, ["a string"]),
        ("producer", "compressed.topics", 5, ["comma-separated list"]),
        ("producer", "serializer.encoding", "klingon", ["text encoding"]),
        (
            "producer",
            "serializer.class",
            "nope.Missing",
            ["cannot import 'nope.Missing'", "to_message() method"],
        ),
        (
            "producer",
            "serializer.class",
            "kclient.encoders.NoSuchEncoder",
            ["cannot import 'kclient.encoders.NoSuchEncoder'"],
        ),
        ("producer", "serializer.class", "Encoder", ["is not a dotted path"]),
        (
            "producer",
            "serializer.class",
            "kclient.partitioner:DefaultPartitioner",
            ["has no to_message() method"],
        ),
        (
            "producer",
            "partitioner.class",
            "kclient.encoders.JsonEncoder",
            ["has no partition() method", "default, murmur2, roundrobin, javahash"],
        ),
        (
            "consumer",
            "auto.offset.reset",
            "begin",
            ["'begin'", "smallest, largest, none, earliest (= smallest), latest (= largest)"],
        ),
        ("consumer", "auto.commit.enable", "maybe", ["'maybe'", "true or false"]),
        ("consumer", "offsets.storage", "redis", ["one of zookeeper, kafka"]),
        (
            "consumer",
            "partition.assignment.strategy",
            "sticky",
            ["range, roundrobin or cooperative-sticky"],
        ),
        ("consumer", "consumer.timeout.ms", "-2", ["an integer >= -1"]),
    ],
)
def test_bad_values_name_key_value_and_allowed(role, key, value, fragments):
    err = raises_config(load_config, role, {key: value})
    text = str(err)
    assert text.startswith("invalid value ")
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    assert err.value == value
    assert err.allowed and err.allowed in text
    assert err.key == kc._ALIASES.get(key, key)


def test_none_is_allowed_for_keys_without_default():
    assert consumer({"group.id": None})["group.id"] is None
    err = raises_config(producer, {"producer.type": None})
    assert "invalid value None for config 'producer.type'" in str(err)


# ---------------------------------------------------------------- broker and ZooKeeper lists


@pytest.mark.parametrize(
    "value,expected",
    [
        ("h1:9092", (("h1", 9092),)),
        ("h1", (("h1", 9092),)),
        ("h1:1,h2:2", (("h1", 1), ("h2", 2))),
        (" h1:1 , ,h2:2 ", (("h1", 1), ("h2", 2))),
        ("[::1]:9093,[fe80::1]", (("::1", 9093), ("fe80::1", 9092))),
        ("0:h1:9092,1:h2:9092", (("h1", 9092), ("h2", 9092))),
        ("PLAINTEXT://h1:9092", (("h1", 9092),)),
        (["h1:1", ("h2", "2")], (("h1", 1), ("h2", 2))),
        ((("h1", 1),), (("h1", 1),)),
    ],
)
def test_broker_lists(value, expected):
    assert producer({"metadata.broker.list": value})["metadata.broker.list"] == expected


@pytest.mark.parametrize(
    "value,expected",
    [
        ("zk1:2181", "zk1:2181"),
        ("zk1:2181,zk2:2182/kafka", "zk1:2181,zk2:2182/kafka"),
        ("zk1:2181/kafka/", "zk1:2181/kafka"),
        ("zk1", "zk1"),
        (["zk1:2181", "zk2:2181"], "zk1:2181,zk2:2181"),
    ],
)
def test_zookeeper_connect_strings(value, expected):
    assert consumer({"zookeeper.connect": value})["zookeeper.connect"] == expected


# ---------------------------------------------------------------- class-valued keys


class UpperEncoder:
    def to_message(self, data):
        return data.upper().encode()


def test_class_keys_accept_dotted_paths_classes_and_objects():
    path = f"{__name__}.UpperEncoder"
    assert producer({"serializer.class": path})["serializer.class"] is UpperEncoder
    colon = f"{__name__}:UpperEncoder"
    assert producer({"serializer.class": colon})["serializer.class"] is UpperEncoder
    assert producer({"serializer.class": UpperEncoder})["serializer.class"] is UpperEncoder
    obj = StringEncoder("latin-1")
    assert producer({"serializer.class": obj})["serializer.class"] is obj


@pytest.mark.parametrize(
    "name,expected",
    [
        ("murmur2", DefaultPartitioner),
        ("roundrobin", RoundRobinPartitioner),
        ("javahash", JavaHashPartitioner),
        ("kafka.producer.DefaultPartitioner", JavaHashPartitioner),
        ("org.apache.kafka.clients.producer.internals.DefaultPartitioner", DefaultPartitioner),
    ],
)
def test_partitioner_names(name, expected):
    assert producer({"partitioner.class": name})["partitioner.class"] is expected


def test_class_keys_reject_objects_without_the_method():
    err = raises_config(producer, {"serializer.class": object()})
    assert "has no to_message() method" in str(err)
    err = raises_config(consumer, {"key.decoder.class": StringEncoder})
    assert "has no from_message() method" in str(err)


def test_create_instantiates_classes_and_returns_objects():
    cfg = producer({"serializer.class": "string"})
    assert isinstance(cfg.create("serializer.class"), StringEncoder)
    assert cfg.create("serializer.class", "latin-1").encoding == "latin-1"
    obj = DefaultPartitioner()
    assert producer(partitioner_class=obj).create("partitioner.class") is obj


# ---------------------------------------------------------------- cross-key rules


def test_heartbeat_must_be_below_session_timeout():
    err = raises_config(consumer, {"heartbeat.interval.ms": 30000})
    assert str(err) == "heartbeat.interval.ms (30000) must be lower than session.timeout.ms (30000)"
    assert err.key == "heartbeat.interval.ms"


def test_batch_must_fit_the_queue():
    err = raises_config(producer, {"batch.num.messages": 500, "queue.buffering.max.messages": 100})
    assert "batch.num.messages (500) must not exceed queue.buffering.max.messages (100)" in str(err)


# ---------------------------------------------------------------- the Config mapping


def test_config_is_read_only():
    cfg = producer()
    with pytest.raises(TypeError):
        cfg["producer.type"] = "async"  # type: ignore[index]
    with pytest.raises(TypeError):
        cfg._values["producer.type"] = "async"  # type: ignore[attr-defined]


def test_config_mapping_protocol():
    cfg = producer({"producer.type": "async"})
    assert len(cfg) == len(describe_keys("producer")) == len(list(cfg))
    assert dict(cfg)["producer.type"] == "async"
    assert "queue.time" in cfg and "group.id" not in cfg
    assert cfg.get("group.id", "absent") == "absent"
    with pytest.raises(KeyError, match="'group.id' is not a producer config key"):
        cfg["group.id"]
    assert cfg.role == "producer"
    assert repr(cfg) == "Config('producer', {'producer.type': 'async'})"


def test_is_set_distinguishes_given_from_defaulted():
    cfg = producer({"queue.time": 5})
    assert cfg.is_set("queue.buffering.max.ms") and not cfg.is_set("batch.num.messages")


def test_require_and_require_one_of():
    cfg = consumer({"zookeeper.connect": "zk:2181"})
    cfg.require("zookeeper.connect")
    err = raises_config(cfg.require, "group.id")
    assert str(err) == "missing required consumer config 'group.id'"
    cfg.require_one_of("metadata.broker.list", "zookeeper.connect")
    err = raises_config(producer().require_one_of, "metadata.broker.list", "zookeeper.connect")
    assert str(err) == "the producer needs 'metadata.broker.list' or 'zookeeper.connect'"


def test_reloading_a_config_is_idempotent():
    cfg = producer({"metadata.broker.list": "h:1", "serializer.class": "string", "acks": "all"})
    again = producer(cfg)
    assert dict(again) == dict(cfg)


# ---------------------------------------------------------------- description and docs


def test_describe_keys_by_role():
    common = {k.name for k in describe_keys("common")}
    prod = {k.name for k in describe_keys("producer")}
    cons = {k.name for k in describe_keys("consumer")}
    assert common == prod & cons
    assert "queue.buffering.max.ms" in prod - cons and "group.id" in cons - prod
    assert {"metadata.broker.list", "zookeeper.connect", "client.id"} <= common
    with pytest.raises(ValueError):
        describe_keys("admin")


def test_every_key_is_documented_and_aliases_are_unique():
    names = [k.name for k in kc.KEYS]
    aliases = [a for k in kc.KEYS for a in k.aliases]
    assert len(set(names)) == len(names)
    assert len(set(aliases)) == len(aliases)
    assert not set(names) & set(aliases)
    for key in kc.KEYS:
        assert key.doc.endswith(".") and key.roles
        assert key.type.allowed()


def test_all_spec_keys_are_known():
    spec_keys = """
        producer.type request.required.acks message.send.max.retries queue.buffering.max.ms
        batch.num.messages queue.enqueue.timeout.ms serializer.class key.serializer.class
        partitioner.class event.handler callback.handler metadata.broker.list zookeeper.connect
        topic.metadata.refresh.interval.ms compression.codec compressed.topics message.max.bytes
        api.version.request broker.version.fallback retry.backoff.ms
        offsets.storage dual.commit.enabled auto.commit.enable auto.commit.interval.ms
        auto.offset.reset consumer.timeout.ms rebalance.max.retries rebalance.backoff.ms
        group.id
    """.split()
    known = {k.name for k in kc.KEYS}
    assert not [k for k in spec_keys if k not in known]
    assert {"queue.time", "bootstrap.servers", "broker.list", "zk.connect"} <= set(kc._ALIASES)


@pytest.mark.parametrize("role", ["common", "producer", "consumer"])
def test_docs_tables_are_generated_from_the_key_table(role):
    assert keys_markdown(role) in DOCS.read_text()


# ---------------------------------------------------------------- migration traps (issue 15)


def test_batch_size_is_bytes_and_batch_num_messages_a_count():
    cfg = load_config("producer", {"batch.size": 16384})
    assert cfg["batch.size"] == 16384, "bytes, as in Java, librdkafka and kafka-python"
    assert cfg["batch.num.messages"] == 10000, "the 0.8 count is its own key"
    assert load_config("producer")["batch.size"] == 1000000


def test_plain_callables_are_serializers_and_deserializers():
    import json

    def enc(v):
        return json.dumps(v).encode()

    cfg = load_config("producer", value_serializer=enc, key_serializer=str.encode)
    assert cfg["serializer.class"] is enc and cfg["key.serializer.class"] is str.encode
    cfg = load_config(
        "consumer",
        {
            "group.id": "g",
            "value.deserializer": json.loads,
            "key.deserializer": lambda b: b.decode(),
        },
    )
    assert cfg["value.decoder.class"] is json.loads
    with pytest.raises(InvalidConfigError, match="plain callable"):
        load_config("producer", {"value.serializer": 42})
    with pytest.raises(InvalidConfigError, match="to_message"):
        load_config("producer", {"value.serializer": bytes})  # a class without to_message


def test_consumer_config_reads_the_consumers_arguments():
    """A leading mapping is the configuration, the rest are topics; a refused key raises with
    its reason before the bootstrap list is asked for, which is then required."""
    conf, topics = kc.consumer_config(
        ({"group.id": "g"}, "a", "b"), {"bootstrap_servers": "127.0.0.1:9092"}
    )
    assert topics == ("a", "b") and conf["group.id"] == "g"
    assert list(conf["metadata.broker.list"]) == [("127.0.0.1", 9092)]
    with pytest.raises(InvalidConfigError, match="zookeeper.connect: not here"):
        kc.consumer_config(
            (), {"zookeeper.connect": "127.0.0.1:2181"}, {"zookeeper.connect": "not here"}
        )
    with pytest.raises(InvalidConfigError, match="metadata.broker.list"):
        kc.consumer_config(("a",), {})


# ---------------------------------------------------------------- group.protocol (KIP-848)


def test_group_protocol_defaults_to_classic_as_java():
    assert consumer()["group.protocol"] == "classic"
    assert consumer({"group.protocol": "consumer"})["group.protocol"] == "consumer"
    raises_config(consumer, {"group.protocol": "eager"})


@pytest.mark.parametrize(
    "given,named",
    [
        ({"session.timeout.ms": 10000}, "session.timeout.ms"),
        (
            {"heartbeat.interval.ms": 500, "partition.assignment.strategy": "range"},
            "partition.assignment.strategy, heartbeat.interval.ms",
        ),
    ],
)
def test_classic_only_keys_are_refused_under_the_consumer_protocol_in_javas_words(given, named):
    from kclient.aio import AIOConsumer
    from kclient.consumer import Consumer

    base = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "group.protocol": "consumer"}
    for make in (Consumer, AIOConsumer):
        with pytest.raises(InvalidConfigError) as info:
            make(dict(base, **given))
        assert str(info.value).startswith(f"{named} cannot be set when group.protocol=CONSUMER")
    # the same keys are fine under classic, and the consumer protocol's own keys are taken
    kc.consumer_config((), dict(base, **given, **{"group.protocol": "classic"}))
    conf, _ = kc.consumer_config(
        (), dict(base, **{"group.remote.assignor": "range", "client.rack": "r1"})
    )
    assert (conf["group.remote.assignor"], conf["client.rack"]) == ("range", "r1")
