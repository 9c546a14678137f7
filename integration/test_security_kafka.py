"""kclient against real Apache Kafka 4.x over SSL, SASL_SSL (SCRAM-SHA-512 and PLAIN) and
SASL_PLAINTEXT/SCRAM-SHA-256 (TLS from PEM files generated at test time, SCRAM users made by
Kafka's storage format): produce, SimpleConsumer and group consumption; a wrong password and an
untrusted CA are refused."""

from __future__ import annotations

import pytest

from kclient import Producer, ProducerData, consumer
from kclient.errors import SaslAuthenticationError, SslAuthenticationError
from kclient.simple import FetchRequest, SimpleConsumer
from kclient.testing import KafkaServer, kafka_problem
from tests.needs import missing, need_module

SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
)
COMBINATIONS = [
    ("SSL", None),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
]


@pytest.fixture(scope="module")
def secured_kafka(tmp_path_factory):
    """Kafka 4 with PLAINTEXT, SSL, SASL_SSL and SASL_PLAINTEXT listeners (user alice)."""
    problem = kafka_problem("4")
    if problem:
        missing(problem)
    need_module("cryptography")
    from kclient.testing.certs import make_certificates

    certs = make_certificates(tmp_path_factory.mktemp("kafka-certs"))
    config = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.server_pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs.ca),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
    }
    for listener in ("sasl_ssl", "sasl_plaintext"):  # every listener x mechanism its JAAS
        for mechanism, jaas in (
            ("scram-sha-512", SCRAM_JAAS),
            ("scram-sha-256", SCRAM_JAAS),
            ("plain", PLAIN_JAAS),
        ):
            config[f"listener.name.{listener}.{mechanism}.sasl.jaas.config"] = jaas
    listeners = {"SSL": "SSL", "SASL_SSL": "SASL_SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT"}
    users = [
        "--add-scram",
        "SCRAM-SHA-512=[name=alice,password=alice-secret]",
        "--add-scram",
        "SCRAM-SHA-256=[name=alice,password=alice-secret]",
    ]
    with KafkaServer("4", config=config, listeners=listeners, format_args=users) as kafka:
        kafka.certs = certs
        yield kafka


def _keys(kafka, listener, mechanism="SCRAM-SHA-512", **extra):
    keys = {"security.protocol": listener, "ssl.ca.location": str(kafka.certs.ca)}
    if listener.startswith("SASL"):
        keys.update(
            {"sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": "alice-secret"}
        )
    return {**keys, **extra}


@pytest.mark.parametrize("listener,mechanism", COMBINATIONS)
def test_produce_fetch_and_group_consumption(secured_kafka, listener, mechanism):
    bootstrap = secured_kafka.bootstrap_for(listener)
    keys = _keys(secured_kafka, listener, mechanism)
    topic = f"secured-{listener.lower()}-{(mechanism or 'tls').lower()}"
    with Producer({"bootstrap.servers": bootstrap, "request.required.acks": -1, **keys}) as p:
        p.send([ProducerData(topic, f"m{i}".encode()) for i in range(5)])
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with SimpleConsumer(host, int(port), security=keys) as c:
        fetched = [m.message.value for m in c.fetch(FetchRequest(topic, 0, 0, 1 << 20))]
    assert fetched == [f"m{i}".encode() for i in range(5)]
    conn = consumer.create(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 10000,
            **keys,
        }
    )
    try:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        got = [next(iter(stream)).message for _ in range(5)]
        conn.commit_offsets()
    finally:
        conn.shutdown()
    assert sorted(got) == sorted(fetched)


def test_a_wrong_password_and_an_untrusted_ca_are_refused(secured_kafka):
    wrong = _keys(secured_kafka, "SASL_SSL", **{"sasl.password": "nope"})
    with pytest.raises(SaslAuthenticationError, match="SCRAM-SHA-512"):
        with Producer(
            {
                "bootstrap.servers": secured_kafka.bootstrap_for("SASL_SSL"),
                "message.send.max.retries": 1,
                **wrong,
            }
        ) as p:
            p.send(ProducerData("t", b"x"))
    foreign = _keys(secured_kafka, "SSL", **{"ssl.ca.location": str(secured_kafka.certs.other_ca)})
    with pytest.raises(SslAuthenticationError):
        with Producer(
            {
                "bootstrap.servers": secured_kafka.bootstrap_for("SSL"),
                "message.send.max.retries": 1,
                **foreign,
            }
        ) as p:
            p.send(ProducerData("t", b"x"))


@pytest.mark.spark
@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_spark_read_write_and_exactly_once_sink(secured_kafka, spark, tmp_path, listener):
    """The kclient data source with Spark users' options: a JKS truststore (SSL) and SCRAM from
    Java's JAAS line (SASL_SSL)."""
    from kclient.cluster import Cluster
    from kclient.testing.certs import make_java_stores
    from tests.spark.test_security import roundtrip

    stores = make_java_stores(secured_kafka.certs)
    options = {
        "kafka.bootstrap.servers": secured_kafka.bootstrap_for(listener),
        "kafka.security.protocol": listener,
        "kafka.ssl.truststore.location": str(stores.truststore_jks),
        "kafka.ssl.truststore.password": stores.password,
    }
    if listener == "SASL_SSL":
        options.update(
            {
                "kafka.sasl.mechanism": "SCRAM-SHA-512",
                "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                'username="alice" password="alice-secret";',
            }
        )

    def create(name, partitions):
        with Cluster(secured_kafka.bootstrap) as cluster:
            cluster.refresh([])
            cluster.create_topic(name, partitions)

    roundtrip(spark, create, options, tmp_path, f"spark-{listener.lower()}")
