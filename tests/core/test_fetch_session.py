"""Incremental fetch sessions (KIP-227) through both drivers on the mini-broker: the scenarios
of tests/core/fetch_sessions.py (the same ones run against Kafka 4.x in
integration/test_fetch_sessions_kafka.py), and the client's session below v7 and after a lost
answer."""

from __future__ import annotations

import pytest

from kclient.core.fetch import PartitionFetch
from kclient.core.fetch_session import FetchSession

from .fetch_sessions import PARTITIONS, SCENARIOS, SETTINGS


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_session_scenario(drive, mini_broker, scenario):
    mini_broker.create_topic("sessions", PARTITIONS)
    scenario(drive, "sessions")


def test_below_v7_requests_are_sessionless():
    session = FetchSession()
    body = session.body([PartitionFetch("t", 0, 5)], SETTINGS, 6)
    assert (body["session_id"], body["session_epoch"]) == (0, -1)
    assert session.full_requests == 0 and session.close_body(SETTINGS) is None


def test_a_lost_answer_makes_the_next_request_full_closing_the_old_session():
    session = FetchSession()
    session.id, session.epoch = 42, 7
    session.failed()
    body = session.body([PartitionFetch("t", 0, 5)], SETTINGS, 12)
    assert (body["session_id"], body["session_epoch"]) == (42, 0)
    assert [p["fetch_offset"] for t in body["topics"] for p in t["partitions"]] == [5]
