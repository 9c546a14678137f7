"""DescribeConfigs (key 32) v0-v4: a topic's or this broker's configuration, as Kafka reports it.

A topic lists the topic-level settings the broker applies (its overrides as
DYNAMIC_TOPIC_CONFIG, values inherited from server.properties as STATIC_BROKER_CONFIG, Kafka's
defaults as DEFAULT_CONFIG); a broker lists its server.properties keys (read-only: nothing is
dynamic here). Synonyms (v1+, on request) give the chain a value was chosen from.
"""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation
from kclient.protocol.apis import DESCRIBE_CONFIGS
from kclient.protocol.apis.describe_configs import BROKER_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from kclient.protocol.error_codes import InvalidRequestError, UnknownTopicOrPartitionError
from kclient.protocol.framing import Request

from ..config import KINDS
from ..config_changes import config_refusal
from ..interface import Broker, body_of
from ..log.config import INT64_MAX, LogConfig
from ..share.config import GROUP_CONFIG_KEYS
from .registry import handles

DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 1, 4, 5, 8
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
_KIND_TYPES = {"int": LONG, "bool": BOOLEAN, "str": STRING, "list": LIST}

#: topic-level name -> (LogConfig attribute or None, broker synonyms most specific first, type)
TOPIC_CONFIGS: dict[str, tuple[str | None, tuple[str, ...], int]] = {
    "cleanup.policy": ("cleanup_policy", ("log.cleanup.policy",), LIST),
    "delete.retention.ms": ("delete_retention_ms", ("log.cleaner.delete.retention.ms",), LONG),
    "flush.messages": ("flush_interval_messages", ("log.flush.interval.messages",), LONG),
    "flush.ms": ("flush_interval_ms", ("log.flush.interval.ms",), LONG),
    "index.interval.bytes": ("index_interval_bytes", ("log.index.interval.bytes",), INT),
    "max.message.bytes": ("max_message_bytes", ("message.max.bytes",), INT),
    "message.timestamp.type": ("timestamp_type", ("log.message.timestamp.type",), STRING),
    "min.cleanable.dirty.ratio": (
        "min_cleanable_dirty_ratio",
        ("log.cleaner.min.cleanable.ratio",),
        DOUBLE,
    ),
    "min.compaction.lag.ms": (
        "min_compaction_lag_ms",
        ("log.cleaner.min.compaction.lag.ms",),
        LONG,
    ),
    "min.insync.replicas": (None, ("min.insync.replicas",), INT),
    "preallocate": (None, ("log.preallocate",), BOOLEAN),
    "retention.bytes": ("retention_bytes", ("log.retention.bytes",), LONG),
    "retention.ms": (
        "retention_ms",
        ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
        LONG,
    ),
    "segment.bytes": ("segment_bytes", ("log.segment.bytes",), INT),
    "segment.index.bytes": (None, ("log.index.size.max.bytes",), INT),
    "segment.ms": ("segment_ms", ("log.roll.ms", "log.roll.hours"), LONG),
    "unclean.leader.election.enable": (None, ("unclean.leader.election.enable",), BOOLEAN),
}


def _text(value: Any) -> str:
    """A LogConfig value in Kafka's string form."""
    if value is None:
        return str(INT64_MAX)
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def _entry(
    name: str,
    value: str | None,
    source: int,
    kind: int,
    read_only: bool,
    synonyms: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "read_only": read_only,
        "is_default": source == DEFAULT_CONFIG,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": synonyms,
        "config_type": kind,
        "documentation": None,
    }


def _topic_entry(
    broker: Broker, name: str, overrides: dict[str, str], effective: LogConfig, synonyms: bool
) -> dict[str, Any]:
    """One topic-level setting with where its value came from."""
    attr, broker_keys, kind = TOPIC_CONFIGS[name]
    cfg = broker.config
    chain: list[dict[str, Any]] = (
        [{"name": name, "value": overrides[name], "source": DYNAMIC_TOPIC_CONFIG}]
        if name in overrides
        else []
    )
    chain += [
        {"name": k, "value": cfg[k], "source": STATIC_BROKER_CONFIG}
        for k in broker_keys
        if k in cfg.explicit
    ]
    source: int = chain[0]["source"] if chain else DEFAULT_CONFIG
    value = _text(getattr(effective, attr)) if attr else cfg.get(broker_keys[0])
    if name in overrides:  # as set (a list keeps its order, as Kafka shows it)
        value = overrides[name]
    if not chain:
        chain = [{"name": broker_keys[-1], "value": value, "source": DEFAULT_CONFIG}]
    return _entry(name, value, source, kind, False, chain if synonyms else [])


