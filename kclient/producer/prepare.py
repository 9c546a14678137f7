"""Serialize and partition: the first half of the DefaultEventHandler's work.

:class:`Preparer` turns a list of ProducerData into :class:`PartitionBatch` es: values and keys
are serialized column by column (bytes with the default encoder are only type-checked), the
partition is the pinned one, the partitioner's choice for a keyed message, or for keyless
messages one partition with a leader per batch, rotating batch by batch; batches are cut below
``batch.size`` bytes (the send thread already cut them at ``batch.num.messages``).  A message
that cannot be serialized or is too large gets a failed report on its own; a topic whose
metadata is missing waits (``_park``) and is retried like a send.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from kclient.cluster import Cluster
from kclient.core.produce import retriable
from kclient.encoders import for_topic
from kclient.errors import KafkaConnectionError, KafkaError, NoBrokersAvailableError
from kclient.protocol.error_base import error_for_code
from kclient.protocol.error_codes import (
    LeaderNotAvailableError,
    MessageSizeTooLargeError,
    UnknownTopicOrPartitionError,
)

from .batches import MAX_BATCH_BYTES, RECORD_OVERHEAD, PartitionBatch, split_by_size
from .buffers import is_plain
from .data import Entry

__all__ = ["Preparer", "retriable"]

log = logging.getLogger("kclient.producer.event_handler")

_topic = itemgetter(0)  # queue entries: (topic, value[, key, partition, timestamp, headers])
_value = itemgetter(1)
_NONE = type(None)


def _column(entries: list[Entry], index: int) -> list[Any] | None:
    """One optional field (2 key .. 5 headers) of every entry, or None when none sets it."""
    col = [e[index] if len(e) > 3 else None for e in entries]  # (3: topic, value, future)
    return None if col.count(None) == len(col) else col


class Preparer:
    """Mixin of DefaultEventHandler: ``_prepare(events, attempts) -> [PartitionBatch]``."""

    # what the mixin uses of its host (DefaultEventHandler sets them in ``init``)
    cluster: Cluster
    encoder: Any
    key_encoder: Any
    partitioner: Any
    codec: int
    compressed_topics: frozenset[str]
    max_message_bytes: int
    _raw_values: bool
    _raw_keys: bool
    _topics: set[str]
    _rr: dict[str, int]
    #: most bytes of records in one partition batch (``batch.size``)
    batch_bytes: int = MAX_BATCH_BYTES
    #: why the last metadata refresh failed (None after a success)
    _refresh_error: KafkaError | None = None
    #: when the delivery time of the messages being prepared runs out (monotonic)
    _deadline: float = float("inf")

    if TYPE_CHECKING:

        def _refresh(self, topics: Iterable[str]) -> None: ...
        def _park(self, events: list[Entry], attempts: int, exc: BaseException) -> None: ...
        def _fail_events(
            self, events: list[Entry], exc: BaseException, attempts: int = 0
        ) -> None: ...
        def _fail_indices(
            self, topic: str, evs: list[Entry], bad: dict[int, BaseException], attempts: int
        ) -> None: ...

    def _partitions(self, topic: str) -> tuple[list[int], list[int]]:
        """(all partition ids, ids whose leader is known) of ``topic``; refreshes if unknown."""
        info = self.cluster.topics.get(topic)
        if info is None or not info.partitions:
            self._refresh([topic] + sorted(self._topics))
            info = self.cluster.topics.get(topic)
        if info is None or info.error_code or not info.partitions:
            failed = self._refresh_error
            if failed is not None and (info is None or not info.partitions):
                if not failed.retriable and isinstance(failed, KafkaConnectionError):
                    raise failed  # TLS or SASL refused us: say that, not "no metadata"
                # no broker answered: say so, rather than calling the topic unknown
                raise NoBrokersAvailableError(
                    f"no metadata for topic {topic!r}: {failed}"
                ) from failed
            code = info.error_code if info is not None and info.error_code else 3
            raise error_for_code(code)(f"topic {topic!r}")
        self._topics.add(topic)
        brokers = self.cluster.brokers
        parts = sorted(info.partitions)
        avail = [p for p in parts if info.partitions[p].leader in brokers]
        return parts, avail

    # ------------------------------------------------------------------ prepare
    def _prepare(
        self, events: list[Entry] | None, attempts: int, checked: Any = None
    ) -> list[PartitionBatch]:
        """Queue entries (or a checked chunk) to partition batches; failures get reports."""
        if checked is not None:
            if self._raw_values:
                try:
                    return self._stamp(self._prepare_checked(checked))
                except KafkaError as exc:
                    events = [(checked.topic, v) for v in checked.values]
                    self._park(events, attempts, exc)
                    return []
            events = [(checked.topic, v) for v in checked.values]
        if not events:
            return []
        topics = list(map(_topic, events))
        groups: dict[str, list[Entry]]
        if topics.count(topics[0]) == len(topics):  # identity makes count cheap
            groups = {topics[0]: events}
        else:
            groups = {}
            for e in events:
                g = groups.get(e[0])
                if g is None:
                    groups[e[0]] = g = []
                g.append(e)
        out: list[PartitionBatch] = []
        for topic, evs in groups.items():
            try:
                made = self._prepare_topic(topic, evs, attempts)
                if attempts:
                    for b in made:
                        b.attempts = attempts
                out += made
            except KafkaError as exc:
                self._park(evs, attempts, exc)
            except Exception as exc:  # a partitioner or encoder bug: fail, never lose
                log.exception("preparing messages for topic %r failed", topic)
                self._fail_events(evs, exc)
        return self._stamp(out)

    def _stamp(self, batches: list[PartitionBatch]) -> list[PartitionBatch]:
        """Give each batch the delivery deadline of the messages being prepared."""
        deadline = self._deadline
        for b in batches:
            b.deadline = deadline
        return batches

    def _serialize(
        self, evs: list[Entry], column: list[Any], encoder: Any, raw: bool, what: str
    ) -> tuple[list[Any], dict[int, BaseException]]:
        """Encode a column; returns (values, {index: exception}) for messages that failed."""
        if raw:
            types = list(map(type, column))
            ok = types.count(bytes)
            if ok == len(types) or ok + types.count(_NONE) == len(types):
                return column, {}
            if what == "value" and is_plain(column):
                # bytearray / memoryview values go as they are (copied when encoded); keys
                # become bytes: partitioners hash them, and custom ones may expect bytes
                return column, {}
        if raw:
            enc = encoder.to_message
        else:
            enc = getattr(encoder, "to_message", encoder)
        try:
            return list(map(enc, column)), {}
        except Exception:  # noqa: BLE001 - retried per value below to find the bad ones
            pass
        out: list[Any] = []
        bad: dict[int, BaseException] = {}
        for i, v in enumerate(column):
            try:
                out.append(enc(v))
            except Exception as exc:  # noqa: BLE001 - a user encoder's failure fails that message only
                bad[i] = exc
                out.append(None)
        return out, bad

    def _codec(self, topic: str) -> int:
        return self.codec if (not self.compressed_topics or topic in self.compressed_topics) else 0

    def _prepare_checked(self, checked: Any) -> list[PartitionBatch]:
        """Plain bytes values of one topic, checked by the caller: one sticky partition."""
        topic = checked.topic
        _, avail = self._partitions(topic)
        p = self._sticky(topic, avail)
        return self._split(
            topic,
            p,
            None,
            checked.values,
            None,
            None,
            None,
            self._codec(topic),
            checked.lengths,
            checked.lengths,
        )

    def _prepare_topic(self, topic: str, evs: list[Entry], attempts: int) -> list[PartitionBatch]:
        parts, avail = self._partitions(topic)
        codec = self._codec(topic)
        n = len(evs)
        values, bad = self._serialize(
            evs, list(map(_value, evs)), for_topic(self.encoder, topic), self._raw_values, "value"
        )
        lens = list(map(len, evs))
        if lens.count(2) == n or lens.count(3) + lens.count(2) == n:
            keys = pins = stamps = headers = None
        else:
            keys, pins = _column(evs, 2), _column(evs, 3)
            stamps, headers = _column(evs, 4), _column(evs, 5)
            if keys is not None:
                keys, bad_keys = self._serialize(
                    evs, keys, for_topic(self.key_encoder, topic), self._raw_keys, "key"
                )
                bad.update(bad_keys)
        try:
            lengths = list(map(len, values))
        except TypeError:
            lengths = None
        sizes = lengths
        if sizes is None or keys is not None:
            sizes = [
                (len(v) if v is not None else 0) + (len(k) if k is not None else 0)
                for v, k in zip(values, keys or [None] * n)
            ]
        if max(sizes) > self.max_message_bytes:
            for i, s in enumerate(sizes):
                if s > self.max_message_bytes and i not in bad:
                    bad[i] = MessageSizeTooLargeError(
                        f"message of {s} bytes for topic {topic!r} exceeds message.max.bytes "
                        f"({self.max_message_bytes})"
                    )
        if bad:
            self._fail_indices(topic, evs, bad, attempts)
            keep = [i for i in range(n) if i not in bad]
            if not keep:
                return []
            evs, values, sizes = (
                [evs[i] for i in keep],
                [values[i] for i in keep],
                [sizes[i] for i in keep],
            )
            keys = [keys[i] for i in keep] if keys is not None else None
            pins = [pins[i] for i in keep] if pins is not None else None
            stamps = [stamps[i] for i in keep] if stamps is not None else None
            headers = [headers[i] for i in keep] if headers is not None else None
            lengths = None if lengths is None else [lengths[i] for i in keep]
            n = len(evs)
        if keys is None and pins is None:
            p = self._sticky(topic, avail)
            return self._split(topic, p, evs, values, None, stamps, headers, codec, lengths, sizes)
        # per-message partitions: pinned, by key, or sticky for null keys
        count = len(parts)
        choose = (
            self.partitioner.partition
            if hasattr(self.partitioner, "partition")
            else self.partitioner
        )
        sticky: int | None = None
        by_part: dict[int, list[int]] = {}
        partition_set = set(parts)
        for i in range(n):
            part: int | None = pins[i] if pins is not None else None
            if part is None:
                k = keys[i] if keys is not None else None
                if k is None:
                    if sticky is None:
                        sticky = self._sticky(topic, avail)
                    part = sticky
                else:
                    part = parts[choose(k, count)]
            elif part not in partition_set:
                self._fail_indices(
                    topic,
                    [evs[i]],
                    {
                        0: UnknownTopicOrPartitionError(
                            f"partition {part} of topic {topic!r} (it has {count})"
                        )
                    },
                    attempts,
                )
                continue
            idx = by_part.get(part)
            if idx is None:
                by_part[part] = idx = []
            idx.append(i)
        out: list[PartitionBatch] = []
        for p, idx in by_part.items():

            def sub(col: list[Any] | None, idx: list[int] = idx) -> list[Any] | None:
                return None if col is None else [col[i] for i in idx]

            out += self._split(
                topic,
                p,
                [evs[i] for i in idx],
                [values[i] for i in idx],
                sub(keys),
                sub(stamps),
                sub(headers),
                codec,
                sub(lengths),
                [sizes[i] for i in idx],
            )
        return out

    def _split(
        self,
        topic: str,
        partition: int,
        evs: list[Entry] | None,
        values: list[Any],
        keys: list[Any] | None,
        stamps: list[Any] | None,
        headers: list[Any] | None,
        codec: int,
        lengths: list[int] | None,
        sizes: list[int],
    ) -> list[PartitionBatch]:
        """One or more batches for a partition, each under ``batch.size`` bytes (a record
        larger than that goes alone)."""
        if keys is not None and all(k is None for k in keys):
            keys = None
        if stamps is not None and all(t is None for t in stamps):
            stamps = None
        if headers is not None and not any(headers):
            headers = None
        limit = self.batch_bytes
        if sum(sizes) + RECORD_OVERHEAD * len(sizes) <= limit:
            return [
                PartitionBatch(topic, partition, evs, values, keys, stamps, headers, codec, lengths)
            ]
        bounds = [0] + split_by_size(sizes, limit) + [len(values)]
        out = []
        for a, b in zip(bounds, bounds[1:]):

            def cut(col: list[Any] | None, a: int = a, b: int = b) -> list[Any] | None:
                return None if col is None else col[a:b]

            out.append(
                PartitionBatch(
                    topic,
                    partition,
                    cut(evs),
                    values[a:b],
                    cut(keys),
                    cut(stamps),
                    cut(headers),
                    codec,
                    cut(lengths),
                )
            )
        return out

    def _sticky(self, topic: str, avail: list[int]) -> int:
        """A partition with a leader for keyless messages, rotating batch by batch."""
        if not avail:
            raise LeaderNotAvailableError(f"no partition of topic {topic!r} has a leader")
        n = self._rr.get(topic, -1) + 1
        self._rr[topic] = n
        return avail[n % len(avail)]
