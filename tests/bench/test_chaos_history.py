"""The chaos harness's history check (kclient.bench.chaos_history): each broken promise is
found, and a history that keeps them all passes."""

from __future__ import annotations

from kclient.bench.chaos_history import History, decode, encode, failures


def _good() -> tuple[History, list[tuple[int, int, bytes | None]]]:
    """p-idem acks 0..3 on partitions 0/1; p-txn commits 0..1 and aborts 2..3; one consumer
    reads everything once."""
    h = History()
    log: list[tuple[int, int, bytes | None]] = []
    for seq in range(4):
        part, off = seq % 2, seq // 2
        h.ack(("p-idem", seq), part, off)
        log.append((part, off, encode("p-idem", seq)))
    h.transaction([("p-txn", 0), ("p-txn", 1)], "committed")
    log += [(0, 2, encode("p-txn", 0)), (1, 2, encode("p-txn", 1))]
    h.transaction([("p-txn", 2), ("p-txn", 3)], "aborted")
    for part, off, value in sorted(log):
        h.deliver("c0", "g", 1, part, off, value)
    return h, log


def test_a_history_that_keeps_every_promise_passes():
    h, log = _good()
    verdict = h.check(log)
    assert failures(verdict) == []
    assert verdict["promised"] == 6 and verdict["committed"] == 2 and verdict["aborted"] == 2
    assert verdict["groups"]["g"] == {
        "delivered": 6,
        "missing": 0,
        "missing_first": [],
        "redelivered": 0,
    }


def test_values_round_trip():
    assert decode(encode("p|x", 12)) == ("p|x", 12)
    assert decode(b"not ours") is None and decode(None) is None


def test_an_acknowledged_record_missing_from_the_log_is_lost():
    h, log = _good()
    log.remove((1, 1, encode("p-idem", 3)))
    verdict = h.check(log)
    assert verdict["lost"] == [("p-idem", 3)]
    assert any(f.startswith("lost: 1") for f in failures(verdict))


def test_a_committed_transaction_missing_from_the_log_is_lost():
    h, log = _good()
    log.remove((0, 2, encode("p-txn", 0)))
    assert h.check(log)["lost"] == [("p-txn", 0)]


def test_an_ack_at_another_offset_is_misplaced():
    h, log = _good()
    h.ack(("p-idem", 0), 0, 7)
    assert h.check(log)["misplaced"] == [("p-idem", 0)]


def test_a_record_twice_in_the_log_is_a_duplicate():
    h, log = _good()
    log.append((0, 3, encode("p-idem", 2)))
    assert h.check(log)["duplicates"] == [("p-idem", 2)]


def test_an_aborted_record_seen_is_reported_in_the_log_and_by_consumers():
    h, log = _good()
    log.append((0, 3, encode("p-txn", 2)))
    assert h.check(log)["aborted_visible"] == [("p-txn", 2)]
    h2, log2 = _good()
    h2.deliver("c0", "g", 1, 1, 3, encode("p-txn", 3))
    verdict = h2.check(log2)
    assert verdict["aborted_visible"] == [("p-txn", 3)]
    assert verdict["phantoms"]  # and the log has nothing at that offset


def test_in_doubt_transactions_promise_nothing_either_way():
    h = History()
    h.ack(("p-txn", 0), 0, 0)
    h.transaction([("p-txn", 0)], "in_doubt")
    assert failures(h.check([])) == []
    assert failures(h.check([(0, 0, encode("p-txn", 0))])) == []


def test_a_producers_records_out_of_order_in_a_partition():
    h, log = _good()
    log = [(0, 0, encode("p-idem", 2)), (0, 1, encode("p-idem", 0))]
    verdict = h.check(log)
    assert verdict["log_order"] == ["partition 0 offset 1: p-idem seq 0 after 2"]


def test_a_consumer_going_back_within_one_assignment_breaks_order():
    h, log = _good()
    h.deliver("c0", "g", 1, 0, 0, encode("p-idem", 0))  # again, same assignment
    assert h.check(log)["delivery_order"] == ["c0 partition 0: offset 0 after 2 (assignment 1)"]
    h2, log2 = _good()
    h2.deliver("c0", "g", 2, 0, 0, encode("p-idem", 0))  # after a rebalance: redelivery
    verdict = h2.check(log2)
    assert verdict["delivery_order"] == [] and verdict["groups"]["g"]["redelivered"] == 1


def test_a_delivery_of_another_record_than_the_log_holds_is_a_phantom():
    h, log = _good()
    h.deliver("c1", "g2", 1, 0, 0, encode("p-idem", 2))
    assert h.check(log)["phantoms"] == [
        "c1 partition 0 offset 0: ('p-idem', 2), the log has ('p-idem', 0)"
    ]


def test_a_group_that_never_got_a_committed_record_misses_it():
    h, log = _good()
    h.deliver("c9", "g9", 1, 0, 0, encode("p-idem", 0))
    verdict = h.check(log)
    assert verdict["groups"]["g9"]["missing"] == 5
    assert any(f.startswith("group g9: 5") for f in failures(verdict))
