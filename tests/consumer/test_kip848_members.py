"""KIP-848 (``group.protocol=consumer``) kclient members on the mini-broker's consumer-group
coordinator: the scenarios of kip848_scenarios.py that integration/test_consumer_group_kip848.py
runs on Kafka 4.x (three members with one killed, and Java's member, run there only, for the
suite's time: the same client code; the mini-broker's joins, leaves and session expiries are
tests/consumer/test_confluent_kip848.py's and tests/broker/test_consumer_groups.py's).
``kclient bench rebalance`` measures the handover (a_member_joins_a_running_member)."""

from __future__ import annotations

import uuid

import pytest

from kclient import consumer
from kclient.broker import MiniBroker
from kclient.errors import InvalidConfigError
from kclient.testing.kafka import KIP848_TEST_SPEED

from . import kip848_connector
from . import kip848_scenarios as s


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """One mini-broker for the module, at Kafka 4.x test brokers' KIP-848 speed."""
    with MiniBroker(
        log_dir=tmp_path_factory.mktemp("kip848"),
        config={"group.initial.rebalance.delay.ms": "0", **KIP848_TEST_SPEED},
    ) as b:
        yield b


@pytest.fixture
def make_topic(broker):
    def make(partitions: int) -> str:
        name = f"kip848-{uuid.uuid4().hex[:8]}"
        broker.create_topic(name, partitions=partitions)
        return name

    return make


@pytest.fixture(params=["threaded", "asyncio"])
def drive(request, broker):
    return s.drivers(broker, request.param)


def test_join_assignment_ack_and_leave_through_both_drivers(broker, make_topic, drive):
    s.join_assignment_ack_and_leave_through_both_drivers(broker, make_topic, drive)


def test_a_stale_epoch_is_fenced_and_an_unknown_member_refused(broker, make_topic, drive):
    s.a_stale_epoch_is_fenced_and_an_unknown_member_refused(broker, make_topic, drive)


def test_a_static_member_restarts_and_gets_its_partitions_back_silently(broker, make_topic):
    s.a_static_member_restarts_and_gets_its_partitions_back_silently(broker, make_topic)


def test_mixed_group_with_confluent_kafka(broker, make_topic):
    s.mixed_group_with_confluent_kafka(broker, make_topic)


def test_two_connectors_share_a_topic(broker, make_topic):
    kip848_connector.two_connectors_share_a_topic(broker, make_topic)


def test_a_kip848_connector_refuses_classic_keys_and_zookeeper():
    base = {"group.id": "g", "group.protocol": "consumer"}
    with pytest.raises(
        InvalidConfigError, match="^session.timeout.ms cannot be set when group.protocol=CONSUMER"
    ):
        consumer.create(base, **{"metadata.broker.list": "127.0.0.1:9", "session.timeout.ms": 6000})
    with pytest.raises(InvalidConfigError, match="unset zookeeper.connect"):
        consumer.create(base, **{"zookeeper.connect": "127.0.0.1:9"})


def test_classic_and_consumer_protocol_members_share_a_group(broker, make_topic):
    s.classic_and_consumer_protocol_members_share_a_group(broker, make_topic)


def test_offset_fetch_names_the_member(make_topic, drive):
    s.offset_fetch_names_the_member(None, make_topic, drive)
