"""A compacted log of keyed records that is replayed at start-up: the broker's internal state.

Kafka keeps its coordinators' state in compacted topics (``__consumer_offsets``,
``__transaction_state``): each change is a keyed record, a deletion a tombstone, and the log
cleaner keeps the topic bounded.  :class:`StateLog` is that for the mini-broker: one partition
log with ``cleanup.policy=compact`` and its own cleaner thread (its checkpoint file inside the
partition directory, so several state logs may share a parent), appended to in batches (one
batch per change, so a change is atomic) and read back in order on :meth:`open`.  The offset
manager stores commits in one; the group and transaction coordinators can use their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kclient.broker.log import FileRegion, Log, LogConfig
from kclient.broker.log.cleaner import LogCleaner
from kclient.broker.log.config import INT64_MAX
from kclient.protocol.records import (
    Record,
    RecordsReader,
    build_batch,
    parse_end_txn_marker,
)

_READ_BYTES = 1 << 20
#: (producer id, key, value) of a transactional record; (producer id, None, commit) of a marker
TxnApply = Callable[[int, "bytes | None", "bytes | bool | None"], None]


def read_log(each: Log) -> Iterator[Record]:
    """Every data record of a log, oldest first (control batches skipped)."""
    for batch in read_batches(each):
        if not batch.is_control:
            yield from batch.records


def read_batches(each: Log) -> Iterator[Any]:
    """Every batch of a log, oldest first (transaction markers included)."""
    offset, size = each.log_start_offset, _READ_BYTES
    while offset < each.log_end_offset:
        region = each.read(offset, size)
        data = region.read() if isinstance(region, FileRegion) else region
        batches = list(RecordsReader(data).batches()) if data else []
        if not batches:
            if not data:
                return
            size *= 2  # one entry larger than the read
            continue
        yield from batches
        offset = batches[-1].last_offset + 1


class StateLog:
    """One compacted, self-cleaning partition log under ``directory`` (see the module doc)."""

    def __init__(
        self,
        directory: Path,
        config: Mapping[str, str],
        *,
        segment_bytes: int,
        fsync: bool = True,
        codec: int = 0,
        name: str = "kclient-state-cleaner",
    ) -> None:
        """``config``: broker settings (``log.cleaner.*``); ``fsync``: every append forced to
        disk; ``codec``: compression of the appended batches."""
        props = {k: str(v) for k, v in config.items() if k.startswith("log.cleaner.")}
        base = LogConfig(
            segment_bytes=segment_bytes,
            cleanup_policy=("compact",),
            flush_interval_messages=1 if fsync else INT64_MAX,
        )
        self.directory = Path(directory)
        self.config = LogConfig.from_properties(props, base)
        self.codec = codec
        self.log: Log | None = None
        self.cleaner: LogCleaner | None = None
        if str(config.get("log.cleaner.enable", "true")).strip().lower() == "true":
            self.cleaner = LogCleaner(self._logs, self.directory, config, name=name)

    def _logs(self) -> list[Log]:
        """What the cleaner looks after."""
        return [self.log] if self.log is not None else []

    def open(
        self,
        apply: Callable[[bytes | None, bytes | None], None],
        transactional: TxnApply | None = None,
    ) -> None:
        """Open the log, hand every record's ``(key, value)`` to ``apply``, start cleaning.

        With ``transactional``, the records of transactional batches go to it instead, as
        ``(producer id, key, value)``, and each transaction marker as ``(producer id, None,
        commit)``: the caller applies a transaction's records once it is committed."""
        self.log = Log(self.directory, self.config)
        for batch in read_batches(self.log):
            if transactional is not None and batch.is_transactional:
                if batch.is_control:
                    record = batch.records[0]
                    marker = parse_end_txn_marker(record.key, record.value)
                    transactional(batch.producer_id, None, marker.committed)
                else:
                    for record in batch.records:
                        transactional(batch.producer_id, record.key, record.value)
            elif not batch.is_control:
                for record in batch.records:
                    apply(record.key, record.value)
        if self.cleaner is not None:
            self.cleaner.start()

    def append(
        self,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
        *,
        producer_id: int = -1,
        epoch: int = -1,
    ) -> None:
        """Append one batch of keyed records (None values are tombstones); with a
        ``producer_id``, as a transactional batch of that producer (its coordinator's write:
        no sequence), which a marker (:meth:`end_txn`) later commits or aborts."""
        if self.log is None:
            raise RuntimeError(f"state log {self.directory.name} is not open")
        batch = build_batch(
            list(values),
            list(keys),
            codec=self.codec,
            producer_id=producer_id,
            producer_epoch=epoch,
            is_transactional=producer_id >= 0,
        )
        self.log.append(batch, magic=2, coordinator=producer_id >= 0)

    def end_txn(self, producer_id: int, epoch: int, commit: bool) -> None:
        """Write the marker ending ``producer_id``'s transaction in this log."""
        if self.log is None:
            raise RuntimeError(f"state log {self.directory.name} is not open")
        self.log.append_marker(producer_id, epoch, commit)

    def flush(self) -> None:
        """fsync everything appended so far."""
        if self.log is not None:
            self.log.flush()

    def compact(self) -> None:
        """Roll the log and clean it now, whatever its dirty ratio."""
        if self.log is not None and self.cleaner is not None:
            self.log.roll()
            self.cleaner.clean(self.log)

    @property
    def size(self) -> int:
        """Bytes on disk over all segments."""
        return self.log.size if self.log is not None else 0

    def close(self) -> None:
        """Stop the cleaner, flush and close the log."""
        if self.cleaner is not None:
            self.cleaner.close()
        if self.log is not None:
            self.log.close()
            self.log = None


__all__ = ["StateLog", "TxnApply", "read_batches", "read_log"]
