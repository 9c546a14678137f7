"""Rebootstrap (KIP-899, KIP-1102): a client whose every known broker was replaced by new ones at
new addresses finds them again through its bootstrap list, threaded and asyncio; with
``metadata.recovery.strategy=none`` it does not.  The decision itself (kclient.core's
MetadataRecovery) is checked without I/O against a given clock.

The replaced cluster: the bootstrap list names the old brokers and one address nobody listens on
yet.  The clients learn the old brokers from it, produce, then every old broker stops and a new
broker (the same node id, new log directory, new address) starts on that address.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from kclient import Producer, ProducerData
from kclient.aio import AIOProducer
from kclient.broker import MiniBroker, MiniCluster
from kclient.cluster import Cluster
from kclient.config import load_config
from kclient.core.metadata_recovery import MetadataRecovery
from kclient.errors import FailedToSendMessageError, InvalidConfigError, NoBrokersAvailableError
from kclient.testing import free_port

from .conftest import FAST_GROUPS

TOPIC = "moved"


@contextlib.contextmanager
def replaced_cluster(tmp_path):
    """``(bootstrap, replace)``: two old brokers; ``replace()`` stops both and starts the new
    broker on the bootstrap list's spare address (the topic created there), returning it."""
    spare = free_port()
    old = MiniCluster(num_brokers=2, log_dir=tmp_path / "old", config=FAST_GROUPS).__enter__()
    new: list[MiniBroker] = []
    try:
        old.create_topic(TOPIC, partitions=2)

        def replace() -> MiniBroker:
            old.__exit__(None, None, None)
            broker = MiniBroker(log_dir=tmp_path / "new", port=spare, config=FAST_GROUPS)
            new.append(broker.__enter__())
            broker.create_topic(TOPIC, partitions=2)
            return broker

        yield f"{old.bootstrap},127.0.0.1:{spare}", replace
    finally:
        for broker in new:
            broker.__exit__(None, None, None)
        old.__exit__(None, None, None)


def _values(broker: MiniBroker) -> list[bytes]:
    """Every record value on the broker's TOPIC partitions."""
    with Cluster(broker.bootstrap) as cluster:
        from kclient.simple import FetchRequest, SimpleConsumer

        out = []
        for p in cluster.partitions_for(TOPIC):
            with SimpleConsumer(broker.host, broker.port, so_timeout=10000) as c:
                out += [bytes(m.message.value) for m in c.fetch(FetchRequest(TOPIC, p, 0, 1 << 20))]
        return sorted(out)


def _producer(bootstrap: str, **extra) -> Producer:
    return Producer(
        {
            "metadata.broker.list": bootstrap,
            "producer.type": "sync",
            "retry.backoff.ms": 50,
            "connect.timeout.ms": 2000,
            **extra,
        }
    )


def test_the_threaded_producer_rebootstraps_to_the_replacement(tmp_path):
    with replaced_cluster(tmp_path) as (bootstrap, replace), _producer(bootstrap) as p:
        assert p.send(ProducerData(TOPIC, b"before", partition=0))[0].ok
        assert {b.port for b in p.event_handler.cluster.brokers.values()} < {
            int(a.rsplit(":", 1)[1]) for a in bootstrap.split(",")
        }
        new = replace()
        report = p.send(ProducerData(TOPIC, b"after", partition=1))[0]
        assert report.ok, report.error
        cluster = p.event_handler.cluster
        assert [(b.host, b.port) for b in cluster.brokers.values()] == [(new.host, new.port)]
        assert cluster.recovery.rebootstraps == 1
        assert _values(new) == [b"after"]


def test_the_asyncio_producer_rebootstraps_to_the_replacement(tmp_path):
    with replaced_cluster(tmp_path) as (bootstrap, replace):

        async def main() -> MiniBroker:
            async with AIOProducer(
                bootstrap_servers=bootstrap, retry_backoff_ms=50, request_timeout_ms=3000
            ) as p:
                assert (await p.send(TOPIC, b"before", partition=0)).offset == 0
                new = replace()
                md = await asyncio.wait_for(p.send(TOPIC, b"after", partition=1), 60)
                assert (md.topic, md.partition, md.offset) == (TOPIC, 1, 0)
                assert [(b.host, b.port) for b in p.cluster.brokers.values()] == [
                    (new.host, new.port)
                ]
                assert p.cluster.recovery.rebootstraps == 1
                return new

        new = asyncio.run(main())
        assert _values(new) == [b"after"]


