"""Golden tables for the range and round-robin assignors (Kafka 0.8.2's algorithms)."""

import pytest

from kclient.consumer.assignment import (
    AssignmentError,
    assign,
    consumer_of,
    range_assign,
    roundrobin_assign,
    thread_ids,
)


def table(decision):
    """{thread: [(topic, partition), ...]} for readable comparisons."""
    out = {}
    for tp, thread in sorted(decision.items()):
        out.setdefault(thread, []).append(tp)
    return out


def test_thread_ids_and_consumer_of():
    assert thread_ids("g_host-1700000000000-1a2b3c4d", 3) == [
        "g_host-1700000000000-1a2b3c4d-0",
        "g_host-1700000000000-1a2b3c4d-1",
        "g_host-1700000000000-1a2b3c4d-2",
    ]
    assert consumer_of("g_host-1700000000000-1a2b3c4d-12") == "g_host-1700000000000-1a2b3c4d"


def test_range_uneven_extra_parts_go_to_the_first_threads():
    # 5 partitions, 3 threads: 5 // 3 = 1 each, 5 % 3 = 2 threads get one more
    d = range_assign({"t": ["g_c2-0", "g_c1-1", "g_c1-0"]}, {"t": [4, 3, 2, 1, 0]})
    assert table(d) == {
        "g_c1-0": [("t", 0), ("t", 1)],
        "g_c1-1": [("t", 2), ("t", 3)],
        "g_c2-0": [("t", 4)],
    }


@pytest.mark.parametrize(
    "n_parts,n_threads,expected",
    [
        # (partitions, threads) -> partitions per thread position, Kafka's RangeAssignor
        (10, 3, [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]),
        (8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
        (6, 3, [[0, 1], [2, 3], [4, 5]]),
        (2, 3, [[0], [1], []]),
        (1, 4, [[0], [], [], []]),
        (7, 1, [[0, 1, 2, 3, 4, 5, 6]]),
        (12, 5, [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9], [10, 11]]),
    ],
)
def test_range_golden(n_parts, n_threads, expected):
    threads = [f"g_c-{i}" for i in range(n_threads)]  # < 10 threads: string order = numeric
    d = range_assign({"t": threads}, {"t": list(range(n_parts))})
    got = [[p for (t, p), th in sorted(d.items()) if th == thread] for thread in threads]
    assert got == expected


def test_range_thread_ids_sort_as_strings():
    threads = thread_ids("g_c", 12)
    d = range_assign({"t": threads}, {"t": list(range(12))})
    # string order: c-0, c-1, c-10, c-11, c-2, ..., c-9
    assert [d[("t", p)] for p in range(12)] == [
        "g_c-0",
        "g_c-1",
        "g_c-10",
        "g_c-11",
        "g_c-2",
        "g_c-3",
        "g_c-4",
        "g_c-5",
        "g_c-6",
        "g_c-7",
        "g_c-8",
        "g_c-9",
    ]


def test_range_partitions_sort_numerically():
    d = range_assign({"t": ["a-0", "a-1", "a-2"]}, {"t": [10, 2, 1]})
    assert d == {("t", 1): "a-0", ("t", 2): "a-1", ("t", 10): "a-2"}


def test_range_is_per_topic_and_two_consumers_agree():
    consumers = {"a": ["g_x-0", "g_y-0"], "b": ["g_y-0", "g_y-1"]}
    partitions = {"a": [0, 1, 2], "b": [0, 1, 2]}
    d = range_assign(consumers, partitions)
    assert table(d) == {
        "g_x-0": [("a", 0), ("a", 1)],
        "g_y-0": [("a", 2), ("b", 0), ("b", 1)],
        "g_y-1": [("b", 2)],
    }
    # every member computes the same table from the same inputs
    assert range_assign(dict(reversed(list(consumers.items()))), partitions) == d


def test_range_every_partition_exactly_once():
    for n_parts in range(20):
        for n_threads in range(1, 8):
            threads = [f"g_c-{i}" for i in range(n_threads)]
            d = range_assign({"t": threads}, {"t": list(range(n_parts))})
            assert sorted(p for _, p in d) == list(range(n_parts))
            counts = [sum(1 for th in d.values() if th == t) for t in threads]
            assert max(counts) - min(counts) <= 1


def test_roundrobin_golden():
    # Java hashCode("[a,0]") = 86974003 < "[a,1]" < "[a,2]" < "[b,0]" = 87003794 < ...
    threads = ["g_c1-0", "g_c1-1", "g_c2-0", "g_c2-1"]
    d = roundrobin_assign({"a": threads, "b": threads}, {"a": [0, 1, 2], "b": [0, 1, 2, 3]})
    assert d == {
        ("a", 0): "g_c1-0",
        ("a", 1): "g_c1-1",
        ("a", 2): "g_c2-0",
        ("b", 0): "g_c2-1",
        ("b", 1): "g_c1-0",
        ("b", 2): "g_c1-1",
        ("b", 3): "g_c2-0",
    }


def test_roundrobin_orders_by_java_hashcode_not_by_name():
    # Java int overflow: hashCode("[t,10]") = -1581226645 < "[t,11]" = -1581226614
    # < "[t,2]" = 87540094, so the two-digit partitions are dealt out first
    threads = ["g_c-0", "g_c-1"]
    d = roundrobin_assign({"t": threads}, {"t": [2, 10, 11]})
    assert d == {("t", 10): "g_c-0", ("t", 11): "g_c-1", ("t", 2): "g_c-0"}


def test_roundrobin_requires_identical_subscriptions():
    with pytest.raises(AssignmentError, match="same topics"):
        roundrobin_assign({"a": ["g_c1-0", "g_c2-0"], "b": ["g_c1-0"]}, {"a": [0], "b": [0]})


def test_assign_by_name():
    assert assign("range", {"t": ["c-0"]}, {"t": [0]}) == {("t", 0): "c-0"}
    assert assign("roundrobin", {"t": ["c-0"]}, {"t": [0]}) == {("t", 0): "c-0"}
    with pytest.raises(ValueError, match="roundrobin"):
        assign("sticky", {}, {})
