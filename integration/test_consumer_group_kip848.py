"""KIP-848 (``group.protocol=consumer``) against Kafka 4's own group coordinator: the scenarios of
tests/consumer/kip848_scenarios.py (the mini-broker runs them too, in
tests/consumer/test_kip848_members.py).  Kafka 4.x serves the consumer protocol by default;
kclient.testing's KafkaServer lowers its heartbeat interval (500 ms) and session timeout (10 s)
to test speed."""

from __future__ import annotations

import pytest

from tests.consumer import kip848_connector
from tests.consumer import kip848_scenarios as s

from .helpers import new_topic

pytestmark = pytest.mark.kafka


@pytest.fixture
def make_topic(kafka4):
    return lambda partitions: new_topic(kafka4, partitions=partitions)


@pytest.fixture(params=["threaded", "asyncio"])
def drive(request, kafka4):
    return s.drivers(kafka4, request.param)


def test_join_assignment_ack_and_leave_through_both_drivers(kafka4, make_topic, drive):
    s.join_assignment_ack_and_leave_through_both_drivers(kafka4, make_topic, drive)


def test_a_stale_epoch_is_fenced_and_an_unknown_member_refused(kafka4, make_topic, drive):
    s.a_stale_epoch_is_fenced_and_an_unknown_member_refused(kafka4, make_topic, drive)


def test_three_members_join_leave_and_one_is_killed(kafka4, make_topic):
    s.three_members_join_leave_and_one_is_killed(kafka4, make_topic)


def test_a_static_member_restarts_and_gets_its_partitions_back_silently(kafka4, make_topic):
    s.a_static_member_restarts_and_gets_its_partitions_back_silently(kafka4, make_topic)


def test_mixed_group_with_javas_kafka_consumer(kafka4, make_topic):
    s.mixed_group_with_javas_kafka_consumer(kafka4, make_topic)


def test_mixed_group_with_confluent_kafka(kafka4, make_topic):
    s.mixed_group_with_confluent_kafka(kafka4, make_topic)


def test_two_connectors_share_a_topic(kafka4, make_topic):
    kip848_connector.two_connectors_share_a_topic(kafka4, make_topic)


def test_classic_and_consumer_protocol_members_share_a_group(kafka4, make_topic):
    s.classic_and_consumer_protocol_members_share_a_group(kafka4, make_topic)


def test_offset_fetch_names_the_member(make_topic, drive):
    s.offset_fetch_names_the_member(None, make_topic, drive)
