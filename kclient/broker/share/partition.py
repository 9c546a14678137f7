"""One share partition: the records a share group has in flight on one topic partition (KIP-932).

Records below the share-partition start offset (SPSO, :attr:`SharePartition.start`) are done
(acknowledged or archived); records from the end offset (SPEO, :attr:`SharePartition.end`) on
have not been handed out yet.  Between the two every offset has a state: AVAILABLE (to be
delivered, again), ACQUIRED (locked by one member until its lock expires), ACKNOWLEDGED or
ARCHIVED (done).  Acquiring counts a delivery; a record released or whose lock expires once it
has been delivered ``delivery_limit`` times is archived instead of made available again.  The
window SPEO - SPSO is kept within ``max_locks`` records (whole log batches may overshoot it, as
Kafka's acquisitions align to batches).  No I/O and no clock here: callers pass ``now``
(seconds, monotonic) and a reader of the log's batch boundaries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "ACCEPT",
    "ACKNOWLEDGED",
    "ACQUIRED",
    "ARCHIVED",
    "AVAILABLE",
    "GAP",
    "REJECT",
    "RELEASE",
    "RENEW",
    "STATE_NAMES",
    "AcquiredRange",
    "InFlight",
    "InvalidRecordState",
    "SharePartition",
    "Span",
]

#: Record states, numbered as Kafka's RecordState (and its persisted state batches).
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
STATE_NAMES = {
    AVAILABLE: "available",
    ACQUIRED: "acquired",
    ACKNOWLEDGED: "acknowledged",
    ARCHIVED: "archived",
}
#: Acknowledge types, as on the wire (ShareFetch / ShareAcknowledge ``AcknowledgeTypes``).
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
_DONE = (ACKNOWLEDGED, ARCHIVED)

#: (first offset, last offset, deliverable): one log batch; control batches and the batches
#: of aborted transactions (read_committed) are not deliverable and are archived unseen.
Span = tuple[int, int, bool]
#: (first offset, last offset, delivery count) of records acquired together.
AcquiredRange = tuple[int, int, int]


class InvalidRecordState(ValueError):
    """An acknowledgement names records the member does not hold (INVALID_RECORD_STATE)."""


@dataclass
class InFlight:
    """One in-flight record: its state, deliveries so far, holder and lock deadline."""

    state: int
    delivery_count: int = 0
    member: str | None = None
    deadline: float = 0.0


class SharePartition:
    """The in-flight records of one share group on one partition (see the module doc)."""

    def __init__(
        self, start: int, *, lock_ms: int = 30_000, delivery_limit: int = 5, max_locks: int = 2000
    ) -> None:
        """``start``: the first offset to hand out (the group's auto reset decides it)."""
        if lock_ms <= 0 or delivery_limit <= 0 or max_locks <= 0:
            raise ValueError(
                f"share partition limits must be positive: lock {lock_ms} ms, "
                f"delivery limit {delivery_limit}, max locks {max_locks}"
            )
        self.start = self.end = start
        self.lock_ms, self.delivery_limit, self.max_locks = lock_ms, delivery_limit, max_locks
        self.records: dict[int, InFlight] = {}
        self.state_epoch = 0
        self._next_deadline = float("inf")

    def __repr__(self) -> str:
        return f"SharePartition({self.start}..{self.end}, {len(self.records)} in flight)"

    # -- acquiring ----------------------------------------------------------------------------

    def acquire(
        self, member: str, now: float, max_records: int, read: Callable[[int], Iterable[Span]]
    ) -> list[AcquiredRange]:
        """Lock up to ``max_records`` records (whole batches may overshoot) for ``member``:
        available in-flight records first, then new ones from SPEO as ``read(SPEO)`` lists
        them.  Returns the acquired ranges with their delivery counts."""
        self.expire(now)
        deadline = now + self.lock_ms / 1000
        got: list[int] = []
        for offset in sorted(o for o, r in self.records.items() if r.state == AVAILABLE):
            if len(got) >= max_records:
                break
            self._lock(self.records[offset], member, deadline)
            got.append(offset)
        if len(got) < max_records and self.end - self.start < self.max_locks:
            got += self._acquire_new(member, deadline, max_records - len(got), read(self.end))
        self._advance()
        return list(self._ranges(got))

    def _acquire_new(
        self, member: str, deadline: float, wanted: int, spans: Iterable[Span]
    ) -> list[int]:
        """Take new batches from SPEO on while under ``wanted`` and the lock limit."""
        got: list[int] = []
        for first, last, deliverable in spans:
            if last < self.end:
                continue
            if first != self.end:  # a hole in the log (compacted, truncated): done
                for offset in range(self.end, max(first, self.end)):
                    self.records[offset] = InFlight(ARCHIVED)
                first = self.end = max(first, self.end)
            if not deliverable:
                for offset in range(first, last + 1):
                    self.records[offset] = InFlight(ARCHIVED)
                self.end = last + 1
                continue
            if len(got) >= wanted or self.end - self.start >= self.max_locks:
                break
            for offset in range(first, last + 1):
                record = self.records[offset] = InFlight(AVAILABLE)
                self._lock(record, member, deadline)
                got.append(offset)
            self.end = last + 1
        return got

    def _lock(self, record: InFlight, member: str, deadline: float) -> None:
        """Hand one record to ``member`` until ``deadline``: one more delivery."""
        record.state, record.member, record.deadline = ACQUIRED, member, deadline
        record.delivery_count += 1
        self._next_deadline = min(self._next_deadline, deadline)

    def _ranges(self, offsets: Sequence[int]) -> Iterator[AcquiredRange]:
        """Consecutive offsets with one delivery count as (first, last, count)."""
        run: list[int] = []
        for offset in sorted(offsets):
            count = self.records[offset].delivery_count
            if run and (offset != run[1] + 1 or count != run[2]):
                yield run[0], run[1], run[2]
                run = []
            run = [run[0] if run else offset, offset, count]
        if run:
            yield run[0], run[1], run[2]

    # -- acknowledging ------------------------------------------------------------------------

    def acknowledge(
        self, member: str, batches: Iterable[tuple[int, int, Sequence[int]]], now: float
    ) -> None:
        """Apply ``(first, last, types)`` acknowledgements (one type for the whole range, or
        one per offset) of records ``member`` holds, all or none: InvalidRecordState when
        one names a record it does not hold."""
        self.expire(now)
        plan: list[tuple[InFlight, int]] = []
        for first, last, types in batches:
            types = list(types)
            if first > last or len(types) not in (1, last - first + 1):
                raise InvalidRecordState(
                    f"acknowledgement batch {first}..{last} with {len(types)} types"
                )
            for i, offset in enumerate(range(first, last + 1)):
                record = self.records.get(offset)
                if record is None or record.state != ACQUIRED or record.member != member:
                    raise InvalidRecordState(f"offset {offset} is not acquired by {member}")
                kind = types[0] if len(types) == 1 else types[i]
                if kind not in (GAP, ACCEPT, RELEASE, REJECT, RENEW):
                    raise InvalidRecordState(f"unknown acknowledge type {kind}")
                plan.append((record, kind))
        for record, kind in plan:
            self._settle(record, kind, now)
        self._advance()

    def _settle(self, record: InFlight, kind: int, now: float) -> None:
        """One record's acknowledgement."""
        if kind == RENEW:
            record.deadline = now + self.lock_ms / 1000
            self._next_deadline = min(self._next_deadline, record.deadline)
            return
        if kind == ACCEPT:
            record.state = ACKNOWLEDGED
        elif kind == RELEASE:
            self._make_available(record)
            return
        else:
            record.state = ARCHIVED
        record.member = None

    def _make_available(self, record: InFlight) -> None:
        """Back to the pool, or archived once its deliveries reached the limit."""
        record.state = ARCHIVED if record.delivery_count >= self.delivery_limit else AVAILABLE
        record.member = None

    def release_member(self, member: str) -> int:
        """Release every record ``member`` holds (it left, or closed its session)."""
        held = [r for r in self.records.values() if r.state == ACQUIRED and r.member == member]
        for record in held:
            self._make_available(record)
        self._advance()
        return len(held)

    def expire(self, now: float) -> int:
        """Release the records whose lock ran out; returns how many."""
        if now < self._next_deadline:
            return 0
        expired, upcoming = 0, float("inf")
        for record in self.records.values():
            if record.state != ACQUIRED:
                continue
            if record.deadline <= now:
                self._make_available(record)
                expired += 1
            else:
                upcoming = min(upcoming, record.deadline)
        self._next_deadline = upcoming
        self._advance()
        return expired

    def _advance(self) -> None:
        """Move SPSO past the records that are done."""
        while self.start < self.end:
            record = self.records.get(self.start)
            if record is None or record.state not in _DONE:
                break
            del self.records[self.start]
            self.start += 1
        if self.start == self.end:
            self.records.clear()

    # -- offsets and views --------------------------------------------------------------------

    def move_start(self, offset: int) -> None:
        """The log's start moved past SPSO (retention, DeleteRecords): the in-flight records
        below ``offset`` are gone."""
        if offset <= self.start:
            return
        if offset >= self.end:
            self.records.clear()
            self.start = self.end = offset
            return
        for old in [o for o in self.records if o < offset]:
            del self.records[old]
        self.start = offset
        self._advance()

    def reset(self, offset: int) -> None:
        """AlterShareGroupOffsets: forget everything in flight and start at ``offset``."""
        self.records.clear()
        self.start = self.end = offset
        self.state_epoch += 1

    def counts(self) -> dict[str, int]:
        """How many in-flight records are in each state (by name)."""
        out = dict.fromkeys(STATE_NAMES.values(), 0)
        for record in self.records.values():
            out[STATE_NAMES[record.state]] += 1
        return out

    def done_in_window(self) -> int:
        """Records between SPSO and SPEO already acknowledged or archived (lag leaves them out)."""
        return sum(1 for r in self.records.values() if r.state in _DONE)

    def state_batches(self) -> list[tuple[int, int, int, int]]:
        """The in-flight window as Kafka persists it: (first, last, state, delivery count)
        runs, an acquired record written as available (a restart takes its lock away)."""
        runs: list[list[int]] = []
        for offset in range(self.start, self.end):
            record = self.records.get(offset)
            state = AVAILABLE if record is None or record.state == ACQUIRED else record.state
            count = record.delivery_count if record is not None else 0
            if runs and runs[-1][1] == offset - 1 and runs[-1][2:] == [state, count]:
                runs[-1][1] = offset
            else:
                runs.append([offset, offset, state, count])
        return [(r[0], r[1], r[2], r[3]) for r in runs]

    def restore(
        self, start: int, batches: Iterable[tuple[int, int, int, int]], state_epoch: int = 0
    ) -> None:
        """Load a persisted window (:meth:`state_batches`)."""
        self.records.clear()
        self.start = self.end = start
        self.state_epoch = state_epoch
        for first, last, state, count in batches:
            for offset in range(max(first, start), last + 1):
                record = InFlight(AVAILABLE if state == ACQUIRED else state, count)
                if record.state == AVAILABLE and count >= self.delivery_limit:
                    record.state = ARCHIVED
                self.records[offset] = record
            self.end = max(self.end, last + 1)
        self._advance()
