"""The cooperative-sticky assignor (KIP-429; Java's CooperativeStickyAssignor, "cooperative-sticky").

Theory of operation.  Every member's Subscription (consumer protocol v1+) lists the partitions it
owns now and (v2+, or in Java's user data) the generation in which it got them.  The leader:

1. **Resolves ownership** (:func:`resolve_owned`): only claims from the highest generation in
   the group count; a partition claimed by two members of that generation counts as unowned
   (both claims are stale in some way).  Members without a generation own nothing unless no
   member has one.
2. **Assigns stickily** (:func:`sticky_assign`), over *units* (a kclient member with N streams
   is N units ``<consumer_id>-<i>``, any other member one): every unit keeps what it owns (that
   it still subscribes to); unowned partitions go, fewest candidates first, to the eligible unit
   with the fewest partitions; then, while some unit has at least two more partitions than an
   eligible other, one partition moves from the larger to the smaller.  The result is balanced
   (counts differ by at most one between units that could swap) and moves nothing it need not.
3. **Withholds transfers** (:func:`withhold_transfers`, at member level): a partition assigned to
   a member that does not claim it, while another member still does, is left unassigned in this
   generation.  Its owner sees it missing from its assignment, revokes it (only it), and
   rejoins; in that follow-up rebalance nobody claims it and the new owner gets it.  No
   partition is ever added to one member and revoked from another in the same generation (the
   rule Java's leader checks).

Everything is deterministic for the same inputs (sorted ids, ties broken by id).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["resolve_owned", "sticky_assign", "withhold_transfers", "TP"]

TP = tuple[str, int]


def resolve_owned(claims: Mapping[str, tuple[int, Iterable[TP]]]) -> dict[str, set[TP]]:
    """``{member: (generation, owned)}`` -> the owned partitions that count, per member."""
    max_gen = max((gen for gen, owned in claims.values()), default=-1)
    counted = {m: set(owned) for m, (gen, owned) in claims.items() if gen == max_gen}
    seen: dict[TP, int] = {}
    for owned in counted.values():
        for tp in owned:
            seen[tp] = seen.get(tp, 0) + 1
    shared = {tp for tp, n in seen.items() if n > 1}
    return {m: (counted[m] - shared if m in counted else set()) for m in claims}


def sticky_assign(
    units_for_topic: Mapping[str, Sequence[str]],
    partitions_for_topic: Mapping[str, Iterable[int]],
    owned: Mapping[str, Iterable[TP]] | None = None,
) -> dict[TP, str]:
    """A balanced assignment ``{(topic, partition): unit}`` keeping each unit's ``owned``."""
    eligible: dict[TP, list[str]] = {}
    units: set[str] = set()
    for topic, subs in units_for_topic.items():
        subs = sorted(set(subs))
        units.update(subs)
        for p in partitions_for_topic.get(topic, ()):
            if subs:
                eligible[(topic, int(p))] = subs
    have: dict[str, set[TP]] = {u: set() for u in units}
    owner: dict[TP, str] = {}
    for unit in sorted(owned or {}):
        if unit not in have:
            continue
        for tp in sorted((owned or {})[unit]):
            if tp in eligible and tp not in owner and unit in eligible[tp]:
                owner[tp] = unit
                have[unit].add(tp)
    todo = sorted(
        (tp for tp in eligible if tp not in owner), key=lambda tp: (len(eligible[tp]), tp)
    )
    for tp in todo:
        unit = min(eligible[tp], key=lambda u: (len(have[u]), u))
        owner[tp] = unit
        have[unit].add(tp)
    _balance(have, owner, eligible)
    return owner


def _balance(
    have: dict[str, set[TP]], owner: dict[TP, str], eligible: Mapping[TP, Sequence[str]]
) -> None:
    """Move partitions from a unit to an eligible one holding at least two fewer, until none
    can move (each move lowers the sum of squared counts, so this ends)."""
    while True:
        for unit in sorted(have, key=lambda u: (-len(have[u]), u)):
            size = len(have[unit])
            move = None
            for tp in sorted(have[unit], reverse=True):
                takers = [u for u in eligible[tp] if len(have[u]) < size - 1]
                if takers:
                    move = tp, min(takers, key=lambda u: (len(have[u]), u))
                    break
            if move is not None:
                tp, to = move
                have[unit].discard(tp)
                have[to].add(tp)
                owner[tp] = to
                break
        else:
            return


def withhold_transfers(
    assignment: Mapping[str, Iterable[TP]], claims: Mapping[str, Iterable[TP]]
) -> dict[str, set[TP]]:
    """Drop from each member's new assignment the partitions another member still claims
    (they are revoked by their owner first and handed over in the next rebalance)."""
    claimed_by: dict[TP, set[str]] = {}
    for member, owned in claims.items():
        for tp in owned:
            claimed_by.setdefault(tp, set()).add(member)
    out: dict[str, set[TP]] = {}
    for member, tps in assignment.items():
        out[member] = {
            tp for tp in tps if member in claimed_by.get(tp, ()) or not claimed_by.get(tp)
        }
    return out
