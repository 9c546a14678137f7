"""The share-group scenarios of integration/test_share_kafka.py against kclient's mini-broker
(its share coordinator and share partitions): the same client, the same expectations."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from integration.share_scenarios import (
    check_commits_behind_fetches,
    check_drain,
    check_fetched_ahead,
    check_hold_bound,
    run_close_releases_fetched_ahead,
    run_commits_behind_fetches,
    run_drain,
    run_hold_bound,
    run_lock_expiry,
    run_poll_sizes,
    run_reject_and_limit,
    run_release_to_other,
)
from kclient.admin import AdminClient


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from kclient.broker import MiniBroker
    from tests.conftest import FAST_GROUPS

    config = dict(
        FAST_GROUPS,
        **{
            "group.share.heartbeat.interval.ms": "1000",
            "group.share.min.record.lock.duration.ms": "1000",
        },
    )
    with MiniBroker(log_dir=tmp_path_factory.mktemp("share-broker"), config=config) as b:
        yield b


def _topic(bootstrap: str, partitions: int = 1) -> str:
    import uuid

    name = f"share-{uuid.uuid4().hex[:8]}"
    with AdminClient(bootstrap) as admin:
        admin.create_topic(name, partitions)
    return name


def test_three_members_drain_exactly_once(broker):
    tally = run_drain(broker.bootstrap, _topic(broker.bootstrap, 3), 600, 3)
    check_drain(tally, 600, 3)


def test_released_records_go_to_another_member(broker):
    first, second = run_release_to_other(broker.bootstrap, _topic(broker.bootstrap))
    assert [(r.offset, r.delivery_count) for r in first] == [(o, 1) for o in range(5)]
    assert [(r.offset, r.delivery_count) for r in second] == [(o, 2) for o in range(5)]


def test_rejected_and_over_limit_records_are_archived(broker):
    polls = run_reject_and_limit(broker.bootstrap, _topic(broker.bootstrap))
    assert polls == [[(0, 1), (1, 1), (2, 1)], [(1, 2), (2, 2)], []]


def test_a_killed_members_records_come_back_after_the_lock(broker):
    from integration.test_share_kafka import _HOLDER

    def kill(group: str, topic: str) -> list[int]:
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, broker.bootstrap, group, topic],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            line = proc.stdout.readline().decode()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        return [int(o) for o in line.split()]

    held, got = run_lock_expiry(broker.bootstrap, _topic(broker.bootstrap), kill)
    assert held == [0, 1, 2, 3]
    assert {(r.offset, r.delivery_count) for r in got} >= {(o, 2) for o in held}


def test_closing_releases_records_fetched_ahead_to_another_member(broker):
    check_fetched_ahead(
        run_close_releases_fetched_ahead(broker.bootstrap, _topic(broker.bootstrap))
    )


def test_fetches_ahead_ask_for_the_room_left_and_polls_stay_bounded(broker):
    check_hold_bound(run_hold_bound(broker.bootstrap, _topic(broker.bootstrap)))


def test_batch_optimized_polls_keep_record_batches_whole_record_limit_splits_them(broker):
    sizes = run_poll_sizes(broker.bootstrap, _topic(broker.bootstrap))
    assert sizes == {"batch_optimized": [12], "record_limit": [5, 5, 2]}, sizes


@pytest.mark.parametrize("aio", [False, True], ids=["threads", "asyncio"])
def test_commits_written_behind_fetches_in_flight_apply_each_acknowledgement_once(broker, aio):
    check_commits_behind_fetches(
        run_commits_behind_fetches(broker.bootstrap, _topic(broker.bootstrap), aio)
    )
