"""AdminClient's topic, config, offset-lookup, record-deletion and cluster operations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kclient.errors import UnknownTopicOrPartitionError, UnsupportedVersionError
from kclient.protocol.apis import (
    ALTER_CONFIGS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_OFFSETS,
    METADATA,
)

from .base import AdminBase, by_topic, check, offsets_map, topic_id_text
from .types import (
    AlterConfigOp,
    ClusterBroker,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    CreatedTopic,
    ListOffsetsResult,
    NewPartitions,
    NewTopic,
    PartitionDescription,
    TopicDescription,
    TopicListing,
    TopicPartition,
)

__all__ = ["TopicAdmin", "CONFIG_SOURCES"]

#: DescribeConfigs config_source codes -> Kafka's ConfigSource names.
CONFIG_SOURCES = {
    -1: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}


def _topic_body(t: NewTopic) -> dict[str, Any]:
    """One topic of a CreateTopics request."""
    assignment = [
        {"partition_index": p, "broker_ids": list(ids)}
        for p, ids in sorted((t.replica_assignment or {}).items())
    ]
    return {
        "name": t.name,
        "num_partitions": -1 if assignment else t.num_partitions,
        "replication_factor": -1 if assignment else t.replication_factor,
        "assignments": assignment,
        "configs": [{"name": k, "value": str(v)} for k, v in t.configs.items()],
    }


def _entry(c: Any) -> ConfigEntry:
    """A ConfigEntry from one DescribeConfigs config."""
    source = c.config_source
    if source == -1:  # v0: only is_default
        source = 5 if c.get("is_default") else -1
    synonyms = tuple(
        (s.name, s.value, CONFIG_SOURCES.get(s.source, "UNKNOWN"))
        for s in (c.get("synonyms") or ())
    )
    return ConfigEntry(
        c.name,
        c.value,
        CONFIG_SOURCES.get(source, "UNKNOWN"),
        source == 5,
        bool(c.read_only),
        bool(c.is_sensitive),
        synonyms,
    )


class TopicAdmin(AdminBase):
    """Topics, partitions, configs, offsets by time, record deletion and the cluster."""

    # -- topics ------------------------------------------------------------------------------
    def create_topics(
        self, new_topics: Sequence[NewTopic], validate_only: bool = False, timeout_ms: int = 30000
    ) -> list[CreatedTopic]:
        """CreateTopics; raises the first topic's error (TopicAlreadyExistsError,
        InvalidPartitionsError, InvalidReplicationFactorError, InvalidConfigurationError ...)
        after the broker has handled them all."""
        body = {
            "topics": [_topic_body(t) for t in new_topics],
            "timeout_ms": timeout_ms,
            "validate_only": validate_only,
        }
        resp = self._controller().request(CREATE_TOPICS, body)
        asked = {t.name: t for t in new_topics}
        out = []
        for r in resp.topics:
            check(r.error_code, f"creating topic {r.name!r}", r.get("error_message"))
            t = asked.get(r.name)
            partitions = r.get("num_partitions", -1)
            if partitions == -1 and t is not None:
                partitions = len(t.replica_assignment or {}) or t.num_partitions
            factor = r.get("replication_factor", -1)
            if factor == -1 and t is not None:
                factor = t.replication_factor
            out.append(CreatedTopic(r.name, partitions, factor))
        return out

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
    ) -> CreatedTopic:
        """Create one topic (see :meth:`create_topics`)."""
        topic = NewTopic(name, num_partitions, replication_factor, None, dict(configs or {}))
        return self.create_topics([topic], validate_only)[0]

    def delete_topics(self, names: Iterable[str], timeout_ms: int = 30000) -> None:
        """DeleteTopics; raises the first topic's error (UnknownTopicOrPartitionError ...)."""
        resp = self._controller().request(
            DELETE_TOPICS, {"topic_names": list(names), "timeout_ms": timeout_ms}
        )
        for r in resp.responses:
            check(r.error_code, f"deleting topic {r.name!r}", r.get("error_message"))

    def list_topics(self, include_internal: bool = False) -> list[TopicListing]:
        """Every topic, sorted by name (internal ones such as __consumer_offsets on request)."""
        resp = self.cluster.refresh(None, allow_auto_create=False)
        out = [
            TopicListing(t.name, topic_id_text(t.get("topic_id")), bool(t.is_internal))
            for t in resp.topics
            if t.name is not None and not t.error_code
        ]
        return sorted(
            (t for t in out if include_internal or not t.is_internal), key=lambda t: t.name
        )

    def describe_topics(self, names: Iterable[str]) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic; UnknownTopicOrPartitionError for
        a topic that does not exist."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        resp = self.cluster.refresh(wanted, allow_auto_create=False)
        found = {t.name: t for t in resp.topics}
        out = {}
        for name in wanted:
            t = found.get(name)
            if t is None:
                raise UnknownTopicOrPartitionError(f"topic {name!r}")
            check(t.error_code, f"topic {name!r}")
            parts = tuple(
                PartitionDescription(
                    p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes)
                )
                for p in sorted(t.partitions, key=lambda p: p.partition_index)
            )
            out[name] = TopicDescription(
                name, topic_id_text(t.get("topic_id")), bool(t.is_internal), parts
            )
        return out

    def create_partitions(
        self,
        new_partitions: Mapping[str, NewPartitions | int],
        validate_only: bool = False,
        timeout_ms: int = 30000,
    ) -> None:
        """CreatePartitions: raise each topic's partition count (InvalidPartitionsError when it
        is not above the current one)."""
        topics = []
        for name, spec in new_partitions.items():
            spec = spec if isinstance(spec, NewPartitions) else NewPartitions(int(spec))
            assignments = (
                None
                if spec.new_assignments is None
                else [{"broker_ids": list(ids)} for ids in spec.new_assignments]
            )
            topics.append({"name": name, "count": spec.total_count, "assignments": assignments})
        resp = self._controller().request(
            CREATE_PARTITIONS,
            {"topics": topics, "timeout_ms": timeout_ms, "validate_only": validate_only},
        )
        for r in resp.results:
            check(r.error_code, f"adding partitions to {r.name!r}", r.error_message)

    # -- configs -----------------------------------------------------------------------------
    def _config_conn(self, resource: ConfigResource) -> Any:
        """Broker resources go to that broker (Kafka requires it); the rest to any broker."""
        if resource.type == ConfigResourceType.BROKER and resource.name:
            return self._broker(int(resource.name))
        return self._any()

    def describe_configs(
        self, resources: Iterable[ConfigResource], include_synonyms: bool = False
    ) -> dict[ConfigResource, list[ConfigEntry]]:
        """DescribeConfigs of topics and brokers; UnknownTopicOrPartitionError for an unknown
        topic."""
        out: dict[ConfigResource, list[ConfigEntry]] = {}
        for res in resources:
            body = {
                "resources": [
                    {
                        "resource_type": int(res.type),
                        "resource_name": res.name,
                        "configuration_keys": None,
                    }
                ],
                "include_synonyms": include_synonyms,
                "include_documentation": False,
            }
            resp = self._config_conn(res).request(DESCRIBE_CONFIGS, body)
            for r in resp.results:
                check(
                    r.error_code,
                    f"configs of {res.type.name.lower()} {res.name!r}",
                    r.error_message,
                )
                out[res] = sorted((_entry(c) for c in r.configs), key=lambda e: e.name)
        return out

    def incremental_alter_configs(
        self, changes: Mapping[ConfigResource, Sequence[AlterConfigOp]], validate_only: bool = False
    ) -> None:
        """IncrementalAlterConfigs: SET, DELETE, APPEND or SUBTRACT single keys
        (InvalidConfigurationError for an unknown key or bad value)."""
        for res, ops in changes.items():
            body = {
                "resources": [
                    {
                        "resource_type": int(res.type),
                        "resource_name": res.name,
                        "configs": [
                            {"name": o.name, "config_operation": int(o.op), "value": o.value}
                            for o in ops
                        ],
                    }
                ],
                "validate_only": validate_only,
            }
            resp = self._config_conn(res).request(INCREMENTAL_ALTER_CONFIGS, body)
            for r in resp.responses:
                check(
                    r.error_code,
                    f"altering configs of {res.type.name.lower()} {res.name!r}",
                    r.error_message,
                )

    def alter_configs(
        self, configs: Mapping[ConfigResource, Mapping[str, str]], validate_only: bool = False
    ) -> None:
        """AlterConfigs (deprecated by Kafka): replace a resource's whole set of overrides."""
        for res, values in configs.items():
            body = {
                "resources": [
                    {
                        "resource_type": int(res.type),
                        "resource_name": res.name,
                        "configs": [{"name": k, "value": str(v)} for k, v in values.items()],
                    }
                ],
                "validate_only": validate_only,
            }
            resp = self._config_conn(res).request(ALTER_CONFIGS, body)
            for r in resp.responses:
                check(
                    r.error_code,
                    f"altering configs of {res.type.name.lower()} {res.name!r}",
                    r.error_message,
                )

    # -- offsets and records -----------------------------------------------------------------
    def list_offsets(self, specs: Mapping[Any, int]) -> dict[TopicPartition, ListOffsetsResult]:
        """ListOffsets (v1+) per partition: OffsetSpec.EARLIEST, LATEST or a timestamp; a
        timestamp later than every record gives offset -1, as Kafka answers."""
        wanted = offsets_map(specs)
        out: dict[TopicPartition, ListOffsetsResult] = {}
        for leader, tps in self._by_leader(wanted).items():
            conn = self._broker(leader)
            if conn.version(LIST_OFFSETS) < 1:
                raise UnsupportedVersionError(f"ListOffsets v1 on broker {leader}")
            body = {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": t,
                        "partitions": [
                            {
                                "partition_index": p,
                                "current_leader_epoch": -1,
                                "timestamp": wanted[TopicPartition(t, p)],
                            }
                            for p in ps
                        ],
                    }
                    for t, ps in by_topic(tps).items()
                ],
            }
            resp = conn.request(LIST_OFFSETS, body)
            for t in resp.topics:
                for p in t.partitions:
                    check(p.error_code, f"offsets of {t.name}-{p.partition_index}")
                    out[TopicPartition(t.name, p.partition_index)] = ListOffsetsResult(
                        p.offset, p.timestamp, p.get("leader_epoch", -1)
                    )
        return out

    def delete_records(
        self, before: Mapping[Any, int], timeout_ms: int = 30000
    ) -> dict[TopicPartition, int]:
        """DeleteRecords: delete every record before each offset (-1: the high watermark);
        returns each partition's new low watermark (log start offset)."""
        wanted = offsets_map(before)
        out: dict[TopicPartition, int] = {}
        for leader, tps in self._by_leader(wanted).items():
            body = {
                "timeout_ms": timeout_ms,
                "topics": [
                    {
                        "name": t,
                        "partitions": [
                            {"partition_index": p, "offset": wanted[TopicPartition(t, p)]}
                            for p in ps
                        ],
                    }
                    for t, ps in by_topic(tps).items()
                ],
            }
            resp = self._broker(leader).request(DELETE_RECORDS, body)
            for t in resp.topics:
                for p in t.partitions:
                    check(p.error_code, f"deleting records of {t.name}-{p.partition_index}")
                    out[TopicPartition(t.name, p.partition_index)] = p.low_watermark
        return out

    # -- cluster -----------------------------------------------------------------------------
    def describe_cluster(self) -> ClusterDescription:
        """Cluster id, controller and brokers (DescribeCluster, or Metadata where the broker
        predates it)."""
        conn = self._any()
        if DESCRIBE_CLUSTER.key in conn.versions:
            resp = conn.request(DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False})
            check(resp.error_code, "describing the cluster", resp.error_message)
            brokers = tuple(
                ClusterBroker(b.broker_id, b.host, b.port, b.rack)
                for b in sorted(resp.brokers, key=lambda b: b.broker_id)
            )
            return ClusterDescription(resp.cluster_id, resp.controller_id, brokers)
        meta = conn.request(METADATA, {"topics": [], "allow_auto_topic_creation": False})
        brokers = tuple(
            ClusterBroker(b.node_id, b.host, b.port, b.rack)
            for b in sorted(meta.brokers, key=lambda b: b.node_id)
        )
        return ClusterDescription(meta.cluster_id, meta.controller_id, brokers)
