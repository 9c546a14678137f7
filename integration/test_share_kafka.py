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
    run_renew,
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
    tally = run_drain(kafka4.bootstrap, topic, 600, 3)
    check_drain(tally, 600, 3)
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


def test_confluent_and_javas_console_share_consumer_share_a_group_with_kclient(kafka4):
    """Kafka's console share consumer, confluent-kafka's ShareConsumer and kclient's in one
    group: every record delivered once in all; the admin client and CLI see the group."""
    import threading

    from confluent_kafka import ShareConsumer as ConfluentShare

    from integration.share_scenarios import conf, new_group, produce
    from kclient import ShareConsumer
    from kclient.admin import AdminClient
    from tests.conftest import CliRunner
    from tests.waiting import wait_until

    bootstrap = kafka4.bootstrap
    topic, group, n = new_topic(kafka4, partitions=3), new_group(kafka4.bootstrap), 300
    java = kafka4.start_tool(
        "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--group",
        group,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    got: dict[str, list[str]] = {"java": [], "confluent": [], "kclient": []}
    stop = threading.Event()

    def read_java() -> None:
        for line in java.stdout:
            got["java"].append(line.decode().strip())

    def run_confluent() -> None:
        c = ConfluentShare(conf(bootstrap, group))
        c.subscribe([topic])
        while not stop.is_set():
            got["confluent"] += [m.value().decode() for m in c.poll(0.5) if m.error() is None]
        c.close()

    def run_kclient() -> None:
        with ShareConsumer(conf(bootstrap, group), topic) as c:
            while not stop.is_set():
                got["kclient"] += [r.value.decode() for r in c.poll(0.5)]

    threads = [threading.Thread(target=f) for f in (read_java, run_confluent, run_kclient)]
    admin = AdminClient(bootstrap)
    try:
        for t in threads:
            t.start()

        def members() -> int:
            try:
                return len(admin.describe_share_groups([group])[group].members)
            except Exception:  # noqa: BLE001 - the group does not exist until the first joins
                return 0

        wait_until(lambda: members() == 3, 60, "three members in the share group")
        produce(bootstrap, topic, n, 3)
        wait_until(lambda: sum(len(v) for v in got.values()) >= n, 60, f"{n} records")
        table = CliRunner(bootstrap).out("share-groups", "describe", group, "--members")
        assert table.count(group) >= 3, table
        listed = CliRunner(bootstrap).out("share-groups", "list")
        assert group in listed.split()
    finally:
        stop.set()
        java.send_signal(signal.SIGTERM)
        java.wait(30)
        for t in threads:
            t.join(30)
    everything = [v for vs in got.values() for v in vs]
    assert sorted(everything) == sorted(f"v{i}" for i in range(n)), {
        k: len(v) for k, v in got.items()
    }
    described = admin.describe_share_groups([group])[group]
    assert described.group_id == group and described.state in ("Empty", "Stable")
    offsets = admin.list_share_group_offsets(group)
    admin.close()
    assert sorted(tp.partition for tp in offsets) == [0, 1, 2]
    # the console consumer, stopped by a signal, may not have accepted its last records
    assert all(0 <= o.start_offset <= n // 3 for o in offsets.values()), offsets


def test_closing_releases_records_fetched_ahead_to_another_member(kafka4):
    check_fetched_ahead(run_close_releases_fetched_ahead(kafka4.bootstrap, new_topic(kafka4)))


def test_fetches_ahead_ask_for_the_room_left_and_polls_stay_bounded(kafka4):
    check_hold_bound(run_hold_bound(kafka4.bootstrap, new_topic(kafka4)))


def test_renew_keeps_a_record_locked_past_its_lock_duration(kafka4):
    """RENEW (KIP-932's acknowledge type 4, ShareAcknowledge v2) on Kafka 4.4: a record held
    3.6 s under a 2 s lock is not handed to another member, and accepting it then succeeds."""
    held, results, stolen = run_renew(kafka4.bootstrap, new_topic(kafka4))
    assert [(r.offset, r.delivery_count) for r in held] == [(0, 1)]
    assert len(results) == 4 and all(set(r.values()) == {None} for r in results), results
    assert stolen == []


def test_batch_optimized_polls_keep_record_batches_whole_record_limit_splits_them(kafka4):
    sizes = run_poll_sizes(kafka4.bootstrap, new_topic(kafka4))
    assert sizes == {"batch_optimized": [12], "record_limit": [5, 5, 2]}, sizes


@pytest.mark.parametrize("aio", [False, True], ids=["threads", "asyncio"])
def test_commits_written_behind_fetches_in_flight_apply_each_acknowledgement_once(kafka4, aio):
    check_commits_behind_fetches(
        run_commits_behind_fetches(kafka4.bootstrap, new_topic(kafka4), aio)
    )
