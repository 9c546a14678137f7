"""Retried batches go out in the order they were made (issue 25, found by the chaos harness):
after a KIP-360 epoch bump cleared their sequence stamps, batches retried together were put
back at the front of the queue one by one, so they went out, were stamped and were written in
reverse order (an idempotent AIOProducer's records of a partition out of order in the log)."""

from __future__ import annotations

from kclient.aio.accumulator import Accumulator


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
