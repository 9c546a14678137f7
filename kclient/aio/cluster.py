"""Brokers and topic metadata for the asyncio clients, with one connection per broker.

The asyncio counterpart of :class:`kclient.cluster.Cluster`: the same state and Metadata
conversation (:mod:`kclient.core.metadata`), run by the asyncio driver.  Connections are opened
on first use; a connection that failed is replaced by the next :meth:`connection` call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kclient.cluster import parse_bootstrap
from kclient.connection import ConnectionSettings
from kclient.core.metadata import (
    ClusterState,
    list_offsets_answers,
    list_offsets_body,
    refresh_metadata,
)
from kclient.core.metadata_recovery import Candidate, MetadataRecovery
from kclient.errors import KafkaConnectionError, KafkaError, NoBrokersAvailableError, error_for_code
from kclient.protocol.apis import LIST_OFFSETS
from kclient.structs import TopicPartition

from .connection import AIOConnection
from .driver import ConnectionTransport, run

if TYPE_CHECKING:
    from kclient.protocol.messages import MetadataResponse

__all__ = ["AIOCluster"]

log = logging.getLogger(__name__)


class AIOCluster(ClusterState):
    """Known brokers and topics; ``await refresh()`` asks any broker for metadata."""

    def __init__(self, bootstrap: str | Iterable[str], settings: ConnectionSettings) -> None:
        super().__init__()
        self.bootstrap = parse_bootstrap(bootstrap)
        self.settings = settings
        self.recovery = MetadataRecovery(
            settings.metadata_recovery_strategy, settings.metadata_recovery_rebootstrap_trigger_ms
        )
        self._conns: dict[int | str, AIOConnection] = {}
        self._opening: dict[int | str, asyncio.Future[AIOConnection]] = {}

    async def connection(self, node_id: int) -> AIOConnection:
        """The connection to broker ``node_id`` (opened, or reopened after a failure)."""
        info = self.brokers.get(node_id)
        if info is None:
            raise KafkaConnectionError("?", -1, f"broker {node_id} is not in the metadata")
        return await self._connect(node_id, info.host, info.port)

    def connection_if_open(self, node_id: int) -> AIOConnection | None:
        """The open connection to broker ``node_id``, or None (nothing is connected)."""
        conn = self._conns.get(node_id)
        return conn if conn is not None and conn.connected else None

    async def _connect(self, key: int | str, host: str, port: int) -> AIOConnection:
        conn = self._conns.get(key)
        if conn is not None and conn.connected and (conn.host, conn.port) == (host, port):
            return conn
        opening = self._opening.get(key)
        if opening is not None:  # another task is connecting: share it
            return await asyncio.shield(opening)
        fut: asyncio.Future[AIOConnection] = asyncio.get_running_loop().create_future()
        self._opening[key] = fut
        try:
            conn = AIOConnection(
                host, port, self.settings, node_id=key if isinstance(key, int) else None
            )
            await conn.connect()
            self._conns[key] = conn
            fut.set_result(conn)
            return conn
        except BaseException as exc:
            fut.set_exception(
                exc
                if isinstance(exc, Exception)
                else KafkaConnectionError(host, port, "connect cancelled")
            )
            fut.exception()
            raise
        finally:
            del self._opening[key]

    def _known(self) -> list[Candidate]:
        """The brokers the last metadata named."""
        return [(b.node_id, b.host, b.port) for b in self.brokers.values()]

    async def any_connection(self) -> AIOConnection:
        """A connection to some broker: an open one, else as :class:`MetadataRecovery` plans it
        (the known brokers, then the bootstrap servers unless metadata.recovery.strategy=none)."""
        plan = self.recovery.plan(
            self._known(), [(f"{h}:{p}", h, p) for h, p in self.bootstrap], time.monotonic()
        )
        allowed = {(host, port) for _, host, port in plan.candidates}
        for conn in self._conns.values():
            if conn.connected and (conn.host, conn.port) in allowed:
                return conn
        if plan.rebootstrap:
            log.warning(
                "no metadata from the known brokers for %.0f s: rebootstrapping from %s",
                self.recovery.trigger_s,
                self.bootstrap,
            )
        errors = []
        for key, host, port in plan.candidates:
            try:
                return await self._connect(key, host, port)
            except KafkaConnectionError as exc:
                if not exc.retriable:
                    raise
                self.recovery.failed((key, host, port), self._known(), time.monotonic())
                errors.append(str(exc))
        raise NoBrokersAvailableError("no broker reachable: " + "; ".join(errors))

    async def refresh(
        self, topics: Iterable[str] | None = None, allow_auto_create: bool = True
    ) -> MetadataResponse:
        """Fetch metadata (all topics when ``topics`` is None) and update what we know."""
        names = None if topics is None else sorted(set(topics))
        for attempt in range(3):
            conn = await self.any_connection()
            asked: Candidate = (
                conn.node_id if conn.node_id is not None else f"{conn.host}:{conn.port}",
                conn.host,
                conn.port,
            )
            try:
                resp = await run(
                    refresh_metadata(names, allow_auto_create), ConnectionTransport(conn)
                )
            except KafkaConnectionError:
                self.recovery.failed(asked, self._known(), time.monotonic())
                if attempt == 2:
                    raise
                continue
            if self.recovery.answered(asked, self._known(), time.monotonic()):
                log.warning(
                    "rebootstrapped: %s:%s from the bootstrap list answered after every "
                    "known broker failed",
                    conn.host,
                    conn.port,
                )
            self.apply(resp, names is None, time.monotonic())
            return resp
        raise AssertionError("unreachable")

    async def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic`` (metadata fetched if unknown); raises the topic's
        error (UnknownTopicOrPartitionError, TopicAuthorizationFailedError, ...)."""
        info = self.topics.get(topic)
        if info is None or not info.partitions:
            await self.refresh([topic])
        return self.partition_ids(topic)

    async def leader_for(self, topic: str, partition: int) -> int:
        """The leader's node id, refreshing metadata once when unknown."""
        node = self.leader(topic, partition)
        if node is None:
            await self.refresh([topic], allow_auto_create=False)
            node = self.leader(topic, partition)
        if node is None:
            raise self.no_leader(topic, partition)
        return node

    async def list_offsets(
        self, query: Mapping[TopicPartition, int], isolation_level: int = 0
    ) -> dict[TopicPartition, int]:
        """ListOffsets at each leader: ``{tp: offset}`` for ``{tp: timestamp}`` (-2 earliest,
        -1 latest); raises a partition's error."""
        found = await self.list_offset_times(query, isolation_level)
        return {tp: offset for tp, (offset, _) in found.items()}

    async def list_offset_times(
        self,
        query: Mapping[TopicPartition, int],
        isolation_level: int = 0,
        attempts: int = 6,
        backoff_s: float = 0.2,
    ) -> dict[TopicPartition, tuple[int, int]]:
        """ListOffsets at each leader: ``{tp: (offset, timestamp)}`` (offset -1: none at or
        after that time).  A retriable partition error (a leader not known yet, as right
        after the topic's creation, or moved) refreshes the metadata and asks again, up to
        ``attempts`` rounds; other errors, and the last round's, are raised."""
        out: dict[TopicPartition, tuple[int, int]] = {}
        pending = dict(query)
        while True:
            attempts -= 1
            failed = await self._list_offsets_round(pending, isolation_level, out)
            if not failed:
                return out
            if attempts <= 0:
                raise next(iter(failed.values()))
            log.info(
                "ListOffsets of %s: %s; asking again", sorted(failed), next(iter(failed.values()))
            )
            await asyncio.sleep(backoff_s)
            await self.refresh(sorted({tp.topic for tp in failed}), allow_auto_create=False)
            pending = {tp: query[tp] for tp in failed}

    async def _list_offsets_round(
        self,
        query: Mapping[TopicPartition, int],
        isolation_level: int,
        out: dict[TopicPartition, tuple[int, int]],
    ) -> dict[TopicPartition, KafkaError]:
        """One ListOffsets per leader into ``out``; the retriable failures by partition."""
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in query:
            node = await self.leader_for(tp.topic, tp.partition)
            by_leader.setdefault(node, []).append(tp)
        failed: dict[TopicPartition, KafkaError] = {}
        for node, tps in by_leader.items():
            conn = await self.connection(node)
            version = conn.version(LIST_OFFSETS)
            body = list_offsets_body({tp: query[tp] for tp in tps}, isolation_level)
            resp = await conn.request(LIST_OFFSETS, body, version)
            for tp, code, offset, timestamp in list_offsets_answers(resp, version):
                if not code:
                    out[tp] = (offset, timestamp)
                    continue
                err = error_for_code(code)(f"offsets of {tp.topic}-{tp.partition}")
                if not getattr(err, "retriable", False):
                    raise err
                failed[tp] = err
        return failed

    def drop(self, conn: AIOConnection, reason: str) -> None:
        """Forget a failed connection (closed if still open)."""
        conn.close(reason)
        for key, c in list(self._conns.items()):
            if c is conn:
                del self._conns[key]

    async def close(self) -> None:
        """Close every connection."""
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.wait_closed()
