"""Partition assignment: who in a consumer group reads which partition.

Both algorithms are the Kafka 0.8.2 ZooKeeper consumer's, computed by every member on the same
inputs so that all members agree without talking to each other:

* ``range`` (``kafka.consumer.RangeAssignor``), per topic: sort the partitions numerically and the
  consumer thread ids of the topic's subscribers *as strings* (``g_c-10`` sorts before ``g_c-2``),
  then with ``n = len(partitions) // len(threads)`` and ``extra = len(partitions) % len(threads)``
  the thread at position ``i`` takes ``n + (1 if i < extra else 0)`` partitions starting at
  ``n * i + min(i, extra)``.  The first ``extra`` threads get one partition more; threads beyond
  the number of partitions get nothing.
* ``roundrobin`` (``kafka.consumer.RoundRobinAssignor``): every member must subscribe to the same
  topics with the same stream count.  All topic-partitions are sorted by the Java
  ``String.hashCode`` of ``"[topic,partition]"`` (Kafka's ``TopicAndPartition.toString``) and
  dealt out in turn to the sorted thread ids.  Kafka breaks equal hash codes by map iteration
  order; kclient breaks them by (topic, partition) so that the result is deterministic.

Inputs are plain data: ``{topic: [thread ids]}`` and ``{topic: [partitions]}``; the output maps
``(topic, partition)`` to a thread id, for the whole group (filter by consumer id to get yours).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kclient.partitioner import java_string_hashcode

from .sticky import sticky_assign

__all__ = [
    "thread_ids",
    "consumer_of",
    "range_assign",
    "roundrobin_assign",
    "assign",
    "ASSIGNORS",
    "AssignmentError",
]


class AssignmentError(ValueError):
    """The group's subscriptions do not allow the chosen strategy (round-robin's conditions)."""


def thread_ids(consumer_id: str, num_streams: int) -> list[str]:
    """The consumer thread ids of one consumer for one topic: ``<consumer_id>-<i>``."""
    return [f"{consumer_id}-{i}" for i in range(num_streams)]


def consumer_of(thread_id: str) -> str:
    """The consumer id part of a thread id (everything before the last ``-``)."""
    return thread_id.rpartition("-")[0]


def range_assign(
    consumers_for_topic: Mapping[str, Sequence[str]],
    partitions_for_topic: Mapping[str, Iterable[int]],
) -> dict[tuple[str, int], str]:
    """Kafka's range assignment for every topic in ``consumers_for_topic``."""
    decision: dict[tuple[str, int], str] = {}
    for topic, threads in consumers_for_topic.items():
        threads = sorted(set(threads))  # strings: "c-10" < "c-2"
        parts = sorted(int(p) for p in partitions_for_topic.get(topic, ()))
        if not threads or not parts:
            continue
        per_thread, extra = divmod(len(parts), len(threads))
        for i, thread in enumerate(threads):
            start = per_thread * i + min(i, extra)
            count = per_thread + (1 if i < extra else 0)  # Kafka: 0 if i + 1 > extra else 1
            for p in parts[start : start + count]:
                decision[(topic, p)] = thread
    return decision


def roundrobin_assign(
    consumers_for_topic: Mapping[str, Sequence[str]],
    partitions_for_topic: Mapping[str, Iterable[int]],
) -> dict[tuple[str, int], str]:
    """Kafka 0.8.2's round-robin assignment over all subscribed topic-partitions."""
    if not consumers_for_topic:
        return {}
    sets = {topic: frozenset(threads) for topic, threads in consumers_for_topic.items()}
    head_topic, head = next(iter(sets.items()))
    for topic, threads in sets.items():
        if threads != head:
            raise AssignmentError(
                "round-robin assignment needs every consumer of the group to subscribe to the "
                "same topics with the same stream count; topic "
                f"{topic!r} has threads {sorted(threads)} but {head_topic!r} has {sorted(head)}"
            )
    ordered = sorted(head)
    if not ordered:
        return {}
    all_tps = [(topic, int(p)) for topic in sets for p in partitions_for_topic.get(topic, ())]
    all_tps.sort(key=lambda tp: (java_string_hashcode(f"[{tp[0]},{tp[1]}]"), tp))
    return {tp: ordered[i % len(ordered)] for i, tp in enumerate(all_tps)}


def sticky_balanced_assign(
    consumers_for_topic: Mapping[str, Sequence[str]],
    partitions_for_topic: Mapping[str, Iterable[int]],
) -> dict[tuple[str, int], str]:
    """cooperative-sticky without ownership data (the ZooKeeper connector's rebalance, where
    every member computes it): a balanced, deterministic assignment (:mod:`.sticky`)."""
    return sticky_assign(consumers_for_topic, partitions_for_topic)


ASSIGNORS = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "cooperative-sticky": sticky_balanced_assign,
}


def assign(
    strategy: str,
    consumers_for_topic: Mapping[str, Sequence[str]],
    partitions_for_topic: Mapping[str, Iterable[int]],
) -> dict[tuple[str, int], str]:
    """The group's assignment by ``strategy`` ("range", "roundrobin", "cooperative-sticky";
    of a preference list, the first)."""
    try:
        fn = ASSIGNORS[strategy.split(",")[0].strip()]
    except KeyError:
        raise ValueError(
            f"unknown partition.assignment.strategy {strategy!r}; "
            f"expected one of {sorted(ASSIGNORS)}"
        ) from None
    return fn(consumers_for_topic, partitions_for_topic)
