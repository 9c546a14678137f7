"""Share groups (KIP-932) on Kafka 4.x: kclient's ShareConsumer and AIOShareConsumer drain a
topic exactly once, release to another member, reject and archive, and get a dead member's
records back after their lock expires; confluent-kafka's ShareConsumer and Kafka's console
share consumer share a group with them."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from integration.helpers import new_topic
from integration.share_scenarios import (
    check_drain,
    run_drain,
    run_lock_expiry,
    run_reject_and_limit,
    run_release_to_other,
)

pytestmark = pytest.mark.kafka

#: a member that polls 4 records, says which, and waits to be killed holding them
_HOLDER = """
import sys
from kclient import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2]}, sys.argv[3])
got = []
while len(got) < 4:
    got += c.poll(0.5)
print(" ".join(str(r.offset) for r in got), flush=True)
sys.stdin.read()
"""


def test_three_members_threaded_and_asyncio_drain_exactly_once(kafka4):
    topic = new_topic(kafka4, partitions=3)
    tally = run_drain(kafka4.bootstrap, topic, 900, 3)
    check_drain(tally, 900, 3)
    assert len(+tally.by) >= 2, f"one member took everything: {dict(tally.by)}"


def test_released_records_go_to_another_member(kafka4):
    first, second = run_release_to_other(kafka4.bootstrap, new_topic(kafka4))
    assert [r.offset for r in first] == [0, 1, 2, 3, 4]
    assert [r.delivery_count for r in first] == [1] * 5
    assert [(r.offset, r.delivery_count) for r in second] == [(o, 2) for o in range(5)]
    assert [r.value for r in second] == [b"v0", b"v1", b"v2", b"v3", b"v4"]


def test_rejected_and_over_limit_records_are_archived(kafka4):
    polls = run_reject_and_limit(kafka4.bootstrap, new_topic(kafka4))
    assert polls == [[(0, 1), (1, 1), (2, 1)], [(1, 2), (2, 2)], []]


def test_a_killed_members_records_come_back_after_the_lock(kafka4):
    def kill(group: str, topic: str) -> list[int]:
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, kafka4.bootstrap, group, topic],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            line = proc.stdout.readline().decode()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        return [int(o) for o in line.split()]

    held, got = run_lock_expiry(kafka4.bootstrap, new_topic(kafka4), kill)
    assert held == [0, 1, 2, 3]
    assert {(r.offset, r.delivery_count) for r in got} >= {(o, 2) for o in held}
