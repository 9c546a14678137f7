"""The sync producer's lane for one message: the fewest steps between ``send()`` and the socket.

A sync ``send(ProducerData)`` of one bytes value (no key, timestamp or headers; the partition
pinned or sticky) with nothing else outstanding goes here instead of through the batch
machinery (prepare, group by broker, the generic Produce encoder and decoder, settle): one
record batch is encoded, framed by a :class:`~kclient.protocol.produce_one.OneProduce` cached
per connection, topic and partition, and the answer is read in its common shape.  Whatever is
not the plain success (an error code, a broken connection, metadata missing, idempotence or
transactions on) falls back to the generic path, with the batch handed over as if sent there,
so retries, reports and errors stay the generic path's.  ``kclient bench latency`` measures it
(docs/benchmarks.md, issue 23).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kclient.core.produce import magic_for, settle
from kclient.errors import KafkaError
from kclient.protocol.apis import PRODUCE
from kclient.protocol.produce_one import OneProduce
from kclient.protocol.records.v2_uniform import encode_v2_uniform

from .batches import PartitionBatch, encode_records
from .data import DeliveryReport, ProducerData

if TYPE_CHECKING:
    from kclient.cluster import Cluster
    from kclient.connection import BrokerConnection
    from kclient.core.idempotence import IdempotentState

__all__ = ["SyncLane"]

_INF = float("inf")
#: a message's way out: connection, prepared encoder, message format, codec, and the
#: partition's counters (batches, messages, bytes: DefaultEventHandler.partition_stats)
_Lane = tuple["BrokerConnection", OneProduce, int, int, list[int]]


class SyncLane:
    """Mixin of DefaultEventHandler: :meth:`send_one`."""

    # what the mixin uses of its host (DefaultEventHandler)
    cluster: Cluster
    txn: IdempotentState | None
    acks: int
    ack_timeout_ms: int
    delivery_timeout: float | None
    partition_stats: dict[tuple[str, int], list[int]]
    _raw_values: bool
    _stale: bool
    _deadline: float
    _conns: dict[int, BrokerConnection]
    #: (topic, partition) -> (connection, its versions, the prepared encoder)
    _lanes: dict[tuple[str, int], tuple[Any, Any, OneProduce]]
    #: (topic, pinned partition) -> (the metadata's refresh time, its lane)
    _lane_memo: dict[tuple[str, int], tuple[float, _Lane]]
    refresh_interval: float | None
    _inflight: Any
    _retry: Any
    _parked: Any

    if TYPE_CHECKING:

        def _maybe_refresh(self) -> None: ...
        def _partitions(self, topic: str) -> tuple[list[int], list[int]]: ...
        def _sticky(self, topic: str, avail: list[int]) -> int: ...
        def _codec(self, topic: str) -> int: ...
        def _connection(self, node: int) -> BrokerConnection: ...
        def _connection_failed(self, conn: BrokerConnection, exc: BaseException) -> None: ...
        def _retry_later(self, b: PartitionBatch, exc: BaseException) -> None: ...
        def _others(self, b: PartitionBatch) -> list[PartitionBatch]: ...
        def _succeed(self, b: PartitionBatch, base_offset: int, log_append_time: int) -> None: ...
        def _fail(self, b: PartitionBatch, exc: BaseException) -> None: ...
        def _retry_forced(self, b: PartitionBatch, exc: BaseException, force: bool) -> None: ...
        def complete(self, deadline: float | None = None) -> None: ...
        def take_reports(self) -> list[DeliveryReport]: ...

    def send_one(self, d: ProducerData) -> list[DeliveryReport] | None:
        """Send ``d`` and wait for its outcome: its report, or None when it does not fit the
        lane (nothing was sent: the caller takes the generic path)."""
        x = d._extra
        value = d.value
        if (
            type(value) is not bytes
            or self.txn is not None
            or self.acks == 0
            or not self._raw_values
            or self._stale
            or self._inflight
            or self._retry
            or self._parked
            or (x is not None and (x[0] is not None or x[2] is not None or x[3] is not None))
        ):
            return None
        interval = self.refresh_interval
        if interval is not None and time.monotonic() - self.cluster.last_refresh >= interval:
            self._maybe_refresh()
        topic = d.topic
        pinned = None if x is None else x[1]
        lane = self._pinned_lane(topic, pinned) if pinned is not None else None
        if lane is None:
            lane = self._lane(topic, pinned)
            if lane is None:
                return None
        conn, enc, magic, codec, ps = lane
        partition = enc.partition
        ps[0] += 1
        ps[1] += 1
        created = int(time.time() * 1000)
        timeout = self.delivery_timeout
        self._deadline = _INF if timeout is None else time.monotonic() + timeout
        try:
            if magic == 2 and not codec:  # a prepared frame (OneProduce.stamped)
                frame, size = enc.stamped(value, created)
                ps[2] += size
                resp: Any = conn.round_trip(PRODUCE, enc.version, frame, enc.read)
            else:
                records = (
                    encode_v2_uniform([value], len(value), codec, created)
                    if magic == 2
                    else encode_records([value], None, None, None, magic, codec, created)
                )
                ps[2] += len(records)
                resp = conn.exchange(  # OneProduce.read's tuple, or a Struct
                    PRODUCE, enc.version, lambda corr: enc.frame(corr, records), enc.read
                )
        except KafkaError as exc:
            self._connection_failed(conn, exc)
            self._retry_later(self._batch(d, partition, codec, created), exc)
            return self._finish()
        if type(resp) is tuple:  # written (OneProduce.read)
            r = DeliveryReport(topic, partition, [d], resp[0], None, resp[1], 1)
            r.create_time = created
            return [r]
        b = self._batch(d, partition, codec, created)  # an error: the generic path's answer
        settle(
            resp,
            conn.node_id if conn.node_id is not None else -1,
            {(topic, partition): b},
            None,
            self._others,
            self._succeed,
            self._fail,
            self._retry_forced,
        )
        return self._finish()

    def _pinned_lane(self, topic: str, partition: int) -> _Lane | None:
        """:meth:`_lane` of a pinned partition as last found, while the metadata, the
        connection and its versions are the same (one lookup instead of a dozen)."""
        hit = self._lane_memo.get((topic, partition))
        if hit is None:
            return None
        stamp, lane = hit
        conn = lane[0]
        if stamp != self.cluster.last_refresh or not conn.connected:
            return None
        if self._lanes[(topic, partition)][1] is not conn.versions:
            return None
        return lane

    def _lane(self, topic: str, pinned: int | None) -> _Lane | None:
        """Where ``topic``'s message goes (``pinned`` or the sticky partition): its
        connection, prepared encoder, message format, codec and counters; None when the
        metadata or the connection is not ready (the generic path sorts that out)."""
        info = self.cluster.topics.get(topic)
        if info is None or info.error_code:
            return None
        if pinned is None:
            try:
                _, avail = self._partitions(topic)
                partition = self._sticky(topic, avail)
            except KafkaError:
                return None
        else:
            partition = pinned
        part = info.partitions.get(partition)
        if part is None or part.leader not in self.cluster.brokers:
            return None
        conn = self._conns.get(part.leader)
        if conn is None or not conn.connected:
            try:
                conn = self._connection(part.leader)
            except KafkaError:
                return None
        else:
            b = self.cluster.brokers[part.leader]
            if (conn.host, conn.port) != (b.host, b.port):
                return None
        cached = self._lanes.get((topic, partition))
        if cached is None or cached[0] is not conn or cached[1] is not conn.versions:
            try:
                version = conn.version(PRODUCE)
            except KafkaError:
                return None
            enc = OneProduce(
                version, conn.client_id, None, self.acks, self.ack_timeout_ms, topic, partition
            )
            cached = self._lanes[(topic, partition)] = (conn, conn.versions, enc)
        enc = cached[2]
        ps = self.partition_stats.get((topic, partition))
        if ps is None:
            ps = self.partition_stats[(topic, partition)] = [0, 0, 0]
        lane = (conn, enc, magic_for(enc.version), self._codec(topic), ps)
        if pinned is not None:
            self._lane_memo[(topic, partition)] = (self.cluster.last_refresh, lane)
        return lane

    def _batch(self, d: ProducerData, partition: int, codec: int, created: int) -> PartitionBatch:
        """The message as the generic path's batch, sent once (for its retries and report)."""
        b = PartitionBatch(d.topic, partition, None, [d.value], codec=codec)
        b.entries = [(d.topic, d.value) if d._extra is None else (d.topic, d.value) + d._extra]
        b.created = created
        b.attempts = 1
        b.deadline = self._deadline
        return b

    def _finish(self) -> list[DeliveryReport]:
        """The generic path from here: retries until the outcome, then the report."""
        self.complete()
        return self.take_reports()
