"""The aborted-transaction index of one segment: ``<20-digit base offset>.txnindex``.

Kafka's TransactionIndex: one 34-byte entry per transaction aborted by a marker in the segment,
``version int16 (0), producerId int64, firstOffset int64, lastOffset int64 (the marker),
lastStableOffset int64`` (the partition's last stable offset once the abort completed).  A
read_committed fetch collects the entries overlapping the fetched range so consumers can drop
the aborted records.  The file is rebuilt from the log whenever producer state is replayed.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

__all__ = ["AbortedTxn", "TransactionIndex", "ENTRY", "TXN_INDEX_SUFFIX"]

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY = struct.Struct(">hqqqq")
VERSION = 0


class AbortedTxn(NamedTuple):
    """One aborted transaction of a partition."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The entries of one ``.txnindex`` file, kept in memory and appended to on disk."""

    def __init__(self, path: Path) -> None:
        """Read ``path`` if present (a torn last entry is dropped)."""
        self.path = Path(path)
        self.entries: list[AbortedTxn] = []
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        whole = len(data) - len(data) % ENTRY.size
        for pos in range(0, whole, ENTRY.size):
            version, *fields = ENTRY.unpack_from(data, pos)
            if version != VERSION:
                break
            self.entries.append(AbortedTxn(*fields))
        if len(self.entries) * ENTRY.size != len(data):
            os.truncate(self.path, len(self.entries) * ENTRY.size)

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry (in marker order) and write it to the file (fsynced: aborts are rare
        and a lost entry would expose aborted records)."""
        self.entries.append(txn)
        with open(self.path, "ab") as f:
            f.write(ENTRY.pack(VERSION, *txn))
            f.flush()
            os.fsync(f.fileno())

    def truncate_from(self, offset: int) -> None:
        """Drop every entry whose marker lies at or after ``offset`` (they are replayed)."""
        kept = [e for e in self.entries if e.last_offset < offset]
        if not kept:
            self.delete()
            return
        if len(kept) == len(self.entries):
            return
        self.entries = kept
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(b"".join(ENTRY.pack(VERSION, *e) for e in kept))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def collect(self, fetch_offset: int, upper: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping ``[fetch_offset, upper)``; True when no later segment can add
        one (an entry's last stable offset reached ``upper``), as Kafka's collectAbortedTxns."""
        out = []
        for e in self.entries:
            if e.last_offset >= fetch_offset and e.first_offset < upper:
                out.append(e)
            if e.last_stable_offset >= upper:
                return out, True
        return out, False

    def delete(self) -> None:
        """Remove the file."""
        self.entries = []
        self.path.unlink(missing_ok=True)
