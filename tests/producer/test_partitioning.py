"""Keyed messages go where Java's murmur2 partitioner sends them, in every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kclient.producer import Producer, ProducerData
from tests.needs import need_module

ROOT = Path(__file__).resolve().parents[2]
KEYS = [
    b"",
    b"a",
    b"key",
    b"user-1",
    b"user-42",
    b"\x00\xff\x10",
    "ключ".encode(),
    b"x" * 63,
    b"y" * 64,
    b"z" * 65,
    b"a-much-longer-key-with-" + b"q" * 200,
] + [b"k%d" % i for i in range(200)]


def _kclient_partitions(bootstrap, topic):
    with Producer({"metadata.broker.list": bootstrap}) as p:
        reports = p.send([ProducerData(topic, b"v", key=k) for k in KEYS])
    return {m.key: r.partition for r in reports for m in r.messages}


def test_partitions_match_librdkafka_murmur2(mini_broker):
    """librdkafka's ``murmur2_random`` partitioner is the Java client's murmur2."""
    confluent_kafka = need_module("confluent_kafka")
    mini_broker.create_topic("keys-ck", 12)
    ours = _kclient_partitions(mini_broker.bootstrap, "keys-ck")
    theirs = {}

    def on_delivery(err, msg):
        assert err is None, err
        theirs[msg.key()] = msg.partition()

    p = confluent_kafka.Producer(
        {"bootstrap.servers": mini_broker.bootstrap, "partitioner": "murmur2_random"}
    )
    for k in KEYS:
        p.produce("keys-ck", b"v", key=k, on_delivery=on_delivery)
    assert p.flush(30) == 0
    # librdkafka sends an empty key like a null key; compare the non-empty ones
    assert {k: v for k, v in ours.items() if k} == {k: v for k, v in theirs.items() if k}


def test_partitions_match_kafka_python():
    need_module("kafka")
    from kafka.partitioner.default import murmur2 as their_murmur2

    from kclient.partitioner import DefaultPartitioner

    ours = DefaultPartitioner()
    for k in KEYS:
        for n in (1, 3, 12, 100):
            assert ours.partition(k, n) == (their_murmur2(k) & 0x7FFFFFFF) % n


_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from kclient.producer import Producer, ProducerData
keys = [bytes.fromhex(h) for h in json.loads(sys.argv[1])]
with Producer({{"metadata.broker.list": {bootstrap!r}}}) as p:
    reports = p.send([ProducerData({topic!r}, b"v", key=k) for k in keys])
print(json.dumps({{m.key.hex(): r.partition for r in reports for m in r.messages}}))
"""


def test_partitions_stable_across_processes(mini_broker):
    mini_broker.create_topic("keys-proc", 7)
    keys = json.dumps([k.hex() for k in KEYS])
    script = _CHILD.format(root=str(ROOT), bootstrap=mini_broker.bootstrap, topic="keys-proc")
    results = []
    for seed in ("1", "2", "random"):
        out = subprocess.run(
            [sys.executable, "-c", script, keys],
            check=True,
            timeout=60,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        results.append(json.loads(out))
    assert results[0] == results[1] == results[2]
    ours = _kclient_partitions(mini_broker.bootstrap, "keys-proc")
    assert results[0] == {k.hex(): v for k, v in ours.items()}


def test_partition_for_and_string_keys(mini_broker):
    mini_broker.create_topic("keys-str", 5)
    with Producer(
        {"metadata.broker.list": mini_broker.bootstrap, "key.serializer.class": "string"}
    ) as p:
        r = p.send(ProducerData("keys-str", b"v", key="user-7"))
        assert r[0].partition == p.partition_for("keys-str", "user-7")
    from kclient.partitioner import murmur2

    assert r[0].partition == (murmur2(b"user-7") & 0x7FFFFFFF) % 5


def test_null_keys_spread_over_partitions(mini_broker):
    mini_broker.create_topic("keys-null", 3)
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        parts = {p.send(ProducerData("keys-null", b"v"))[0].partition for _ in range(9)}
    assert parts == {0, 1, 2}
