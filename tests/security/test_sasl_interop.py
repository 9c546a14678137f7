"""confluent-kafka, kafka-python and kcat against the mini-broker's SASL listeners: produce and
group-consume over SASL_SSL/PLAIN, SASL_SSL/SCRAM-SHA-512 and SASL_PLAINTEXT/SCRAM-SHA-256, and
read what kclient wrote; a wrong password is refused for each."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kclient import Producer, ProducerData
from tests.needs import missing, need_module

from .conftest import USERS, sasl_client

COMBINATIONS = [
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
]


def _kclient_produce(broker, certs, protocol, mechanism, topic):
    with Producer(
        {
            "bootstrap.servers": broker.bootstrap_of(protocol),
            **sasl_client(certs, protocol, mechanism),
        }
    ) as p:
        p.send(ProducerData(topic, b"from-kclient"))


def _librdkafka_conf(broker, certs, protocol, mechanism, password=None):
    conf = {
        "bootstrap.servers": broker.bootstrap_of(protocol),
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password or USERS["alice"],
    }
    if protocol == "SASL_SSL":
        conf["ssl.ca.location"] = str(certs.ca)
    return conf


@pytest.mark.parametrize("protocol,mechanism", COMBINATIONS)
def test_confluent_kafka(sasl_broker, certs, protocol, mechanism):
    ck = need_module("confluent_kafka")
    topic = f"ck-{mechanism}"
    _kclient_produce(sasl_broker, certs, protocol, mechanism, topic)
    conf = _librdkafka_conf(sasl_broker, certs, protocol, mechanism)
    p = ck.Producer({**conf, "enable.idempotence": False})
    p.produce(topic, b"from-confluent")
    assert p.flush(20) == 0
    c = ck.Consumer({**conf, "group.id": topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    try:
        for _ in range(100):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            if len(got) == 2:
                break
    finally:
        c.close()
    assert got == [b"from-kclient", b"from-confluent"]
    errors = []
    bad = ck.Producer(
        {
            **_librdkafka_conf(sasl_broker, certs, protocol, mechanism, "wrong"),
            "error_cb": errors.append,
        }
    )
    bad.poll(3)
    assert any(e.code() == ck.KafkaError._AUTHENTICATION for e in errors), errors


@pytest.mark.parametrize("protocol,mechanism", COMBINATIONS)
def test_kafka_python(sasl_broker, certs, protocol, mechanism):
    kafka = need_module("kafka")
    topic = f"kp-{mechanism}"
    _kclient_produce(sasl_broker, certs, protocol, mechanism, topic)
    bootstrap = sasl_broker.bootstrap_of(protocol)
    sec = {
        "security_protocol": protocol,
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": USERS["alice"],
    }
    if protocol == "SASL_SSL":
        sec["ssl_cafile"] = str(certs.ca)
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, **sec)
    p.send(topic, b"from-kafka-python").get(20)
    p.close()
    c = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=topic,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
        **sec,
    )
    got = []
    for m in c:
        got.append(m.value)
        if len(got) == 2:
            break
    c.close()
    assert got == [b"from-kclient", b"from-kafka-python"]
    with pytest.raises(kafka.errors.KafkaError):  # it cannot bootstrap: auth fails
        kafka.KafkaProducer(
            bootstrap_servers=bootstrap,
            bootstrap_timeout_ms=2000,
            **{**sec, "sasl_plain_password": "x"},
        )


@pytest.mark.parametrize("protocol,mechanism", COMBINATIONS)
def test_kcat(sasl_broker, certs, protocol, mechanism):
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        missing("kcat not installed")
    topic = f"kc-{mechanism}"
    _kclient_produce(sasl_broker, certs, protocol, mechanism, topic)
    conf = _librdkafka_conf(sasl_broker, certs, protocol, mechanism)
    args = [a for k, v in conf.items() if k != "bootstrap.servers" for a in ("-X", f"{k}={v}")]
    bootstrap = conf["bootstrap.servers"]
    subprocess.run(
        [kcat, "-b", bootstrap, *args, "-P", "-t", topic],
        input=b"from-kcat\n",
        check=True,
        timeout=30,
    )
    out = subprocess.run(
        [kcat, "-b", bootstrap, *args, "-G", topic, topic, "-o", "beginning", "-e", "-q"],
        capture_output=True,
        timeout=60,
    ).stdout
    assert out.split() == [b"from-kclient", b"from-kcat"]
