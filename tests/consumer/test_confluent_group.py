"""confluent-kafka's consumer (librdkafka) in a classic group coordinated by the mini-broker:
a static member restarting within the session timeout takes back its partitions while the
other member hears nothing, and a manual commit while the group prepares a cooperative
rebalance succeeds (the same scenarios run against Kafka 4 in
integration/test_confluent_group_kafka.py)."""

from __future__ import annotations

from tests.needs import need_module

from .confluent_group import new_topic, run_commit_while_preparing, run_static_restart

need_module("confluent_kafka")


def check_static_restart(results: list[dict]) -> None:
    """Each restart: its old partitions back, the other member's unchanged and unheard."""
    assert [r["restarted"] for r in results] == ["i2", "i1"]
    for r in results:
        assert r["before"] and r["after"] == r["before"], r
        assert r["other_after"] == r["other_before"], r
        assert r["other_heard"] == [], r


def check_commit(result: dict) -> None:
    assert result["state_at_commit"] == "PreparingRebalance", result
    assert all(err is None for _, _, err in result["committed"]), result
    assert result["stored"] == result["expected"], result


def test_static_member_restart_keeps_assignment(mini_broker):
    check_static_restart(
        run_static_restart(mini_broker.bootstrap, new_topic(mini_broker.bootstrap))
    )


def test_commit_while_preparing_rebalance(mini_broker):
    result = run_commit_while_preparing(
        mini_broker.bootstrap, new_topic(mini_broker.bootstrap), mini_broker.coordinator.group_state
    )
    check_commit(result)
