"""kclient's ShareConsumer and AIOShareConsumer against the mini-broker's share groups: the
scenarios integration/test_share_kafka.py runs on Kafka 4.4 (three members, threaded and
asyncio, drain a topic exactly once; a release goes to another member; reject and the
delivery limit archive; a killed member's records come back after their lock), then a
broker restart in the middle of a drain keeps what was acknowledged."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from integration.share_scenarios import (
    check_drain,
    run_drain,
    run_lock_expiry,
    run_reject_and_limit,
    run_release_to_other,
)
from kclient.broker import MiniBroker

CONFIG = {"group.share.min.record.lock.duration.ms": "1000",
          "group.share.heartbeat.interval.ms": "1000", "group.initial.rebalance.delay.ms": "0"}

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


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with MiniBroker(log_dir=tmp_path_factory.mktemp("share-client"), config=CONFIG) as b:
        yield b


def new_topic(broker, partitions=1):
    name = f"share-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, partitions)
    return name


def test_three_members_threaded_and_asyncio_drain_exactly_once(broker):
    tally = run_drain(broker.bootstrap, new_topic(broker, 3), 900, 3)
    check_drain(tally, 900, 3)


def test_released_records_go_to_another_member(broker):
    first, second = run_release_to_other(broker.bootstrap, new_topic(broker))
    assert [(r.offset, r.delivery_count) for r in first] == [(o, 1) for o in range(5)]
    assert [(r.offset, r.delivery_count) for r in second] == [(o, 2) for o in range(5)]
    assert [r.value for r in second] == [b"v0", b"v1", b"v2", b"v3", b"v4"]


def test_rejected_and_over_limit_records_are_archived(broker):
    polls = run_reject_and_limit(broker.bootstrap, new_topic(broker))
    assert polls == [[(0, 1), (1, 1), (2, 1)], [(1, 2), (2, 2)], []]


def test_a_killed_members_records_come_back_after_the_lock(broker):
    def kill(group: str, topic: str) -> list[int]:
        proc = subprocess.Popen([sys.executable, "-c", _HOLDER, broker.bootstrap, group, topic],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            line = proc.stdout.readline().decode()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        return [int(o) for o in line.split()]

    held, got = run_lock_expiry(broker.bootstrap, new_topic(broker), kill)
    assert held == [0, 1, 2, 3]
    assert {(r.offset, r.delivery_count) for r in got} >= {(o, 2) for o in held}


def test_a_broker_restart_mid_drain_keeps_the_share_state(tmp_path):
    from integration.share_scenarios import Tally, conf, new_group, produce
    from kclient import ShareConsumer
    from tests.waiting import wait_until
    with MiniBroker(log_dir=tmp_path, config=CONFIG) as b:
        topic = new_topic(b, 2)
        group = new_group(b.bootstrap, **{"share.partition.max.record.locks": "100"})
        produce(b.bootstrap, topic, 600, 2)
        tally, stop = Tally(), threading.Event()

        def member(who: str) -> None:
            with ShareConsumer(conf(b.bootstrap, group, **{"max.poll.records": "50"}),
                               topic) as c:
                while not stop.is_set():
                    try:
                        tally.add(who, c.poll(0.3))
                    except Exception:  # noqa: BLE001 - the broker is restarting
                        time.sleep(0.1)
        threads = [threading.Thread(target=member, args=(w,)) for w in ("a", "b")]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: tally.total() >= 200, 60, "200 records polled")
            b.stop()
            b.start()
            before = {p: s for (_, p), (s, _) in b.share.start_offsets(
                group, [(topic, 0), (topic, 1)]).items()}
            assert sum(before.values()) > 0, before        # acknowledged records stay done
            wait_until(lambda: len(tally.accepted) >= 600, 60, "every record delivered")
        finally:
            stop.set()
            for t in threads:
                t.join(30)
    assert set(tally.accepted) == {(i % 2, i // 2) for i in range(600)}
    for (partition, offset), times in tally.accepted.items():
        if offset < before[partition]:
            assert times == 1, (partition, offset, times)  # done before the restart: once
