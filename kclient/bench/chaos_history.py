"""The chaos harness's history: every acknowledged send and every delivered record, and the
check that says whether the clients kept their promises (``kclient bench chaos``).

A record's value names its producer and its sequence number (``b"p-idem|17"``); the producer
picks the partition. What is checked, against the log read back at the end with read_committed:

* **lost**: an acknowledged send (an idempotent producer's ack, or a record of a transaction
  whose commit returned) missing from the log, or in the log at another place than its ack said;
* **duplicates**: a record in the log twice (idempotence and transactions promise once);
* **aborted visible**: a record of an aborted transaction in the read_committed log or handed
  to a read_committed consumer;
* **order**: a producer's records of one partition out of sequence order in the log, or a
  consumer handed a partition's offsets out of order between two assignments of it;
* **phantoms**: a consumer handed, at some offset, another record than the log holds there;
* **missing** per group: a committed record no member of the group was handed.

Redelivery after a rebalance (at least once) is counted, not an error.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from typing import Any, NamedTuple

__all__ = ["History", "Delivery", "encode", "decode"]


def encode(producer: str, seq: int) -> bytes:
    """The value of ``producer``'s record number ``seq``."""
    return f"{producer}|{seq}".encode()


def decode(value: bytes | None) -> tuple[str, int] | None:
    """(producer, seq) of a record's value; None for a value the harness did not write."""
    if not value:
        return None
    producer, sep, seq = bytes(value).decode(errors="replace").rpartition("|")
    return (producer, int(seq)) if sep and seq.isdigit() else None


class Delivery(NamedTuple):
    """One record a consumer was handed; ``epoch`` counts the consumer's assignments of it."""

    consumer: str
    group: str
    epoch: int
    partition: int
    offset: int
    record: tuple[str, int] | None


