"""The ZooKeeper layout, byte for byte against what Apache Kafka 3.9.2 wrote in ZooKeeper mode.

The KAFKA_* constants were read from a real Kafka 3.9.2 broker's znodes (port 34997, broker id
1, rack r1; inter.broker.protocol.version 2.6 and 0.9.0 for versions 4 and 2);
tests/broker/test_zk_vs_kafka.py compares against a live one where the distribution is cached.
"""

from __future__ import annotations

import json

import pytest

from kclient.protocol import zookeeper as z

STAMP = 1795525576903
KAFKA_V5_RACK = (
    b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://127.0.0.1:34997"],"rack":"r1","jmx_port":-1,'
    b'"port":34997,"host":"127.0.0.1","version":5,"timestamp":"1795525576903"}'
)
KAFKA_V4 = (
    b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://127.0.0.1:34997"],"jmx_port":-1,"port":34997,'
    b'"host":"127.0.0.1","version":4,"timestamp":"1795525576903"}'
)
KAFKA_V2 = (
    b'{"endpoints":["PLAINTEXT://127.0.0.1:34997"],"jmx_port":-1,"port":34997,'
    b'"host":"127.0.0.1","version":2,"timestamp":"1795525576903"}'
)
KAFKA_TOPIC = (
    b'{"partitions":{"0":[1],"1":[1]},"adding_replicas":{},"removing_replicas":{},"version":3}'
)
KAFKA_STATE = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}'
KAFKA_CONFIG = b'{"version":1,"config":{"retention.ms":"1000"}}'
KAFKA_CONTROLLER = (
    b'{"version":2,"brokerid":1,"timestamp":"1795525577130","kraftControllerEpoch":-1}'
)


def test_broker_registrations_are_kafkas_bytes():
    assert z.broker_registration("127.0.0.1", 34997, STAMP, rack="r1") == KAFKA_V5_RACK
    assert z.broker_registration("127.0.0.1", 34997, STAMP, version=4) == KAFKA_V4
    assert z.broker_registration("127.0.0.1", 34997, STAMP, version=2) == KAFKA_V2
    without_rack = json.loads(KAFKA_V5_RACK)
    del without_rack["rack"]
    assert json.loads(z.broker_registration("127.0.0.1", 34997, STAMP)) == without_rack
    with pytest.raises(ValueError):
        z.broker_registration("h", 1, STAMP, version=1)


def test_topic_znodes_are_kafkas_bytes():
    assert z.topic_assignment({1: [1], 0: [1]}) == KAFKA_TOPIC
    assert z.partition_state(1) == KAFKA_STATE
    assert z.topic_config({"retention.ms": "1000"}) == KAFKA_CONFIG
    assert z.controller(1, 1795525577130) == KAFKA_CONTROLLER


@pytest.mark.parametrize(
    "ibp,version",
    [
        (None, 5),
        ("3.9", 5),
        ("2.7-IV0", 5),
        ("2.6", 4),
        ("1.0", 4),
        ("0.11.0", 4),
        ("0.10.0-IV1", 4),
        ("0.10.0-IV0", 2),
        ("0.9.0", 2),
        ("0.8.2", 2),
    ],
)
def test_registration_version_is_kafkas_choice(ibp, version):
    assert z.registration_version(ibp) == version


def test_every_registration_version_parses():
    v1 = b'{"jmx_port":-1,"timestamp":"1","host":"h1","version":1,"port":9092}'
    assert z.parse_broker_registration(v1) == z.BrokerRegistration(1, "h1", 9092)
    for data, version in ((KAFKA_V2, 2), (KAFKA_V4, 4), (KAFKA_V5_RACK, 5)):
        reg = z.parse_broker_registration(data)
        assert (reg.version, reg.host, reg.port) == (version, "127.0.0.1", 34997)
        assert reg.endpoints == ("PLAINTEXT://127.0.0.1:34997",)
    assert z.parse_broker_registration(KAFKA_V5_RACK).rack == "r1"
    # no PLAINTEXT host/port at the top level: the endpoint a listener map calls PLAINTEXT
    named = {
        "version": 4,
        "host": None,
        "port": -1,
        "endpoints": ["SECURE://s:9093", "CLIENT://c:9092"],
        "listener_security_protocol_map": {"SECURE": "SSL", "CLIENT": "PLAINTEXT"},
    }
    assert z.parse_broker(json.dumps(named)) == ("c", 9092)


def test_a_registration_of_several_listeners_serves_each_protocol():
    data = z.broker_registration(
        "ignored",
        0,
        STAMP,
        listeners=[
            ("SSL", "SSL", "h", 9093),
            ("PLAINTEXT", "PLAINTEXT", "h", 9092),
            ("SECURE", "SASL_SSL", "h", 9094),
        ],
    )
    obj = json.loads(data)
    assert obj["listener_security_protocol_map"] == {
        "SSL": "SSL",
        "PLAINTEXT": "PLAINTEXT",
        "SECURE": "SASL_SSL",
    }
    assert obj["endpoints"] == ["SSL://h:9093", "PLAINTEXT://h:9092", "SECURE://h:9094"]
    assert (obj["host"], obj["port"]) == ("h", 9092)  # the PLAINTEXT one, as Kafka
    assert z.parse_broker(data) == ("h", 9092)
    assert z.parse_broker(data, "SSL") == ("h", 9093)
    assert z.parse_broker(data, "SASL_SSL") == ("h", 9094)
    with pytest.raises(ValueError, match="without a SASL_PLAINTEXT address"):
        z.parse_broker(data, "SASL_PLAINTEXT")
    secured_only = json.loads(
        z.broker_registration("x", 0, STAMP, listeners=[("SSL", "SSL", "h", 9093)])
    )
    assert (secured_only["host"], secured_only["port"]) == (None, -1)
    assert z.parse_broker(json.dumps(secured_only), "SSL") == ("h", 9093)


def test_topic_znodes_parse_back():
    assert z.parse_topic_assignment(KAFKA_TOPIC) == {0: [1], 1: [1]}
    assert z.parse_topic_assignment(b'{"version":1,"partitions":{"0":[0,1]}}') == {0: [0, 1]}
    assert z.parse_partition_leader(KAFKA_STATE) == 1
    assert z.parse_partition_leader(b'{"leader":-1}') is None


def test_consumer_registration_escapes_slash_as_kafka_08():
    data = z.registration_json({"a/b": 1}, "static", 5)
    assert data == '{"version":1,"subscription":{"a\\/b":1},"pattern":"static","timestamp":"5"}'
    assert z.parse_registration(data) == ("static", {"a/b": 1})
    assert z.GroupDirs("g").offset("t", 3) == "/consumers/g/offsets/t/3"
