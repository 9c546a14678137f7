"""Other clients over the mini-broker's SSL listener: confluent-kafka (librdkafka/OpenSSL),
kafka-python (Python's ssl) and kcat produce and consume there, and read what kclient wrote."""

from __future__ import annotations

import shutil
import subprocess

from kclient import Producer, ProducerData
from tests.needs import missing, need_module

from .conftest import ssl_client


def _kclient_produce(bootstrap, certs, topic, values):
    with Producer({"bootstrap.servers": bootstrap, **ssl_client(certs)}) as p:
        p.send([ProducerData(topic, v) for v in values])


def test_confluent_kafka_over_tls(tls_broker, certs):
    ck = need_module("confluent_kafka")
    bootstrap = tls_broker.bootstrap_of("SSL")
    conf = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca),
    }
    _kclient_produce(bootstrap, certs, "ck", [b"from-kclient"])
    p = ck.Producer({**conf, "enable.idempotence": False})
    p.produce("ck", b"from-confluent")
    assert p.flush(20) == 0
    c = ck.Consumer({**conf, "group.id": "ck-tls", "auto.offset.reset": "earliest"})
    c.subscribe(["ck"])
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


def test_kafka_python_over_tls(tls_broker, certs):
    kafka = need_module("kafka")
    bootstrap = tls_broker.bootstrap_of("SSL")
    tls = {"security_protocol": "SSL", "ssl_cafile": str(certs.ca)}
    _kclient_produce(bootstrap, certs, "kp", [b"from-kclient"])
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, **tls)
    p.send("kp", b"from-kafka-python").get(20)
    p.close()
    c = kafka.KafkaConsumer(
        "kp",
        bootstrap_servers=bootstrap,
        group_id="kp-tls",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
        **tls,
    )
    got = []
    for m in c:
        got.append(m.value)
        if len(got) == 2:
            break
    c.close()
    assert got == [b"from-kclient", b"from-kafka-python"]


def test_kcat_over_tls(tls_broker, certs):
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        missing("kcat not installed")
    bootstrap = tls_broker.bootstrap_of("SSL")
    tls = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={certs.ca}"]
    _kclient_produce(bootstrap, certs, "kc", [b"from-kclient"])
    subprocess.run(
        [kcat, "-b", bootstrap, *tls, "-P", "-t", "kc"],
        input=b"from-kcat\n",
        check=True,
        timeout=30,
    )
    out = subprocess.run(
        [kcat, "-b", bootstrap, *tls, "-C", "-t", "kc", "-o", "beginning", "-e", "-q"],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    assert out.split() == [b"from-kclient", b"from-kcat"]