def _topic(broker: Broker, topic: str, keys: list[str] | None, synonyms: bool) -> dict[str, Any]:
    if broker.cluster.partitions(topic) is None:
        return {
            "error_code": UnknownTopicOrPartitionError.errno,
            "error_message": f"Topic {topic} does not exist.",
            "configs": [],
        }
    overrides = dict(broker.cluster.configs.get(topic) or {})
    overrides.update(broker.log_manager.topic_overrides(topic))
    effective = LogConfig.from_properties(overrides, broker.log_manager.default_config)
    names = [n for n in sorted(TOPIC_CONFIGS) if keys is None or n in keys]
    return {
        "error_code": 0,
        "error_message": "",
        "configs": [_topic_entry(broker, n, overrides, effective, synonyms) for n in names],
    }


def effective_value(broker: Broker, topic: str, name: str) -> str | None:
    """The value a topic-level setting has now (override, broker setting or default)."""
    configs = _topic(broker, topic, [name], False)["configs"]
    return configs[0]["value"] if configs else None


def _broker(broker: Broker, name: str, keys: list[str] | None, synonyms: bool) -> dict[str, Any]:
    if name != "" and name != str(broker.node_id):
        return {
            "error_code": InvalidRequestError.errno,
            "error_message": f"Unexpected broker id, expected {broker.node_id} or empty "
            f"string, but received {name}",
            "configs": [],
        }
    if name == "":  # cluster-wide dynamic defaults: none are set here
        return {"error_code": 0, "error_message": "", "configs": []}
    cfg, configs = broker.config, []
    for key in sorted(KINDS):
        if keys is not None and key not in keys:
            continue
        source = STATIC_BROKER_CONFIG if key in cfg.explicit else DEFAULT_CONFIG
        value = cfg.get(key)
        chain = [{"name": key, "value": value, "source": source}] if synonyms else []
        configs.append(_entry(key, value, source, _KIND_TYPES[KINDS[key]], True, chain))
    return {"error_code": 0, "error_message": "", "configs": configs}


def _group(broker: Broker, group_id: str, keys: list[str] | None, synonyms: bool) -> dict[str, Any]:
    """A group's share settings: its own keys (GROUP_CONFIG), else the broker's defaults."""
    overrides = broker.share.group_config(group_id)
    settings = broker.share.group_settings(group_id)
    values = {
        "share.auto.offset.reset": settings.auto_offset_reset,
        "share.isolation.level": settings.isolation_level,
        "share.record.lock.duration.ms": str(settings.lock_ms),
        "share.session.timeout.ms": str(settings.session_timeout_ms),
        "share.heartbeat.interval.ms": str(settings.heartbeat_interval_ms),
        "share.delivery.count.limit": str(settings.delivery_limit),
        "share.partition.max.record.locks": str(settings.max_locks),
    }
    configs = []
    for name in sorted(GROUP_CONFIG_KEYS):
        if keys is not None and name not in keys:
            continue
        source = GROUP_CONFIG if name in overrides else DEFAULT_CONFIG
        kind = STRING if name in ("share.auto.offset.reset", "share.isolation.level") else INT
        chain = [{"name": name, "value": values[name], "source": source}] if synonyms else []
        configs.append(_entry(name, values[name], source, kind, False, chain))
    return {"error_code": 0, "error_message": "", "configs": configs}


@handles(DESCRIBE_CONFIGS, "0-4")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Describe each requested resource; other resource types get INVALID_REQUEST."""
    body: Any = body_of(request)
    synonyms = bool(getattr(body, "include_synonyms", False))
    results = []
    for res in body.resources:
        keys = list(res.configuration_keys) if res.configuration_keys is not None else None
        refusal = config_refusal(
            broker, request, res.resource_type, res.resource_name, AclOperation.DESCRIBE_CONFIGS
        )
        if refusal:
            result = {
                "error_code": refusal,
                "configs": [],
                "error_message": "Authorization failed.",
            }
        elif res.resource_type == TOPIC_RESOURCE:
            result = _topic(broker, res.resource_name, keys, synonyms)
        elif res.resource_type == BROKER_RESOURCE:
            result = _broker(broker, res.resource_name, keys, synonyms)
        elif res.resource_type == GROUP_RESOURCE:
            result = _group(broker, res.resource_name, keys, synonyms)
        else:
            result = {
                "error_code": InvalidRequestError.errno,
                "configs": [],
                "error_message": f"resource type {res.resource_type} is not supported",
            }
        results.append(
            dict(result, resource_type=res.resource_type, resource_name=res.resource_name)
        )
    return {"throttle_time_ms": 0, "results": results}
