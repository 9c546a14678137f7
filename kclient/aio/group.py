"""The broker-coordinated group for AIOConsumer: coordinator, membership, committed offsets.

The wire formats and the leader's assignment are the sans-IO pieces of
:mod:`kclient.consumer.group_protocol` (so AIOConsumer members share groups with kclient.Consumer,
the GroupConsumerConnector and Java consumers); this module only does their I/O on asyncio:
FindCoordinator, JoinGroup (with the member id the coordinator asks for), SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit and OffsetFetch, rediscovering the coordinator when it moves.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kclient.consumer.group_protocol import (
    REJOIN,
    decode_assignment,
    encode_subscription,
    leader_assignment,
    registration,
)
from kclient.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaTimeoutError,
    MemberIdRequiredError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_for_code,
)
from kclient.protocol.apis import (
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
)
from kclient.protocol.schema import Api
from kclient.structs import TopicPartition

from .cluster import AIOCluster
from .connection import AIOConnection

__all__ = ["AIOGroup", "REJOIN"]

log = logging.getLogger(__name__)
_Resp = TypeVar("_Resp")
_COORD = (NotCoordinatorError.errno, CoordinatorNotAvailableError.errno,
          CoordinatorLoadInProgressError.errno)
#: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS
_GENERATION = (22, 25, 27)


def _first_error(resp: Any) -> int:
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code:
                return int(p.error_code)
    return int(resp.get("error_code", 0) or 0)


class AIOGroup:
    """One member of a consumer group (see the module docstring)."""

    def __init__(self, cluster: AIOCluster, group: str, consumer_id: str, strategy: str,
                 session_timeout_ms: int, backoff_ms: int, retries: int,
                 exclude_internal: bool = True) -> None:
        self.cluster, self.group, self.consumer_id = cluster, group, consumer_id
        self.strategy, self.session_timeout = strategy, session_timeout_ms
        self.backoff, self.retries = backoff_ms / 1000.0, retries
        self.exclude_internal = exclude_internal
        self.generation_id, self.member_id = -1, ""
        self._conn: AIOConnection | None = None
        self._finding: asyncio.Lock | None = None

    async def coordinator(self) -> AIOConnection:
        """The coordinator's connection (found with FindCoordinator, then connected)."""
        if self._conn is not None and self._conn.connected:
            return self._conn
        if self._finding is None:
            self._finding = asyncio.Lock()
        async with self._finding:
            if self._conn is not None and self._conn.connected:
                return self._conn
            conn = await self.cluster.any_connection()
            resp = await conn.request(FIND_COORDINATOR, {"key": self.group, "key_type": 0})
            if resp.error_code:
                raise error_for_code(resp.error_code)(f"finding the coordinator of "
                                                      f"{self.group!r}")
            # the coordinator may hold a JoinGroup for a whole rebalance (up to the session
            # timeout): its connection waits longer than the others
            settings = self.cluster.settings
            settings = settings.replace(request_timeout_ms=max(
                settings.request_timeout_ms, 2 * self.session_timeout + 5000))
            self._conn = AIOConnection(resp.host, resp.port, settings, node_id=resp.node_id)
            await self._conn.connect()
            return self._conn

    async def request(self, api: Api[Any, _Resp], body: Mapping[str, Any],
                      check: Callable[[Any], int] = lambda r: int(r.error_code),
                      retries: int | None = None) -> _Resp:
        """Send to the coordinator; rediscover it and retry on coordinator/connection errors."""
        attempts = 1 + (self.retries if retries is None else retries)
        last: BaseException | None = None
        for attempt in range(attempts):
            try:
                conn = await self.coordinator()
                resp: _Resp = await conn.request(api, body)
                code = check(resp)
                if code in _COORD:
                    raise error_for_code(code)(f"group {self.group!r}")
                return resp
            except (KafkaConnectionError, KafkaTimeoutError, NotCoordinatorError,
                    CoordinatorNotAvailableError, CoordinatorLoadInProgressError) as exc:
                last = exc
                log.info("coordinator request %s failed (%s); retrying", api.name, exc)
                if self._conn is not None:
                    self._conn.close(f"failed: {exc}")
                    self._conn = None
                if attempt + 1 < attempts:
                    await asyncio.sleep(self.backoff)
        assert last is not None
        raise last

    # -- membership -----------------------------------------------------------------------------
    async def join(self, topics: list[str], attempts: int) -> list[TopicPartition] | None:
        """JoinGroup, the leader's assignment, SyncGroup: this member's partitions (None: the
        group kept moving for ``attempts`` rounds)."""
        meta = encode_subscription(topics, registration(self.consumer_id, "static",
                                                        {t: 1 for t in topics}))
        for _ in range(max(1, attempts)):
            resp = await self._join_once(meta)
            if resp is None:
                continue
            assignments: list[dict[str, Any]] = []
            if resp.leader == resp.member_id:
                await self.cluster.refresh(None, allow_auto_create=False)
                all_topics = sorted(t for t, i in self.cluster.topics.items() if not i.error_code)
                parts = {t: list(self.cluster.topics[t].partitions) for t in all_topics}
                assignments = leader_assignment(self.strategy, resp.members, all_topics, parts,
                                                self.exclude_internal)
            data = await self._sync(assignments)
            if data is None:
                continue
            mine, _ = decode_assignment(data)
            return sorted(TopicPartition(t, p) for t, ps in mine.items() for p in ps)
        return None

    async def _join_once(self, meta: bytes) -> Any:
        for _ in range(3):
            body = {"group_id": self.group, "session_timeout_ms": self.session_timeout,
                    "rebalance_timeout_ms": self.session_timeout, "member_id": self.member_id,
                    "group_instance_id": None, "protocol_type": "consumer",
                    "protocols": [{"name": self.strategy, "metadata": meta}]}
            resp = await self.request(JOIN_GROUP, body)
            if resp.error_code == MemberIdRequiredError.errno:
                self.member_id = resp.member_id
                continue
            if resp.error_code == UnknownMemberIdError.errno:
                self.member_id = ""
                continue
            if resp.error_code == RebalanceInProgressError.errno:
                continue
            if resp.error_code:
                raise error_for_code(resp.error_code)(f"JoinGroup of {self.group!r}")
            self.generation_id, self.member_id = resp.generation_id, resp.member_id
            return resp
        return None

    async def _sync(self, assignments: list[dict[str, Any]]) -> bytes | None:
        body = {"group_id": self.group, "generation_id": self.generation_id,
                "member_id": self.member_id, "protocol_type": "consumer",
                "protocol_name": self.strategy, "assignments": assignments}
        sync = await self.request(SYNC_GROUP, body)
        if sync.error_code in REJOIN:
            if sync.error_code == UnknownMemberIdError.errno:
                self.member_id = ""
            return None
        if sync.error_code:
            raise error_for_code(sync.error_code)(f"SyncGroup of {self.group!r}")
        return bytes(sync.assignment)

    async def heartbeat(self) -> int:
        """One Heartbeat; its error code (UNKNOWN_MEMBER_ID also forgets the member id)."""
        body = {"group_id": self.group, "generation_id": self.generation_id,
                "member_id": self.member_id, "group_instance_id": None}
        resp = await self.request(HEARTBEAT, body, retries=0)
        code = int(resp.error_code)
        if code == UnknownMemberIdError.errno:
            self.member_id = ""
        return code

    async def leave(self) -> None:
        """LeaveGroup (no retries), then forget the member id and generation."""
        if not self.member_id:
            return
        body = {"group_id": self.group, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None}]}
        try:
            await self.request(LEAVE_GROUP, body, retries=0)
        finally:
            self.member_id, self.generation_id = "", -1

    # -- offsets --------------------------------------------------------------------------------
    async def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """OffsetFetch: the committed offset of each partition (-1: none)."""
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if not by_topic:
            return {}
        body = {"group_id": self.group, "require_stable": False,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]}
        resp = await self.request(OFFSET_FETCH, body, check=_first_error)
        out = {TopicPartition(t, p): -1 for t, ps in by_topic.items() for p in ps}
        for topic in resp.topics:
            for part in topic.partitions:
                if part.error_code and part.error_code != 3:     # 3: unknown -> none
                    raise error_for_code(part.error_code)(
                        f"fetching the offset of {topic.name}/{part.partition_index}")
                out[TopicPartition(topic.name, part.partition_index)] = part.committed_offset
        return out

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """OffsetCommit with this member's generation; retriable errors are retried, a
        generation error (the group moved on) is raised at once."""
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, off in offsets.items():
            if off >= 0:
                by_topic.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "committed_offset": off,
                     "committed_metadata": ""})
        if not by_topic:
            return
        for attempt in range(1 + self.retries):
            body = {"group_id": self.group, "generation_id_or_member_epoch": self.generation_id,
                    "member_id": self.member_id, "retention_time_ms": -1,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
            resp = await self.request(OFFSET_COMMIT, body, check=_first_error)
            code = _first_error(resp)
            if code == 0:
                return
            err = error_for_code(code)(f"committing offsets of group {self.group!r}")
            if code in _GENERATION or not getattr(err, "retriable", False) \
                    or attempt == self.retries:
                raise err
            await asyncio.sleep(self.backoff)

    def close(self) -> None:
        """Close the coordinator connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
