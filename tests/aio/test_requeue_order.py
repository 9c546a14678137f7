"""Retried batches go out in the order they were made (issue 25, found by the chaos harness):
after a KIP-360 epoch bump cleared their sequence stamps, batches retried together were put
back at the front of the queue one by one, so they went out, were stamped and were written in
reverse order (an idempotent AIOProducer's records of a partition out of order in the log)."""

from __future__ import annotations

import asyncio

import pytest

from kclient import AIOProducer
from kclient.aio.accumulator import Accumulator
from kclient.broker import MiniCluster

from ..waiting import async_wait_until


def _sent(acc: Accumulator, now: float) -> list:
    """The batches of partition 0 made at ``now`` .. ``now + 2``, drained (sent) at once."""
    made = []
    for i in range(3):
        b = acc.batch_for("t", 0, 10, now + i)[0]
        b.values.extend([b"m%d" % i] * 100)  # full: batch_for opens another
        made.append(b)
    out, _ = acc.ready(now + 10, all_=True)
    assert out == made
    return made


def test_batches_retried_together_keep_their_order_without_stamps():
    acc = Accumulator(100, 1 << 20, 0.0, 60.0)
    a, b, c = _sent(acc, 0.0)
    fresh = acc.batch_for("t", 0, 10, 20.0)[0]  # made after, never sent
    for batch in (a, b, c):
        batch.base_sequence = -1  # stamps cleared by an epoch bump
        acc.requeue(batch)
    assert list(acc.queues[("t", 0)]) == [a, b, c, fresh]


def test_stamped_batches_retried_out_of_order_go_back_in_order():
    acc = Accumulator(100, 1 << 20, 0.0, 60.0)
    a, b, c = _sent(acc, 0.0)
    for seq, batch in enumerate((a, b, c)):
        batch.base_sequence = seq * 100
    for batch in (c, a, b):
        acc.requeue(batch)
    assert list(acc.queues[("t", 0)]) == [a, b, c]


def test_a_retry_in_backoff_holds_its_partition_and_takes_no_new_records():
    """A retried batch goes back to the head of its partition's queue with its backoff:
    nothing of the partition leaves before the backoff ends, even on flush, and new records
    go to a new batch behind it (issue 25: the retry waited on a timer outside the queue, so
    a newer batch went out first)."""
    acc = Accumulator(100, 1 << 20, 0.0, 60.0)
    acc.batch_for("t", 0, 10, 0.0)[0].values.append(b"a")
    (a,), _ = acc.ready(1.0, all_=True)  # sent, failed: retried
    newer = acc.batch_for("t", 0, 10, 2.0)[0]
    newer.values.append(b"b")
    other = acc.batch_for("t", 1, 10, 2.0)[0]
    other.values.append(b"c")
    acc.requeue(a, due=5.0)
    assert acc.batch_for("t", 0, 10, 3.0)[0] is newer  # not appended to the retry
    out, due = acc.ready(3.0, all_=True)
    assert out == [other] and due == 5.0
    out, _ = acc.ready(5.0, all_=True)
    assert out == [a, newer]


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_batch_retried_while_its_leader_was_away_stays_ahead_of_newer_ones(tmp_path, idempotent):
    """A batch retried (its leader away) and a newer one of its partition sent once the leader
    is back: the log has them in the order they were sent, with one request in flight (before
    the fix the newer one went out during the retry's backoff and was written first)."""
    with MiniCluster(2, log_dir=tmp_path) as cluster:
        cluster.create_topic("t", 2)
        away = cluster.leaders("t")[1]
        home = cluster.broker(cluster.leaders("t")[0]).bootstrap

        async def main() -> tuple[int, int]:
            async with AIOProducer(
                bootstrap_servers=home,
                retry_backoff_ms=1500,
                message_send_max_retries=1_000_000,
                delivery_timeout_ms=60_000,
                linger_ms=0,
                max_in_flight_requests_per_connection=1,
                enable_idempotence=idempotent,
                acks=-1 if idempotent else 1,
            ) as p:
                await p.send("t", b"warm", partition=1)
                cluster.stop_broker(away)
                first = asyncio.ensure_future(p.send("t", b"first", partition=1))
                await async_wait_until(
                    lambda: p.metrics()["retries"] >= 1, what="the first batch retried"
                )
                cluster.start_broker(away)
                await p.cluster.refresh(["t"], allow_auto_create=False)
                assert p.cluster.leader("t", 1) is not None
                second = asyncio.ensure_future(p.send("t", b"second", partition=1))
                return (await first).offset, (await second).offset

        assert asyncio.run(main()) == (1, 2)
