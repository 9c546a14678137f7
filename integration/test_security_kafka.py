"""kclient against real Apache Kafka 4.x over SSL and SASL_SSL/SCRAM-SHA-512 (TLS from PEM
files generated at test time, SCRAM users made by Kafka's storage format): produce,
SimpleConsumer and group consumption; a wrong password and an untrusted CA are refused."""
from __future__ import annotations

import pytest

from kclient import Producer, ProducerData, consumer
from kclient.errors import SaslAuthenticationError, SslAuthenticationError
from kclient.simple import FetchRequest, SimpleConsumer
from kclient.testing import KafkaServer, kafka_problem

SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


@pytest.fixture(scope="module")
def secured_kafka(tmp_path_factory):
    """Kafka 4 with PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512, user alice) listeners."""
    problem = kafka_problem("4")
    if problem:
        pytest.skip(problem)
    pytest.importorskip("cryptography")
    from kclient.testing.certs import make_certificates
    certs = make_certificates(tmp_path_factory.mktemp("kafka-certs"))
    config = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server_pem),
              "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
              "sasl.enabled.mechanisms": "SCRAM-SHA-512",
              "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS}
    with KafkaServer("4", config=config, listeners={"SSL": "SSL", "SASL_SSL": "SASL_SSL"},
                     format_args=["--add-scram",
                                  "SCRAM-SHA-512=[name=alice,password=alice-secret]"]) as kafka:
        kafka.certs = certs
        yield kafka


def _keys(kafka, listener, **extra):
    keys = {"security.protocol": listener, "ssl.ca.location": str(kafka.certs.ca)}
    if listener == "SASL_SSL":
        keys.update({"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                     "sasl.password": "alice-secret"})
    return {**keys, **extra}


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_produce_fetch_and_group_consumption(secured_kafka, listener):
    bootstrap, keys = secured_kafka.bootstrap_for(listener), _keys(secured_kafka, listener)
    topic = f"secured-{listener.lower()}"
    with Producer({"bootstrap.servers": bootstrap, "request.required.acks": -1, **keys}) as p:
        p.send([ProducerData(topic, f"m{i}".encode()) for i in range(5)])
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with SimpleConsumer(host, int(port), security=keys) as c:
        fetched = [m.message.value for m in c.fetch(FetchRequest(topic, 0, 0, 1 << 20))]
    assert fetched == [f"m{i}".encode() for i in range(5)]
    conn = consumer.create({"bootstrap.servers": bootstrap, "group.id": f"g-{listener}",
                            "auto.offset.reset": "smallest", "consumer.timeout.ms": 10000,
                            **keys})
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
        with Producer({"bootstrap.servers": secured_kafka.bootstrap_for("SASL_SSL"),
                       "message.send.max.retries": 1, **wrong}) as p:
            p.send(ProducerData("t", b"x"))
    foreign = _keys(secured_kafka, "SSL", **{"ssl.ca.location": str(secured_kafka.certs.other_ca)})
    with pytest.raises(SslAuthenticationError):
        with Producer({"bootstrap.servers": secured_kafka.bootstrap_for("SSL"),
                       "message.send.max.retries": 1, **foreign}) as p:
            p.send(ProducerData("t", b"x"))
