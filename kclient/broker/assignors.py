"""Server-side partition assignors of KIP-848 consumer groups: ``uniform`` and ``range``.

The coordinator computes a group's target assignment with one of them
(``group.consumer.assignors``, the first the default; a member may ask for another by
``group.remote.assignor``).  Both are pure functions of the members' subscriptions, the topics'
partition counts and the previous target assignment; topics are named by their ids.

- ``uniform`` (Kafka's UniformAssignor): every partition of the subscribed topics goes to one
  subscribed member, the counts per member differ by at most one where subscriptions allow it,
  and a member keeps what it had as far as balance permits (sticky), so a rebalance moves as few
  partitions as it can.
- ``range`` (Kafka's RangeAssignor): per topic, the subscribed members (by member id) get
  contiguous ranges of partitions, the first ``partitions % members`` one more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["ASSIGNORS", "Assignment", "MemberSpec", "range_assign", "uniform_assign"]

#: topic id -> partitions
Assignment = dict[bytes, set[int]]
Partition = tuple[bytes, int]


@dataclass
class MemberSpec:
    """What an assignor knows of a member: its subscribed topic ids and its current target."""

    topics: set[bytes]
    previous: Assignment = field(default_factory=dict)


def uniform_assign(
    members: Mapping[str, MemberSpec], partition_counts: Mapping[bytes, int]
) -> dict[str, Assignment]:
    """Sticky, balanced assignment of every subscribed partition (see the module doc)."""
    owned: dict[str, list[Partition]] = {m: [] for m in members}
    taken: set[Partition] = set()
    for member_id in sorted(members):  # 1. keep what is still valid
        spec = members[member_id]
        for tid, parts in sorted(spec.previous.items()):
            count = partition_counts.get(tid, 0)
            for p in sorted(parts):
                if tid in spec.topics and p < count and (tid, p) not in taken:
                    owned[member_id].append((tid, p))
                    taken.add((tid, p))
    eligible = _eligible(members, partition_counts)
    for tp in sorted(eligible):  # 2. place the free partitions
        if tp not in taken:
            target = min(eligible[tp], key=lambda m: (len(owned[m]), m))
            owned[target].append(tp)
            taken.add(tp)
    _balance(owned, eligible)  # 3. level the counts
    return {m: _as_assignment(tps) for m, tps in owned.items()}


def _eligible(
    members: Mapping[str, MemberSpec], partition_counts: Mapping[bytes, int]
) -> dict[Partition, list[str]]:
    """Every partition of a subscribed topic -> the members subscribed to it (sorted)."""
    out: dict[Partition, list[str]] = {}
    for member_id in sorted(members):
        for tid in members[member_id].topics:
            for p in range(partition_counts.get(tid, 0)):
                out.setdefault((tid, p), []).append(member_id)
    return out


def _balance(owned: dict[str, list[Partition]], eligible: Mapping[Partition, list[str]]) -> None:
    """Move partitions from the most to the least loaded members that may take them, until no
    move narrows a gap of more than one."""
    moved = True
    while moved:
        moved = False
        for giver in sorted(owned, key=lambda m: (-len(owned[m]), m)):
            for tp in reversed(owned[giver]):
                taker = min(eligible[tp], key=lambda m: (len(owned[m]), m))
                if len(owned[taker]) + 1 < len(owned[giver]):
                    owned[giver].remove(tp)
                    owned[taker].append(tp)
                    moved = True
                    break
            if moved:
                break


def range_assign(
    members: Mapping[str, MemberSpec], partition_counts: Mapping[bytes, int]
) -> dict[str, Assignment]:
    """Per topic, contiguous ranges to the subscribed members in member-id order."""
    out: dict[str, Assignment] = {m: {} for m in members}
    topics = {tid for spec in members.values() for tid in spec.topics}
    for tid in sorted(topics):
        subscribers = sorted(m for m, spec in members.items() if tid in spec.topics)
        count = partition_counts.get(tid, 0)
        if not subscribers or not count:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for i, member_id in enumerate(subscribers):
            size = quota + (1 if i < extra else 0)
            if size:
                out[member_id][tid] = set(range(start, start + size))
            start += size
    return out


def _as_assignment(partitions: list[Partition]) -> Assignment:
    """A list of (topic id, partition) as topic id -> partitions."""
    out: Assignment = {}
    for tid, p in partitions:
        out.setdefault(tid, set()).add(p)
    return out


#: assignor name -> function
ASSIGNORS: dict[
    str, Callable[[Mapping[str, MemberSpec], Mapping[bytes, int]], dict[str, Assignment]]
] = {
    "uniform": uniform_assign,
    "range": range_assign,
}
