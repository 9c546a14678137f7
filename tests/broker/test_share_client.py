"""kclient's ShareConsumer across a mini-broker restart in the middle of a drain: the share
state is kept (the other share scenarios on the mini-broker: tests/share/)."""

from __future__ import annotations

import threading
import time
import uuid

from integration.share_scenarios import Tally, conf, new_group, produce
from kclient import ShareConsumer
from kclient.broker import MiniBroker
from tests.waiting import wait_until

CONFIG = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.heartbeat.interval.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
}


def new_topic(broker, partitions=1):
    name = f"share-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, partitions)
    return name


def test_a_broker_restart_mid_drain_keeps_the_share_state(tmp_path):
    with MiniBroker(log_dir=tmp_path, config=CONFIG) as b:
        topic = new_topic(b, 2)
        group = new_group(b.bootstrap, **{"share.partition.max.record.locks": "100"})
        produce(b.bootstrap, topic, 600, 2)
        tally, stop = Tally(), threading.Event()

        def member(who: str) -> None:
            with ShareConsumer(conf(b.bootstrap, group, **{"max.poll.records": "50"}), topic) as c:
                while not stop.is_set():
                    try:
                        tally.add(who, c.poll(0.3))
                    except Exception:  # noqa: BLE001 - the broker is restarting
                        time.sleep(0.1)

        threads = [threading.Thread(target=member, args=(w,)) for w in ("a", "b")]
        for t in threads:
            t.start()
        try:

            def starts() -> dict[int, int]:
                offsets = b.share.start_offsets(group, [(topic, 0), (topic, 1)])
                return {p: s for (_, p), (s, _) in offsets.items()}

            wait_until(lambda: tally.total() >= 200, 60, "200 records polled")
            # implicit acknowledgements ride on a later fetch: wait until some are applied
            wait_until(lambda: sum(starts().values()) > 0, 30, "acknowledgements applied")
            b.stop()
            b.start()
            before = starts()
            assert sum(before.values()) > 0, before  # acknowledged records stay done
            wait_until(lambda: len(tally.accepted) >= 600, 60, "every record delivered")
        finally:
            stop.set()
            for t in threads:
                t.join(30)
    assert set(tally.accepted) == {(i % 2, i // 2) for i in range(600)}
    for (partition, offset), times in tally.accepted.items():
        if offset < before[partition]:
            assert times == 1, (partition, offset, times)  # done before the restart: once
