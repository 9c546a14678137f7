"""The view of the cluster several in-process brokers share (live brokers, partition leaders).

:class:`ClusterView` is the metadata every broker answers from: the live brokers and, per topic,
which broker leads each partition.  A lone ClusterMember has a view of its own; a MiniCluster
(minicluster.py) shares one view between N brokers and spreads leadership round-robin.  There is
no replication: a partition's data lives with its leader.  The view knows its brokers only
through the small :class:`ClusterMember` protocol, so it imports no server code.
"""

from __future__ import annotations

import gc
import logging
import re
import threading
import zlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kclient.protocol.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    KafkaStorageError,
    LeaderNotAvailableError,
    PolicyViolationError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

from .config import TOPIC_LEVEL_KEYS, closest_key
from .log import LogConfig, LogManager
from .topic_ids import ZERO_ID, new_topic_id, read_topic_id, write_topic_id

if TYPE_CHECKING:
    from .authorizer import AclStore
    from .zk import ZkRegistry

__all__ = [
    "EXCESSIVE_ADDITIONAL",
    "EXCESSIVE_PARTITIONS",
    "MAX_PARTITIONS_PER_REQUEST",
    "ClusterMember",
    "ClusterView",
    "validate_topic_name",
]

log = logging.getLogger("kclient.broker.cluster")

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME = 249
#: Kafka's controller limit (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH): partitions one
#: request may create; more is POLICY_VIOLATION with Kafka's message.
MAX_PARTITIONS_PER_REQUEST = 10000
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."
#: The same limit on CreatePartitions, over the partitions a request adds (Kafka 4.4.0's message).
EXCESSIVE_ADDITIONAL = "Excessively large number of additional partitions per request."


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicError unless ``name`` is a legal Kafka topic name."""
    if not name or name in (".", "..") or len(name) > MAX_TOPIC_NAME or not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f"illegal topic name {name!r}: use 1-{MAX_TOPIC_NAME} of "
            "[a-zA-Z0-9._-], not '.' or '..'"
        )


class ClusterMember(Protocol):
    """What the view needs of a broker: its id, address, logs and ZooKeeper session."""

    node_id: int
    log_manager: LogManager
    zk: ZkRegistry | None

    @property
    def advertised_host(self) -> str:
        """The host clients are told to connect to."""
        ...

    @property
    def advertised_port(self) -> int:
        """The port clients are told to connect to."""
        ...

    @property
    def rack(self) -> str | None:
        """``broker.rack``, or None."""
        ...

    def endpoint(self, listener: str = "") -> tuple[str, int]:
        """(host, port) the clients of listener ``listener`` are told to connect to."""
        ...


class ClusterView:
    """Live brokers and partition leadership, shared by the brokers of one cluster."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.live: dict[int, ClusterMember] = {}
        self.leaders: dict[str, dict[int, int]] = {}
        self.epochs: dict[tuple[str, int], int] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.topic_ids: dict[str, bytes] = {}
        self.deleted: set[str] = set()  # deleted while some broker was down
        self.acls: AclStore | None = None  # the cluster's ACLs, opened by the first broker

    # ------------------------------------------------------------------ brokers
    def add_broker(self, broker: ClusterMember) -> None:
        """A broker came up: it serves again and leads the partitions it holds on disk."""
        with self.lock:
            self.live[broker.node_id] = broker
            for topic, partitions in broker.log_manager.topics().items():
                if topic in self.deleted and topic not in self.leaders:
                    broker.log_manager.delete_topic(topic)
                    continue
                leaders = self.leaders.setdefault(topic, {})
                for p in partitions:
                    if leaders.get(p) is None:
                        leaders[p] = broker.node_id
                self._stamp(topic, broker.log_manager, partitions)

    def remove_broker(self, node_id: int) -> None:
        """A broker went down; its partitions stay assigned to it but have no live leader."""
        with self.lock:
            self.live.pop(node_id, None)

    def live_brokers(self) -> list[ClusterMember]:
        """The live brokers ordered by id."""
        with self.lock:
            return [self.live[i] for i in sorted(self.live)]

    def controller_id(self) -> int:
        """The lowest live broker id (-1 when none is up)."""
        with self.lock:
            return min(self.live) if self.live else -1

    def coordinator_for(self, group_id: str, listener: str = "") -> tuple[int, str, int]:
        """The broker that coordinates ``group_id``: a stable hash over the sorted live ids;
        its address as the clients of ``listener`` see it."""
        brokers = self.live_brokers()
        if not brokers:
            raise LeaderNotAvailableError("no live broker")
        b = brokers[zlib.crc32(group_id.encode("utf-8")) % len(brokers)]
        return (b.node_id, *b.endpoint(listener))

    # ------------------------------------------------------------------ topics
    def topic_names(self) -> list[str]:
        """Every topic, sorted."""
        with self.lock:
            return sorted(self.leaders)

    def partitions(self, topic: str) -> dict[int, int] | None:
        """partition -> assigned leader id, or None for an unknown topic."""
        with self.lock:
            leaders = self.leaders.get(topic)
            return dict(leaders) if leaders is not None else None

    def leader(self, topic: str, partition: int) -> int | None:
        """The live leader of a partition; -1 if its broker is down; None if unknown."""
        with self.lock:
            leader = self.leaders.get(topic, {}).get(partition)
            if leader is None:
                return None
            return leader if leader in self.live else -1

    def leader_epoch(self, topic: str, partition: int) -> int:
        """How often leadership of this partition has moved (0 at creation)."""
        return self.epochs.get((topic, partition), 0)

    def topic_id(self, topic: str) -> bytes:
        """A topic's id (the zero id for an unknown topic)."""
        return self.topic_ids.get(topic, ZERO_ID)

    def topic_metadata(self) -> dict[str, tuple[bytes, int]]:
        """Every topic's (id, partition count): what consumer groups assign from."""
        with self.lock:
            return {
                name: (self.topic_id(name), len(leaders)) for name, leaders in self.leaders.items()
            }

    def topic_by_id(self, topic_id: bytes) -> str | None:
        """The name of the topic with id ``topic_id``, or None."""
        with self.lock:
            return next((name for name, tid in self.topic_ids.items() if tid == topic_id), None)

    def _stamp(self, topic: str, logs: LogManager, partitions: Any) -> None:
        """Give ``topic`` its id (the one on disk, else a new one) and write it into the
        directories of ``partitions`` on ``logs`` that lack it."""
        dirs = [each.directory for p in partitions if (each := logs.get_log(topic, p)) is not None]
        if topic not in self.topic_ids:
            found = next((tid for d in dirs if (tid := read_topic_id(d)) is not None), None)
            self.topic_ids[topic] = found or new_topic_id()
        topic_id = self.topic_ids[topic]
        for directory in dirs:
            if read_topic_id(directory) != topic_id:
                write_topic_id(directory, topic_id)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        config: Mapping[str, Any] | None = None,
        *,
        replication_factor: int = -1,
        assignment: Mapping[str, Any] | None = None,
        validate_only: bool = False,
    ) -> dict[int, int]:
        """Create a topic on the leaders of its partitions; returns partition -> leader id."""
        config = {str(k): str(v) for k, v in (config or {}).items()}
        with self.lock:
            validate_topic_name(name)
            if name in self.leaders:
                raise TopicAlreadyExistsError(f"topic {name!r} already exists")
            leaders = self._assign(partitions, replication_factor, assignment)
            self._validate_config(config)
            if validate_only:
                return leaders
            self._create_logs(name, leaders, config)
            self.topic_ids[name] = new_topic_id()
            for leader in set(leaders.values()):
                self._stamp(name, self.live[leader].log_manager, leaders)
            self.leaders[name] = leaders
            self.configs[name] = config
            self.deleted.discard(name)
            for p in leaders:
                self.epochs[(name, p)] = 0
        self._zk_call(f"register {name}", lambda zk: zk.register_topic(name, leaders, config))
        return leaders

    def _create_logs(self, name: str, leaders: dict[int, int], config: dict[str, str]) -> None:
        """Create every partition's log, all or nothing: when one fails (out of file
        descriptors, disk full) the ones created are deleted again and KAFKA_STORAGE_ERROR
        raised, so no half-created topic is left to break a restart."""
        failure = None
        try:
            for p, leader in leaders.items():
                self.live[leader].log_manager.create_log(name, p, config)
        except (OSError, ValueError) as exc:
            failure = f"cannot create partition {p} of {name!r} on broker {leader}: {exc}"
        if failure is None:
            return
        gc.collect()  # the failed Log's frames may still hold descriptors the rollback needs
        for broker in {self.live[leader] for leader in leaders.values()}:
            try:
                broker.log_manager.delete_topic(name)
            except OSError:
                log.exception("rolling back topic %r on broker %d failed", name, broker.node_id)
        log.error("%s; topic creation rolled back", failure)
        raise KafkaStorageError(f"{failure}; nothing of the topic was kept")

    def _assign(
        self, partitions: int, replication_factor: int, assignment: Mapping[str, Any] | None
    ) -> dict[int, int]:
        """Leaders: the manual assignment's first replica, else round-robin over live ids."""
        ids = sorted(self.live)
        if not ids:
            raise LeaderNotAvailableError("no live broker to lead the partitions")
        if replication_factor not in (-1, 1) and (
            replication_factor < 1 or replication_factor > len(ids)
        ):
            raise InvalidReplicationFactorError(
                f"replication factor {replication_factor} is not in 1..{len(ids)} (live brokers)"
            )
        if assignment:
            return self._manual(assignment, ids)
        if partitions < 1:
            raise InvalidPartitionsError(
                f"number of partitions must be at least 1, not {partitions}"
            )
        if partitions > MAX_PARTITIONS_PER_REQUEST:
            raise PolicyViolationError(EXCESSIVE_PARTITIONS)
        return {p: ids[p % len(ids)] for p in range(partitions)}

    @staticmethod
    def _manual(assignment: Mapping[Any, Any], ids: list[int]) -> dict[int, int]:
        """Validate a partition -> [broker ids] assignment; leader = first replica."""
        if len(assignment) > MAX_PARTITIONS_PER_REQUEST:
            raise PolicyViolationError(EXCESSIVE_PARTITIONS)
        indexes = sorted(int(p) for p in assignment)
        if indexes != list(range(len(indexes))):
            raise InvalidReplicaAssignmentError("partitions must be numbered 0..N-1")
        leaders = {}
        for p in indexes:
            replicas = list(assignment[p] if p in assignment else assignment[str(p)])
            if not replicas or any(r not in ids for r in replicas):
                raise InvalidReplicaAssignmentError(
                    f"partition {p}: replicas {replicas} are not live brokers {ids}"
                )
            leaders[p] = replicas[0]
        return leaders

    def _validate_config(self, config: dict[str, str]) -> None:
        """Raise InvalidConfigurationError if the storage layer refuses the topic config."""
        for key in config:
            if key not in TOPIC_LEVEL_KEYS:
                hint = closest_key(key, TOPIC_LEVEL_KEYS)
                raise InvalidConfigurationError(
                    f"unknown topic config {key!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                )
        try:
            LogConfig.from_properties(config, None)
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidConfigurationError(f"invalid topic config: {exc}") from None

    def create_partitions(
        self,
        name: str,
        count: int,
        assignment: list[list[int]] | None = None,
        validate_only: bool = False,
    ) -> dict[int, int]:
        """Raise a topic's partition count to ``count`` (CreatePartitions); ``assignment`` gives
        the replicas of each new partition.  Returns the new partitions' leaders."""
        with self.lock:
            leaders = self.leaders.get(name)
            if leaders is None:
                raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
            current = len(leaders)
            if count < current:
                raise InvalidPartitionsError(
                    f"The topic {name} currently has {current} "
                    f"partition(s); {count} would not be an increase."
                )
            if count == current:
                raise InvalidPartitionsError(f"Topic already has {current} partition(s).")
            if count - current > MAX_PARTITIONS_PER_REQUEST:
                raise PolicyViolationError(EXCESSIVE_ADDITIONAL)
            ids = sorted(self.live)
            if not ids:
                raise LeaderNotAvailableError("no live broker to lead the partitions")
            if assignment is not None:
                if len(assignment) != count - current:
                    raise InvalidReplicaAssignmentError(
                        f"Increasing the number of partitions by {count - current} but "
                        f"{len(assignment)} assignments provided."
                    )
                new = {}
                for i, replicas in enumerate(assignment):
                    if not replicas or any(r not in ids for r in replicas):
                        raise InvalidReplicaAssignmentError(
                            f"partition {current + i}: replicas {replicas} are not live "
                            f"brokers {ids}"
                        )
                    new[current + i] = replicas[0]
            else:
                new = {p: ids[p % len(ids)] for p in range(current, count)}
            if validate_only:
                return new
            config = self.configs.get(name, {})
            for p, leader in new.items():
                self.live[leader].log_manager.create_log(name, p, config)
                self._stamp(name, self.live[leader].log_manager, [p])
                self.epochs[(name, p)] = 0
            leaders.update(new)
            everything = dict(leaders)
            epochs = {p: self.epochs.get((name, p), 0) for p in everything}
        self._zk_call(
            f"partitions of {name}", lambda zk: zk.register_topic(name, everything, config, epochs)
        )
        return new

    def alter_config(
        self, name: str, config: Mapping[str, str], validate_only: bool = False
    ) -> None:
        """Replace a topic's config overrides (AlterConfigs / IncrementalAlterConfigs)."""
        config = {str(k): str(v) for k, v in config.items()}
        with self.lock:
            leaders = self.leaders.get(name)
            if leaders is None:
                raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
            self._validate_config(config)
            if validate_only:
                return
            self.configs[name] = config
            for broker in self.live.values():
                if name in broker.log_manager.topics():
                    broker.log_manager.set_topic_overrides(name, config)
            everything = dict(leaders)
            epochs = {p: self.epochs.get((name, p), 0) for p in everything}
        self._zk_call(
            f"config of {name}", lambda zk: zk.register_topic(name, everything, config, epochs)
        )

    def delete_topic(self, name: str) -> None:
        """Delete a topic's logs on every live broker and forget it."""
        with self.lock:
            if name not in self.leaders:
                raise UnknownTopicOrPartitionError(f"unknown topic {name!r}")
            del self.leaders[name]
            self.configs.pop(name, None)
            self.topic_ids.pop(name, None)
            self.deleted.add(name)
            for key in [k for k in self.epochs if k[0] == name]:
                del self.epochs[key]
            for broker in self.live.values():
                if name in broker.log_manager.topics():
                    broker.log_manager.delete_topic(name)
        self._zk_call(f"delete {name}", lambda zk: zk.delete_topic(name))

    def set_leader(self, topic: str, partition: int, node_id: int) -> int:
        """Record a new leader; returns the new leader epoch."""
        with self.lock:
            self.leaders[topic][partition] = node_id
            epoch = self.epochs.get((topic, partition), 0) + 1
            self.epochs[(topic, partition)] = epoch
        self._zk_call(
            f"leader of {topic}-{partition}",
            lambda zk: zk.set_partition_state(topic, partition, node_id, epoch),
        )
        return epoch

    def _zk_call(self, what: str, update: Callable[[ZkRegistry], None]) -> None:
        """Mirror a change into ZooKeeper through the lowest live broker that has a session."""
        for broker in self.live_brokers():
            if broker.zk is not None:
                try:
                    update(broker.zk)
                except Exception:
                    log.exception("ZooKeeper update (%s) failed", what)
                return
