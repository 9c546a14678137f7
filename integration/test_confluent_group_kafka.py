"""The confluent-kafka classic-group scenarios of tests/consumer/test_confluent_group.py, with
Kafka 4's own group coordinator: what the mini-broker's coordinator is checked to match."""

from __future__ import annotations

import pytest

from tests.consumer.confluent_group import new_topic, run_commit_while_preparing, run_static_restart
from tests.consumer.test_confluent_group import check_commit, check_static_restart

pytestmark = pytest.mark.kafka


def _state(server):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": server.bootstrap})

    def state(group: str) -> str:
        described = admin.describe_consumer_groups([group])[group].result(10)
        return {
            "PREPARING_REBALANCING": "PreparingRebalance",
            "COMPLETING_REBALANCING": "CompletingRebalance",
        }.get(described.state.name, described.state.name.title())

    return state


def test_static_member_restart_keeps_assignment(kafka4):
    check_static_restart(run_static_restart(kafka4.bootstrap, new_topic(kafka4.bootstrap)))


def test_commit_while_preparing_rebalance(kafka4):
    check_commit(
        run_commit_while_preparing(kafka4.bootstrap, new_topic(kafka4.bootstrap), _state(kafka4))
    )