class History:
    """What happened, recorded from any thread, and :meth:`check`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.acked: dict[tuple[str, int], tuple[int, int]] = {}  # record -> (partition, offset)
        self.failed: set[tuple[str, int]] = set()  # sends that reported an error
        self.committed: set[tuple[str, int]] = set()  # of committed transactions
        self.aborted: set[tuple[str, int]] = set()  # of aborted transactions
        self.in_doubt: set[tuple[str, int]] = set()  # commit raised: either way
        self.deliveries: list[Delivery] = []
        self.events: list[tuple[float, str]] = []
        self.errors: Counter[str] = Counter()  # client errors, by kind

    # -- recording ------------------------------------------------------------------------------
    def ack(self, record: tuple[str, int], partition: int, offset: int) -> None:
        with self._lock:
            self.acked[record] = (partition, offset)

    def fail(self, record: tuple[str, int], error: BaseException) -> None:
        with self._lock:
            self.failed.add(record)
            self.errors[type(error).__name__] += 1

    def transaction(self, records: list[tuple[str, int]], outcome: str) -> None:
        """The end of a transaction: ``committed``, ``aborted`` or ``in_doubt``."""
        with self._lock:
            {"committed": self.committed, "aborted": self.aborted, "in_doubt": self.in_doubt}[
                outcome
            ].update(records)

    def deliver(
        self,
        consumer: str,
        group: str,
        epoch: int,
        partition: int,
        offset: int,
        value: bytes | None,
    ) -> None:
        with self._lock:
            self.deliveries.append(
                Delivery(consumer, group, epoch, partition, offset, decode(value))
            )

    def event(self, at: float, what: str) -> None:
        with self._lock:
            self.events.append((at, what))

    def error(self, kind: str) -> None:
        with self._lock:
            self.errors[kind] += 1

    # -- checking -------------------------------------------------------------------------------
    def promised(self) -> dict[tuple[str, int], tuple[int, int] | None]:
        """Every send the clients said is in the log: acks (with their place) and the records
        of committed transactions (their place is what the log says)."""
        out: dict[tuple[str, int], tuple[int, int] | None] = dict(self.acked)
        for record in self.committed:
            out.setdefault(record, None)
        for record in self.aborted | self.in_doubt:
            if record not in self.committed:
                out.pop(record, None)  # a transactional ack is a promise only after commit
        return out

    def check(self, log: list[tuple[int, int, bytes | None]]) -> dict[str, Any]:
        """The verdict against ``log``: (partition, offset, value) read with read_committed."""
        at: dict[tuple[int, int], tuple[str, int] | None] = {}
        where: defaultdict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
        for partition, offset, value in log:
            record = decode(value)
            at[(partition, offset)] = record
            if record is not None:
                where[record].append((partition, offset))
        promised = self.promised()
        lost = sorted(r for r in promised if r not in where)
        misplaced = sorted(
            r
            for r, place in promised.items()
            if place is not None and r in where and place not in where[r]
        )
        duplicates = sorted(r for r, places in where.items() if len(places) > 1)
        aborted = self.aborted - self.committed - self.in_doubt
        aborted_visible = sorted(
            {r for r in where if r in aborted}
            | {d.record for d in self.deliveries if d.record in aborted}
        )
        return {
            "promised": len(promised),
            "log_records": len(log),
            "lost": lost,
            "misplaced": misplaced,
            "duplicates": duplicates,
            "aborted_visible": aborted_visible,
            "log_order": _log_order(log),
            "delivery_order": self._delivery_order(),
            "phantoms": self._phantoms(at),
            "groups": self._groups(where),
            "failed_sends": len(self.failed),
            "committed": len(self.committed),
            "aborted": len(aborted),
            "in_doubt": len(self.in_doubt - self.committed),
            "errors": dict(self.errors),
            "events": [what for _, what in self.events],
        }

    def _delivery_order(self) -> list[str]:
        """Consumers handed a partition's offsets out of order within one assignment."""
        last: dict[tuple[str, int, int], int] = {}
        bad: list[str] = []
        for d in self.deliveries:
            key = (d.consumer, d.epoch, d.partition)
            if key in last and d.offset <= last[key]:
                bad.append(
                    f"{d.consumer} partition {d.partition}: offset {d.offset} after "
                    f"{last[key]} (assignment {d.epoch})"
                )
            last[key] = d.offset
        return bad

    def _phantoms(self, at: dict[tuple[int, int], tuple[str, int] | None]) -> list[str]:
        """Deliveries whose record differs from the log's at that offset (a read_committed
        consumer is never handed what the read_committed log leaves out)."""
        return [
            f"{d.consumer} partition {d.partition} offset {d.offset}: {d.record}, the log "
            f"has {at.get((d.partition, d.offset), 'nothing')}"
            for d in self.deliveries
            if at.get((d.partition, d.offset), ()) != d.record
        ]

    def _groups(self, where: dict[tuple[str, int], list[tuple[int, int]]]) -> dict[str, Any]:
        """Per group: committed records in the log that no member was handed, redeliveries."""
        out: dict[str, Any] = {}
        by_group: defaultdict[str, Counter[tuple[int, int]]] = defaultdict(Counter)
        for d in self.deliveries:
            by_group[d.group][(d.partition, d.offset)] += 1
        in_log = {place for places in where.values() for place in places}
        for group, seen in sorted(by_group.items()):
            missing = sorted(in_log - set(seen))
            out[group] = {
                "delivered": sum(seen.values()),
                "missing": len(missing),
                "missing_first": missing[:5],
                "redelivered": sum(n - 1 for n in seen.values()),
            }
        return out


def _log_order(log: list[tuple[int, int, bytes | None]]) -> list[str]:
    """A producer's records of one partition out of sequence order in the log."""
    last: dict[tuple[int, str], int] = {}
    bad: list[str] = []
    for partition, offset, value in sorted(log, key=lambda e: (e[0], e[1])):
        record = decode(value)
        if record is None:
            continue
        producer, seq = record
        key = (partition, producer)
        if key in last and seq <= last[key]:
            bad.append(
                f"partition {partition} offset {offset}: {producer} seq {seq} after {last[key]}"
            )
        last[key] = seq
    return bad


def failures(verdict: dict[str, Any]) -> list[str]:
    """What in ``verdict`` breaks a promise (empty: the history checks)."""
    out = [
        f"{key}: {len(verdict[key])} (first {verdict[key][:3]})"
        for key in (
            "lost",
            "misplaced",
            "duplicates",
            "aborted_visible",
            "log_order",
            "delivery_order",
            "phantoms",
        )
        if verdict[key]
    ]
    out += [
        f"group {g}: {v['missing']} committed records never delivered (first {v['missing_first']})"
        for g, v in verdict["groups"].items()
        if v["missing"]
    ]
    return out