def test_strategy_none_keeps_to_the_known_brokers(tmp_path):
    with (
        replaced_cluster(tmp_path) as (bootstrap, replace),
        _producer(
            bootstrap, **{"metadata.recovery.strategy": "none", "message.send.max.retries": 1}
        ) as p,
    ):
        assert p.send(ProducerData(TOPIC, b"before", partition=0))[0].ok
        replace()
        with pytest.raises(FailedToSendMessageError):
            p.send(ProducerData(TOPIC, b"after", partition=1))
        cluster = p.event_handler.cluster
        with pytest.raises(NoBrokersAvailableError):
            cluster.refresh([TOPIC])
        assert cluster.recovery.rebootstraps == 0


def test_config_keys_have_kafka_4_defaults_and_refuse_bad_values():
    conf = load_config("producer", {"metadata.broker.list": "127.0.0.1:1"})
    assert conf["metadata.recovery.strategy"] == "rebootstrap"
    assert conf["metadata.recovery.rebootstrap.trigger.ms"] == 300000
    assert (
        load_config(
            "consumer",
            {"metadata.broker.list": "h:1", "group.id": "g", "metadata.recovery.strategy": "NONE"},
        )["metadata.recovery.strategy"]
        == "none"
    )
    with pytest.raises(InvalidConfigError, match="metadata.recovery.strategy"):
        load_config(
            "producer", {"metadata.broker.list": "h:1", "metadata.recovery.strategy": "sometimes"}
        )
    with pytest.raises(InvalidConfigError, match="trigger.ms"):
        load_config(
            "producer",
            {"metadata.broker.list": "h:1", "metadata.recovery.rebootstrap.trigger.ms": -1},
        )


# ---- the decision, without I/O
KNOWN = [(0, "10.0.0.1", 9092), (1, "10.0.0.2", 9092)]
BOOT = [("b", "10.0.0.1", 9092), ("b2", "seed", 9092)]


def test_before_any_metadata_the_bootstrap_list_is_asked():
    plan = MetadataRecovery().plan([], BOOT, 0.0)
    assert plan.candidates == BOOT and not plan.rebootstrap


def test_known_brokers_first_then_the_unseen_bootstrap_addresses():
    plan = MetadataRecovery().plan(KNOWN, BOOT, 0.0)
    assert plan.candidates == KNOWN + [("b2", "seed", 9092)] and not plan.rebootstrap
    assert MetadataRecovery("none").plan(KNOWN, BOOT, 0.0).candidates == KNOWN


def test_an_answer_from_the_bootstrap_list_after_the_known_failed_is_a_rebootstrap():
    r = MetadataRecovery()
    for each in KNOWN:
        r.failed(each, KNOWN, 1.0)
    assert r.answered(("b2", "seed", 9092), KNOWN, 1.5) and r.rebootstraps == 1
    r.failed(KNOWN[0], KNOWN, 2.0)  # one known broker fails, another answers
    assert not r.answered(KNOWN[1], KNOWN, 2.1) and r.rebootstraps == 1


def test_the_trigger_time_without_metadata_skips_the_known_brokers():
    r = MetadataRecovery(trigger_ms=5000)
    r.failed(KNOWN[0], KNOWN, 10.0)
    assert not r.plan(KNOWN, BOOT, 14.9).rebootstrap
    plan = r.plan(KNOWN, BOOT, 15.0)
    assert plan.rebootstrap and plan.candidates == BOOT
    r.answered(("b2", "seed", 9092), KNOWN, 15.1)
    assert not r.plan(KNOWN, BOOT, 99.0).rebootstrap  # metadata again: the clock restarts
    assert not MetadataRecovery("none", 0).plan(KNOWN, BOOT, 10**6).rebootstrap


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="metadata.recovery.strategy"):
        MetadataRecovery("always")
    with pytest.raises(ValueError, match="trigger.ms"):
        MetadataRecovery(trigger_ms=-1)
