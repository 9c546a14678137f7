"""valueFormat=avro: a Confluent-Avro topic (written by confluent-kafka's AvroSerializer) read
into typed columns, and written back through the sink equal to the input, byte for byte."""

import json
from datetime import date

import pytest

AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "qty", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "int"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "SENT"]}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "raw", "type": "bytes"},
        {
            "name": "ship",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Ship",
                    "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": "int"}],
                },
            ],
            "default": None,
        },
    ],
}


def order(i):
    return {
        "id": i,
        "customer": f"c{i % 7}",
        "amount": i * 1.5,
        "paid": i % 2 == 0,
        "qty": i % 5,
        "ratio": 0.5,
        "note": None if i % 3 else f"n{i}",
        "tags": [f"t{j}" for j in range(i % 3)],
        "counts": {"a": i} if i % 2 else {},
        "status": "SENT" if i % 2 else "NEW",
        "day": date(2026, 1, 1 + i % 28),
        "raw": bytes([i % 256]) * (i % 4),
        "ship": {"city": "Oslo", "zip": i} if i % 4 == 0 else None,
    }


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory):
    from kclient.broker import MiniBroker

    with MiniBroker(
        log_dir=tmp_path_factory.mktemp("spark-registry"), schema_registry=True
    ) as broker:
        yield broker


def test_avro_topic_round_trip(spark, registry_broker):
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from pyspark.sql.types import DateType, LongType, MapType, StructType

    from kclient.simple import SimpleConsumer

    b, url = registry_broker, registry_broker.schema_registry_url
    b.create_topic("orders", 2)
    b.create_topic("orders-copy", 1)
    sr = SchemaRegistryClient({"url": url})
    ser = AvroSerializer(sr, json.dumps(AVRO))
    orders = [order(i) for i in range(200)]
    encoded = {o["id"]: ser(o, SerializationContext("orders", MessageField.VALUE)) for o in orders}
    p = Producer({"bootstrap.servers": b.bootstrap})
    for o in orders:
        p.produce("orders", encoded[o["id"]], partition=o["id"] % 2)
    p.flush(10)
    del p
    opts = {
        "kafka.bootstrap.servers": b.bootstrap,
        "subscribe": "orders",
        "valueFormat": "avro",
        "schema.registry.url": url,
    }
    df = spark.read.format("kclient").options(**opts).load()
    value = df.schema["value"].dataType
    assert isinstance(value, StructType)
    assert value["id"].dataType == LongType() and not value["id"].nullable
    assert value["day"].dataType == DateType() and value["note"].nullable
    assert isinstance(value["counts"].dataType, MapType)
    rows = df.select("value.*").collect()
    got = sorted((r.asDict(recursive=True) for r in rows), key=lambda d: d["id"])
    for g in got:
        g["raw"] = bytes(g["raw"])
    assert got == orders
    assert df.where("value.paid").count() == 100  # typed columns filter in Spark
    (
        df.select("value")
        .write.format("kclient")
        .option("kafka.bootstrap.servers", b.bootstrap)
        .option("topic", "orders-copy")
        .option("valueFormat", "avro")
        .option("schema.registry.url", url)
        .option("valueSubject", "orders-value")
        .mode("append")
        .save()
    )
    host, port = b.bootstrap.split(":")
    with SimpleConsumer(host, int(port)) as c:
        copied = [mo.message.value for mo in c.iter_messages("orders-copy", 0, 0)]
    de = AvroDeserializer(sr)
    back = sorted(
        (de(v, SerializationContext("orders-copy", MessageField.VALUE)) for v in copied),
        key=lambda d: d["id"],
    )
    assert back == orders
    assert sorted(copied) == sorted(encoded.values())  # the same bytes, the same id
    assert sorted(sr.get_subjects()) == ["orders-copy-value", "orders-value"]


def test_bad_options_are_named(spark, registry_broker):
    opts = {
        "kafka.bootstrap.servers": registry_broker.bootstrap,
        "subscribe": "orders",
        "valueFormat": "avro",
    }
    with pytest.raises(Exception, match="schema.registry.url"):
        spark.read.format("kclient").options(**opts).load()
    with pytest.raises(Exception, match="typed columns are made for avro"):
        spark.read.format("kclient").options(**dict(opts, valueFormat="protobuf")).load()


def test_stream_typed_read_and_write(spark, registry_broker, tmp_path):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from kclient import Producer
    from kclient.schema_registry import SchemaRegistryClient as Ours
    from kclient.schema_registry.avro import AvroSerializer
    from kclient.simple import SimpleConsumer

    b, url = registry_broker, registry_broker.schema_registry_url
    b.create_topic("s-in", 2)
    b.create_topic("s-out", 1)
    orders = [order(i) for i in range(60)]
    with Producer(
        bootstrap_servers=b.bootstrap, value_serializer=AvroSerializer(Ours(url), json.dumps(AVRO))
    ) as p:
        for o in orders:
            p.produce("s-in", o, partition=o["id"] % 2)
    df = (
        spark.readStream.format("kclient")
        .option("kafka.bootstrap.servers", b.bootstrap)
        .option("subscribe", "s-in")
        .option("startingOffsets", "earliest")
        .option("valueFormat", "avro")
        .option("schema.registry.url", url)
        .load()
    )
    q = (
        df.select("value")
        .writeStream.format("kclient")
        .option("kafka.bootstrap.servers", b.bootstrap)
        .option("topic", "s-out")
        .option("valueFormat", "avro")
        .option("schema.registry.url", url)
        .option("valueSubject", "s-in-value")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert not q.isActive and q.exception() is None, q.exception()
    host, port = b.bootstrap.split(":")
    with SimpleConsumer(host, int(port)) as c:
        copied = [mo.message.value for mo in c.iter_messages("s-out", 0, 0)]
    de = AvroDeserializer(SchemaRegistryClient({"url": url}))
    back = sorted(
        (de(v, SerializationContext("s-out", MessageField.VALUE)) for v in copied),
        key=lambda d: d["id"],
    )
    assert back == orders
