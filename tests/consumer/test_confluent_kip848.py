"""confluent-kafka's consumer with ``group.protocol=consumer`` (KIP-848) in groups the
mini-broker coordinates: two and three members, one leaving, a static member restarting with
its partitions back and the other member untouched, and a broker restart that keeps the
group."""

from __future__ import annotations

import uuid

import pytest

from kclient.broker import MiniBroker
from tests.conftest import FAST_GROUPS
from tests.needs import need_module

from .confluent_kip848 import PARTITIONS, check_phases, run_broker_restart, run_join_leave_restart

need_module("confluent_kafka")

CONFIG = dict(FAST_GROUPS, **{"group.consumer.heartbeat.interval.ms": "500"})


def check_restart_phase(restarted: dict) -> None:
    assert restarted["after"] == restarted["before"], restarted
    assert restarted["other_after"] == restarted["other_before"], restarted


def test_members_join_leave_and_restart(tmp_path):
    with MiniBroker(log_dir=tmp_path / "b", config=CONFIG) as broker:
        topic = f"k848-{uuid.uuid4().hex[:6]}"
        broker.create_topic(topic, partitions=PARTITIONS)
        results = run_join_leave_restart(broker.bootstrap, topic)
        kinds = dict(broker.coordinator.consumer.listing())
    assert len(kinds) == 1, kinds  # a KIP-848 group (static members
    #                                                     that closed are kept, epoch -2)
    assert [r["label"] for r in results] == ["two", "three", "left", "restarted"]
    check_phases(results)
    check_restart_phase(results[-1])


@pytest.mark.timeout(120)
def test_broker_restart_keeps_the_group(tmp_path):
    state = {"broker": MiniBroker(log_dir=tmp_path / "r", config=CONFIG).start()}
    port = state["broker"].port
    topic = f"k848r-{uuid.uuid4().hex[:6]}"
    state["broker"].create_topic(topic, partitions=PARTITIONS)
    epochs = []

    def group_epochs(broker: MiniBroker) -> dict[str, int]:
        groups = broker.coordinator.consumer
        return {
            gid: groups.describe(gid, lambda _: None)["group_epoch"] for gid, _ in groups.listing()
        }

    def restart() -> None:
        old = state["broker"]
        epochs.append(group_epochs(old))
        old.close()
        state["broker"] = MiniBroker(log_dir=tmp_path / "r", port=port, config=CONFIG).start()
        epochs.append(group_epochs(state["broker"]))

    try:
        results = run_broker_restart(state["broker"].bootstrap, topic, restart)
    finally:
        state["broker"].close()
    check_phases(results)
    assert results[1]["after"] == results[1]["before"], results[1]
    assert epochs[0] and epochs[0] == epochs[1], epochs  # the group came back as it was
