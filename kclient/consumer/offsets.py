"""Where a group's consumed offsets live: ZooKeeper, Kafka (the group coordinator), or both.

* ``ZkOffsetStore``: ``/consumers/[group]/offsets/[topic]/[partition]``, persistent, the offset as
  a decimal string; only offsets that changed since the last commit are written (Kafka's
  ``checkpointedZkOffsets``).
* ``KafkaOffsetStore``: OffsetCommit / OffsetFetch (v1+) at the coordinator found with
  FindCoordinator; retried ``offsets.commit.max.retries`` times, rediscovering the coordinator
  when it moved.
* ``DualOffsetStore`` (``dual.commit.enabled``): commits go to Kafka and then to ZooKeeper, and a
  fetch takes the larger of the two, which is how Kafka migrated groups from ZooKeeper to Kafka.

Every store maps ``(topic, partition)`` to the next offset to consume; -1 means none committed.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from kazoo.client import KazooClient

from kclient.cluster import Cluster
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    error_for_code,
)
from kclient.protocol.apis import FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH
from kclient.protocol.schema import Api
from kclient.zkutils import GroupDirs, read_data, update_persistent, zk_errors

if TYPE_CHECKING:
    from kclient.protocol.messages import OffsetCommitResponse, OffsetFetchResponse

__all__ = ["OffsetStore", "ZkOffsetStore", "KafkaOffsetStore", "DualOffsetStore", "Coordinator",
           "make_offset_store"]

log = logging.getLogger(__name__)

TP = tuple[str, int]  # (topic, partition)
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")
#: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS
_GENERATION_ERRORS = (22, 25, 27)
_COORD_ERRORS = (NotCoordinatorError.errno, CoordinatorNotAvailableError.errno,
                 CoordinatorLoadInProgressError.errno)


class OffsetStore:
    """Interface: ``fetch([(t, p)]) -> {(t, p): offset}`` and ``commit({(t, p): offset})``."""

    def fetch(self, tps: Iterable[TP]) -> dict[TP, int]:
        raise NotImplementedError

    def commit(self, offsets: Mapping[TP, int]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class ZkOffsetStore(OffsetStore):
    """Offsets in ZooKeeper, Kafka 0.8's layout.  A lost connection or an expired session
    raises :class:`ZooKeeperError` naming ``connect`` (kazoo's error chained), not kazoo's own."""

    def __init__(self, zk: KazooClient, group: str, connect: str = "") -> None:
        self.zk, self.dirs, self.group = zk, GroupDirs(group), group
        self.connect = connect or str(getattr(zk, "hosts", "")) or "ZooKeeper"
        self._checkpointed: dict[TP, int] = {}

    def fetch(self, tps: Iterable[TP]) -> dict[TP, int]:
        out: dict[TP, int] = {}
        with zk_errors(self.connect, f"fetching offsets of group {self.group}"):
            for t, p in tps:
                data = read_data(self.zk, self.dirs.offset(t, p))
                out[(t, p)] = int(data) if data and data.strip().lstrip("-").isdigit() else -1
                if out[(t, p)] >= 0:
                    self._checkpointed[(t, p)] = out[(t, p)]
        return out

    def commit(self, offsets: Mapping[TP, int]) -> None:
        with zk_errors(self.connect, f"committing offsets of group {self.group}"):
            for (t, p), off in offsets.items():
                if off < 0 or self._checkpointed.get((t, p)) == off:
                    continue
                update_persistent(self.zk, self.dirs.offset(t, p), str(off))
                self._checkpointed[(t, p)] = off


class Coordinator:
    """The group coordinator broker: found with FindCoordinator, rediscovered when it moves.

    ``key_type`` 1 finds a transactional id's transaction coordinator instead (``group`` is
    then the transactional id)."""

    def __init__(self, cluster: Cluster, group: str, backoff_ms: int = 1000,
                 retries: int = 5, settings: ConnectionSettings | None = None,
                 key_type: int = 0) -> None:
        self.cluster, self.group, self.key_type = cluster, group, key_type
        self.backoff = backoff_ms / 1000.0
        self.retries = retries
        self.settings = settings or cluster.settings
        self._conn: BrokerConnection | None = None
        self.node_id: int | None = None
        self._lock = threading.RLock()
        #: bumped by interrupt(): requests begun before it fail at once instead of retrying
        self._epoch = 0

    def connection(self) -> BrokerConnection:
        with self._lock:
            if self._conn is not None and self._conn.connected:
                return self._conn
            resp = self.cluster.any_connection().request(
                FIND_COORDINATOR, {"key": self.group, "key_type": self.key_type})
            if resp.error_code:
                raise error_for_code(resp.error_code)(f"finding the coordinator of {self.group!r}")
            conn = BrokerConnection(resp.host, resp.port, self.settings, node_id=resp.node_id)
            conn.connect()
            self._conn, self.node_id = conn, resp.node_id
            return conn

    def reset(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._conn = None

    def request(self, api: Api[_Req, _Resp], body: _Req | Mapping[str, Any],
                check: Callable[[_Resp], int] | None = None, retries: int | None = None
                ) -> _Resp:
        """Send to the coordinator; rediscover and retry on coordinator and connection errors.

        ``check(resp)`` returns an error code (0 for success) found in the response.
        """
        attempts = 1 + (self.retries if retries is None else retries)
        last: BaseException | None = None
        epoch = self._epoch
        for attempt in range(attempts):
            try:
                resp = self.connection().request(api, body)
                code = check(resp) if check else 0
                if code in _COORD_ERRORS:
                    raise error_for_code(code)(f"group {self.group!r}")
                return resp
            except (KafkaConnectionError, KafkaTimeoutError, NotCoordinatorError,
                    CoordinatorNotAvailableError, CoordinatorLoadInProgressError) as exc:
                if self._epoch != epoch:          # interrupted (shutdown): do not retry
                    raise
                last = exc
                log.info("coordinator request %s failed (%s); retrying", api.name, exc)
                self.reset()
                if attempt + 1 < attempts:
                    time.sleep(self.backoff)
        assert last is not None
        raise last

    def interrupt(self, reason: str = "interrupted by shutdown") -> None:
        """Fail the requests waiting on the coordinator now (a JoinGroup the coordinator holds
        for a whole rebalance, a heartbeat), without retries; later requests reconnect.

        Does not take the lock a waiting request may hold: closing the socket wakes it."""
        self._epoch += 1
        conn = self._conn
        if conn is not None:
            conn.close(reason)

    def close(self) -> None:
        self.reset()


def _first_error(resp: OffsetFetchResponse | OffsetCommitResponse) -> int:
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code:
                return p.error_code
    code: int = resp.get("error_code", 0) or 0         # OffsetFetch v2+ only
    return code


class KafkaOffsetStore(OffsetStore):
    """Offsets committed to the group coordinator (OffsetCommit / OffsetFetch v1+)."""

    def __init__(self, coordinator: Coordinator, group: str,
                 generation: Callable[[], tuple[int, str]] = lambda: (-1, ""),
                 retries: int = 5, backoff_ms: int = 1000) -> None:
        self.coordinator, self.group = coordinator, group
        self.generation = generation
        self.retries, self.backoff = retries, backoff_ms / 1000.0
        #: a static member's group.instance.id, sent with commits (OffsetCommit v7+)
        self.group_instance_id: str | None = None

    def fetch(self, tps: Iterable[TP]) -> dict[TP, int]:
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        if not by_topic:
            return {}
        body = {"group_id": self.group, "require_stable": False,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]}
        resp = self.coordinator.request(OFFSET_FETCH, body, check=_first_error)
        out = {(t, p): -1 for t, ps in by_topic.items() for p in ps}
        for topic in resp.topics:
            for part in topic.partitions:
                if part.error_code and part.error_code not in (3,):   # 3: unknown -> none
                    raise error_for_code(part.error_code)(f"fetching offset of {topic.name}/"
                                                          f"{part.partition_index}")
                out[(topic.name, part.partition_index)] = part.committed_offset
        return out

    def commit(self, offsets: Mapping[TP, int]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), off in offsets.items():
            if off >= 0:
                by_topic.setdefault(t, []).append(
                    {"partition_index": p, "committed_offset": off, "committed_metadata": ""})
        if not by_topic:
            return
        for attempt in range(1 + self.retries):
            generation, member = self.generation()
            body = {"group_id": self.group, "generation_id_or_member_epoch": generation,
                    "member_id": member, "retention_time_ms": -1,
                    "group_instance_id": self.group_instance_id if member else None,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
            resp = self.coordinator.request(OFFSET_COMMIT, body, check=_first_error)
            code = _first_error(resp)
            if code == 0:
                return
            err = error_for_code(code)(f"committing offsets of group {self.group!r}")
            if code in _GENERATION_ERRORS:
                raise err                        # the group moved on: rejoin, do not retry
            if not getattr(err, "retriable", False) or attempt == self.retries:
                raise err
            time.sleep(self.backoff)


class DualOffsetStore(OffsetStore):
    """Kafka first, then ZooKeeper; fetch returns the larger offset of the two."""

    def __init__(self, kafka: KafkaOffsetStore, zk: ZkOffsetStore) -> None:
        self.kafka, self.zk = kafka, zk

    def fetch(self, tps: Iterable[TP]) -> dict[TP, int]:
        tps = list(tps)
        k, z = self.kafka.fetch(tps), self.zk.fetch(tps)
        return {tp: max(k.get(tp, -1), z.get(tp, -1)) for tp in tps}

    def commit(self, offsets: Mapping[TP, int]) -> None:
        self.kafka.commit(offsets)
        self.zk.commit(offsets)


def make_offset_store(config: Mapping[str, Any], group: str, zk: KazooClient | None = None,
                      cluster: Cluster | None = None,
                      generation: Callable[[], tuple[int, str]] = lambda: (-1, ""),
                      settings: ConnectionSettings | None = None) -> OffsetStore:
    """The store ``offsets.storage`` / ``dual.commit.enabled`` ask for."""
    if config["offsets.storage"] == "zookeeper":
        if zk is None:
            raise KafkaError("offsets.storage=zookeeper needs zookeeper.connect")
        return ZkOffsetStore(zk, group, config.get("zookeeper.connect") or "")
    if cluster is None:
        raise KafkaError("offsets.storage=kafka needs brokers")
    coord = Coordinator(cluster, group, config["offsets.channel.backoff.ms"],
                        config["offsets.commit.max.retries"], settings)
    kafka = KafkaOffsetStore(coord, group, generation, config["offsets.commit.max.retries"],
                             config["offsets.channel.backoff.ms"])
    if config["dual.commit.enabled"] and zk is not None:
        return DualOffsetStore(kafka, ZkOffsetStore(zk, group,
                                                    config.get("zookeeper.connect") or ""))
    return kafka
