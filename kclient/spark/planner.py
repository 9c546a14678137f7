"""Driver-side planning: which partitions a subscription names, their leaders and offsets.

Runs where Spark plans (a short-lived Python worker for batch reads, the long-lived stream
reader process for streams): metadata through :class:`~kclient.cluster.Cluster`, offsets through
ListOffsets on each partition's leader (``SimpleConsumer.get_offsets_before``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kclient.cluster import Cluster
from kclient.connection import ConnectionSettings
from kclient.core.fetch import ISOLATION_LEVELS
from kclient.errors import KafkaError
from kclient.protocol.apis import LIST_OFFSETS
from kclient.security import SecuritySettings
from kclient.simple import OffsetRequest, SimpleConsumer

from .offsets import OffsetRange, TopicPartition
from .options import EARLIEST, LATEST, OffsetSpec, ReadOptions

__all__ = ["Planner"]


class Planner:
    """Partitions, leaders and offsets for one read's options (one per reader object)."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        kw = opts.consumer_kwargs()
        self.settings = ConnectionSettings(
            client_id=str(kw.get("client_id") or "kclient-spark"),
            request_timeout_ms=int(kw.get("so_timeout", 30000)),
            connect_timeout_ms=int(kw.get("connect_timeout_ms", 10000)),
            security=SecuritySettings.from_keys(kw.get("security")),
        )
        self.cluster = Cluster(opts.bootstrap, self.settings)
        self._consumers: dict[str, SimpleConsumer] = {}
        self._isolation = ISOLATION_LEVELS[str(kw.get("isolation_level", "read_uncommitted"))]

    def close(self) -> None:
        for c in self._consumers.values():
            c.close()
        self._consumers.clear()
        self.cluster.close()

    # -- partitions ---------------------------------------------------------------------------
    def partitions(self) -> dict[TopicPartition, str]:
        """The subscribed partitions that exist now, each with its leader's "host:port"."""
        sub = self.opts.subscription
        if sub.kind == "subscribe":
            self.cluster.refresh(sub.topics, allow_auto_create=False)
        elif sub.kind == "assign":
            self.cluster.refresh(sorted({t for t, _ in sub.assigned}), allow_auto_create=False)
        else:
            self.cluster.refresh(None, allow_auto_create=False)
        assigned = set(sub.assigned)
        out: dict[TopicPartition, str] = {}
        for name, info in self.cluster.topics.items():
            if info.error_code or not sub.matches(name):
                continue
            if sub.kind == "subscribepattern" and (info.is_internal or name.startswith("__")):
                continue
            for p, part in info.partitions.items():
                if sub.kind == "assign" and (name, p) not in assigned:
                    continue
                broker = self.cluster.brokers.get(part.leader)
                out[(name, p)] = broker.address if broker is not None else ""
        return dict(sorted(out.items()))

    # -- offsets ------------------------------------------------------------------------------
    def _consumer(self, leader: str) -> SimpleConsumer:
        c = self._consumers.get(leader)
        if c is None:
            host, port = leader.rsplit(":", 1)
            c = SimpleConsumer(
                host,
                int(port),
                so_timeout=self.settings.request_timeout_ms,
                buffer_size=None,
                client_id=self.settings.client_id,
                isolation_level=self.opts.consumer_kwargs().get(
                    "isolation_level", "read_uncommitted"
                ),
                security=self.opts.security.client_keys() or None,
            )
            self._consumers[leader] = c
        return c

    def group_client(self) -> SimpleConsumer:
        """A SimpleConsumer for group offset commits (it finds the group's coordinator)."""
        broker = next(iter(self.cluster.brokers.values()), None)
        if broker is None:
            self.cluster.refresh([], allow_auto_create=False)
            broker = next(iter(self.cluster.brokers.values()))
        host, port = broker.address.rsplit(":", 1)
        return SimpleConsumer(
            host,
            int(port),
            so_timeout=self.settings.request_timeout_ms,
            buffer_size=None,
            client_id=self.settings.client_id,
            security=self.opts.security.client_keys() or None,
        )

    def offsets_at(
        self, parts: Mapping[TopicPartition, str], time: int
    ) -> dict[TopicPartition, int]:
        """Each partition's offset at ``time`` (-2 earliest, -1 latest, else ms): one
        ListOffsets request per leader; a leader whose answer fails is asked partition by
        partition (which finds moved leaders)."""
        by_leader: dict[str, list[TopicPartition]] = {}
        for tp, leader in parts.items():
            by_leader.setdefault(leader, []).append(tp)
        out: dict[TopicPartition, int] = {}
        for leader, tps in by_leader.items():
            found = self._leader_offsets(leader, tps, time) if len(tps) > 1 else None
            if found is None:
                found = {tp: self.offset_at(tp, leader, time) for tp in tps}
            out.update(found)
        return {tp: out[tp] for tp in parts}

    def _leader_offsets(
        self, leader: str, tps: list[TopicPartition], time: int
    ) -> dict[TopicPartition, int] | None:
        """``tps``' offsets at ``time`` in one ListOffsets (v1+) to ``leader``; None when that
        cannot answer for all of them (no such broker, an old broker, a partition error)."""
        node = next((b.node_id for b in self.cluster.brokers.values() if b.address == leader), None)
        try:
            if node is None:
                return None
            conn = self.cluster.connection(node)
            if conn.version(LIST_OFFSETS) < 1:
                return None
            resp = conn.request(LIST_OFFSETS, _list_offsets_body(tps, time, self._isolation))
        except KafkaError:
            return None
        out = {
            (t.name, p.partition_index): p.offset
            for t in resp.topics
            for p in t.partitions
            if not p.error_code and p.offset >= 0
        }
        return out if all(tp in out for tp in tps) else None

    def offset_at(self, tp: TopicPartition, leader: str, time: int) -> int:
        """One partition's offset at ``time``, asking the leader (found again if it moved)."""
        for attempt in (0, 1):
            try:
                if not leader:
                    raise KafkaError(f"{tp[0]}-{tp[1]} has no leader")
                return self._consumer(leader).get_offsets_before(tp[0], tp[1], time, 1)[0]
            except KafkaError:
                if attempt:
                    raise
                leader = self.cluster.leader_for(tp[0], tp[1]).address
        raise AssertionError("unreachable")

    def resolve(
        self, spec: OffsetSpec, parts: Mapping[TopicPartition, str], default: int
    ) -> dict[TopicPartition, int]:
        """The offsets ``spec`` names for ``parts``; partitions it does not name get
        ``default`` (-2 earliest, -1 latest)."""
        if spec.kind == "earliest":
            return self.offsets_at(parts, OffsetRequest.EARLIEST_TIME)
        if spec.kind == "latest":
            return self.offsets_at(parts, OffsetRequest.LATEST_TIME)
        if spec.kind == "timestamp":
            return self.offsets_at(parts, spec.timestamp)
        given = spec.as_dict()
        out = {}
        for tp, leader in parts.items():
            value = given.get(tp, default)
            if spec.kind == "timestamps" and tp in given:
                out[tp] = self.offset_at(tp, leader, value)
            elif value in (EARLIEST, LATEST):
                out[tp] = self.offset_at(tp, leader, value)
            else:
                out[tp] = value
        return out

    def ranges(
        self,
        start: Mapping[TopicPartition, int],
        end: Mapping[TopicPartition, int],
        leaders: Mapping[TopicPartition, str],
        new_partitions_from: int = EARLIEST,
    ) -> list[OffsetRange]:
        """One range per partition of ``end``; a partition missing from ``start`` (added since)
        starts at ``new_partitions_from``."""
        out = []
        for tp in sorted(end):
            leader = leaders.get(tp, "")
            first = start[tp] if tp in start else self.offset_at(tp, leader, new_partitions_from)
            out.append(OffsetRange(tp[0], tp[1], first, end[tp], leader))
        return out

    def leaders(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, str]:
        """Current leaders of ``tps`` (from the last metadata, refreshed if unknown)."""
        out = {}
        for t, p in tps:
            try:
                out[(t, p)] = self.cluster.leader_for(t, p).address
            except KafkaError:
                out[(t, p)] = ""
        return out


def _list_offsets_body(tps: list[TopicPartition], time: int, isolation: int) -> dict[str, Any]:
    """A ListOffsets request for ``tps`` at ``time``, grouped by topic."""
    topics: dict[str, list[int]] = {}
    for t, p in tps:
        topics.setdefault(t, []).append(p)
    return {
        "replica_id": -1,
        "isolation_level": isolation,
        "topics": [
            {
                "name": t,
                "partitions": [
                    {"partition_index": p, "timestamp": time, "max_num_offsets": 1} for p in ps
                ],
            }
            for t, ps in topics.items()
        ],
    }
