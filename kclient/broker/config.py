"""Broker configuration: Kafka's server.properties names, their defaults, and validation.

:class:`BrokerConfig` is a ``dict[str, str]`` holding every known key (explicit values and
defaults alike, as strings, the way server.properties stores them) plus typed accessors; an
unknown key or a value of the wrong type raises ValueError naming the key (and, for a typo, the
closest known key).  ``log.*`` keys are handed to the storage layer's ``LogConfig`` and
``group.*`` / ``offsets.*`` keys to the group coordinator.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, overload

__all__ = ["BrokerConfig", "DEFAULTS", "KINDS", "LOG_KEYS", "TOPIC_LEVEL_KEYS", "closest_key"]

_INT, _BOOL, _STR, _LIST = "int", "bool", "str", "list"

#: key -> (type, default).  A default of None means "unset" (the key has no value).
_TABLE: dict[str, tuple[str, str | None]] = {
    # identity and listeners
    "broker.id": (_INT, "0"),
    "port": (_INT, "9092"),
    "host.name": (_STR, "127.0.0.1"),
    "host": (_STR, None),
    "listeners": (_LIST, None),
    "advertised.host.name": (_STR, None),
    "advertised.port": (_INT, None),
    "advertised.listeners": (_LIST, None),
    "listener.security.protocol.map": (
        _STR,
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
    ),
    "inter.broker.listener.name": (_STR, None),
    "security.inter.broker.protocol": (_STR, "PLAINTEXT"),
    "broker.rack": (_STR, None),
    "cluster.id": (_STR, "kclient-mini-cluster"),
    "inter.broker.protocol.version": (_STR, None),  # None: the newest (ZooKeeper registration v5)
    # TLS (listeners.py): PEM files only
    "ssl.keystore.type": (_STR, None),
    "ssl.keystore.location": (_STR, None),
    "ssl.key.location": (_STR, None),
    "ssl.key.password": (_STR, None),
    "ssl.truststore.type": (_STR, None),
    "ssl.truststore.location": (_STR, None),
    "ssl.client.auth": (_STR, "none"),
    "ssl.enabled.protocols": (_STR, "TLSv1.2,TLSv1.3"),
    "ssl.cipher.suites": (_STR, None),
    "ssl.endpoint.identification.algorithm": (_STR, "https"),
    "ssl.principal.mapping.rules": (_STR, "DEFAULT"),
    # SASL (sasl/): users from sasl.credentials.file (salted) or kclient broker --sasl-user
    "sasl.enabled.mechanisms": (_LIST, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"),
    "sasl.credentials.file": (_STR, None),
    "connections.max.reauth.ms": (_INT, "0"),
    # authorization (authorizer.py): "" is none; Kafka's authorizer class names or "kclient"
    "authorizer.class.name": (_STR, ""),
    "super.users": (_STR, None),
    "allow.everyone.if.no.acl.found": (_BOOL, "false"),
    # network
    "num.network.threads": (_INT, "3"),
    "num.io.threads": (_INT, "8"),
    "queued.max.requests": (_INT, "500"),
    "socket.send.buffer.bytes": (_INT, "102400"),
    "socket.receive.buffer.bytes": (_INT, "102400"),
    "socket.request.max.bytes": (_INT, "104857600"),
    "connections.max.idle.ms": (_INT, "600000"),
    "queued.max.request.bytes": (_INT, "-1"),
    "max.connections": (_INT, "2147483647"),
    "max.connections.per.ip": (_INT, "2147483647"),
    "max.connections.per.ip.overrides": (_STR, ""),
    "request.timeout.ms": (_INT, "30000"),
    # topics
    "num.partitions": (_INT, "1"),
    "auto.create.topics.enable": (_BOOL, "true"),
    "delete.topic.enable": (_BOOL, "true"),
    "default.replication.factor": (_INT, "1"),
    "min.insync.replicas": (_INT, "1"),
    "unclean.leader.election.enable": (_BOOL, "false"),
    "auto.leader.rebalance.enable": (_BOOL, "true"),
    "controlled.shutdown.enable": (_BOOL, "true"),
    "message.max.bytes": (_INT, "1048588"),
    "replica.fetch.max.bytes": (_INT, "1048576"),
    "fetch.max.bytes": (_INT, "57671680"),
    "max.incremental.fetch.session.cache.slots": (_INT, "1000"),
    # log (passed to LogConfig / LogManager)
    "log.dir": (_STR, None),
    "log.dirs": (_LIST, None),
    "log.segment.bytes": (_INT, "1073741824"),
    "log.roll.ms": (_INT, None),
    "log.roll.hours": (_INT, "168"),
    "log.flush.interval.messages": (_INT, "9223372036854775807"),
    "log.flush.interval.ms": (_INT, None),
    "log.flush.scheduler.interval.ms": (_INT, "1000"),
    "log.flush.offset.checkpoint.interval.ms": (_INT, "60000"),
    "log.retention.ms": (_INT, None),
    "log.retention.minutes": (_INT, None),
    "log.retention.hours": (_INT, "168"),
    "log.retention.bytes": (_INT, "-1"),
    "log.retention.check.interval.ms": (_INT, "300000"),
    "log.index.interval.bytes": (_INT, "4096"),
    "log.index.size.max.bytes": (_INT, "10485760"),
    "log.message.format.version": (_STR, None),
    "log.message.timestamp.type": (_STR, "CreateTime"),
    "log.cleanup.policy": (_STR, "delete"),
    "log.cleaner.enable": (_BOOL, "true"),
    "log.cleaner.threads": (_INT, "1"),
    "log.cleaner.backoff.ms": (_INT, "15000"),
    "log.cleaner.min.cleanable.ratio": (_STR, "0.5"),
    "log.cleaner.delete.retention.ms": (_INT, "86400000"),
    "log.cleaner.min.compaction.lag.ms": (_INT, "0"),
    "log.cleaner.dedupe.buffer.size": (_INT, "134217728"),
    "log.cleaner.io.buffer.size": (_INT, "524288"),
    "log.cleaner.io.max.bytes.per.second": (_STR, "1.7976931348623157E308"),
    "log.preallocate": (_BOOL, "false"),
    "num.recovery.threads.per.data.dir": (_INT, "1"),
    # ZooKeeper
    "zookeeper.connect": (_STR, None),
    "zookeeper.session.timeout.ms": (_INT, "18000"),
    "zookeeper.connection.timeout.ms": (_INT, None),
    "zookeeper.sync.time.ms": (_INT, "2000"),
    # group coordinator and offset manager
    "group.min.session.timeout.ms": (_INT, "6000"),
    "group.max.session.timeout.ms": (_INT, "1800000"),
    "group.initial.rebalance.delay.ms": (_INT, "3000"),
    "group.max.size": (_INT, "2147483647"),
    "group.consumer.heartbeat.interval.ms": (_INT, "5000"),
    "group.consumer.session.timeout.ms": (_INT, "45000"),
    "group.consumer.max.size": (_INT, "2147483647"),
    "group.consumer.assignment.interval.ms": (_INT, "1000"),
    "group.consumer.assignors": (_STR, "uniform,range"),
    "group.consumer.migration.policy": (_STR, "bidirectional"),
    # share groups (KIP-932; share/config.py)
    "group.share.record.lock.duration.ms": (_INT, "30000"),
    "group.share.min.record.lock.duration.ms": (_INT, "15000"),
    "group.share.max.record.lock.duration.ms": (_INT, "60000"),
    "group.share.delivery.count.limit": (_INT, "5"),
    "group.share.partition.max.record.locks": (_INT, "2000"),
    "group.share.session.timeout.ms": (_INT, "45000"),
    "group.share.min.session.timeout.ms": (_INT, "45000"),
    "group.share.max.session.timeout.ms": (_INT, "60000"),
    "group.share.heartbeat.interval.ms": (_INT, "5000"),
    "group.share.max.size": (_INT, "200"),
    "share.coordinator.state.topic.segment.bytes": (_INT, "104857600"),
    "offsets.topic.num.partitions": (_INT, "50"),
    "offsets.topic.replication.factor": (_INT, "1"),
    "offsets.topic.segment.bytes": (_INT, "104857600"),
    "offsets.topic.compression.codec": (_INT, "0"),
    "offsets.retention.minutes": (_INT, "10080"),
    "offsets.retention.check.interval.ms": (_INT, "600000"),
    "offsets.commit.timeout.ms": (_INT, "5000"),
    "offsets.commit.required.acks": (_INT, "-1"),
    "offsets.load.buffer.size": (_INT, "5242880"),
    "offset.metadata.max.bytes": (_INT, "4096"),
    "transaction.state.log.replication.factor": (_INT, "1"),
    "transaction.state.log.min.isr": (_INT, "1"),
    "transaction.state.log.num.partitions": (_INT, "50"),
    "transaction.state.log.segment.bytes": (_INT, "104857600"),
    "transaction.max.timeout.ms": (_INT, "900000"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (_INT, "10000"),
    # the finalized transaction.version feature (KIP-890: 2 is transactions v2; 0-1 turn it off)
    "transaction.version": (_INT, "2"),
}

DEFAULTS: dict[str, str] = {k: d for k, (_, d) in _TABLE.items() if d is not None}
#: key -> its type: "int", "bool", "str" or "list".
KINDS: dict[str, str] = {k: kind for k, (kind, _) in _TABLE.items()}

#: Broker keys that configure the storage layer (LogConfig.from_properties understands them).
LOG_KEYS = frozenset(
    k
    for k in _TABLE
    if k.startswith("log.")
    and k
    not in (
        "log.dir",
        "log.dirs",
        "log.flush.scheduler.interval.ms",
        "log.retention.check.interval.ms",
        "log.flush.offset.checkpoint.interval.ms",
    )
)

#: Topic-level names (CreateTopics configs, ``create_topic(config=...)``).
TOPIC_LEVEL_KEYS = frozenset(
    {
        "segment.bytes",
        "segment.ms",
        "flush.messages",
        "flush.ms",
        "retention.ms",
        "retention.bytes",
        "index.interval.bytes",
        "message.format.version",
        "message.timestamp.type",
        "max.message.bytes",
        "cleanup.policy",
        "segment.index.bytes",
        "min.insync.replicas",
        "compression.type",
        "preallocate",
        "file.delete.delay.ms",
        "message.timestamp.difference.max.ms",
        "unclean.leader.election.enable",
        "delete.retention.ms",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "segment.jitter.ms",
        "message.downconversion.enable",
    }
)


def closest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key most like ``key`` (for "did you mean" messages), or None."""
    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.5)
    return match[0] if match else None


def _check_value(key: str, kind: str, value: object) -> str:
    """Normalise one value to its string form, raising ValueError when its type is wrong."""
    text = str(value).strip() if not isinstance(value, bool) else str(value).lower()
    if kind == _INT:
        try:
            int(text)
        except ValueError:
            raise ValueError(f"broker config {key!r}: {value!r} is not an integer") from None
    elif kind == _BOOL:
        text = text.lower()
        if text not in ("true", "false"):
            raise ValueError(f"broker config {key!r}: {value!r} is not true or false")
    return text


class BrokerConfig(dict[str, Any]):
    """Every broker setting by its server.properties name, as strings; ``explicit`` = user-set."""

    def __init__(self, values: Mapping[str, object] | None = None):
        super().__init__(DEFAULTS)
        self.explicit: set[str] = set()
        for key, value in (values or {}).items():
            self.set(key, value)

    def set(self, key: str, value: object) -> None:
        """Set one key, validating its name and value type."""
        if key not in _TABLE:
            hint = closest_key(key, _TABLE)
            tail = f" (did you mean {hint!r}?)" if hint else ""
            raise ValueError(f"unknown broker config key {key!r}{tail}")
        if value is None:
            self.pop(key, None)
            self.explicit.discard(key)
            return
        self[key] = _check_value(key, _TABLE[key][0], value)
        self.explicit.add(key)

    @overload
    def get_int(self, key: str, default: int) -> int: ...

    @overload
    def get_int(self, key: str, default: None = None) -> int | None: ...

    def get_int(self, key: str, default: int | None = None) -> int | None:
        """An integer setting (None/default when unset)."""
        value = self.get(key)
        return default if value is None else int(value)

    def int_setting(self, key: str) -> int:
        """An integer setting that always has a value (a default in the table)."""
        return int(self[key])

    def get_bool(self, key: str) -> bool:
        """A boolean setting."""
        return str(self.get(key, "false")) == "true"

    def log_properties(self) -> dict[str, str]:
        """The explicitly set ``log.*`` keys, for ``LogConfig.from_properties``."""
        return {k: self[k] for k in self.explicit if k in LOG_KEYS}

    def coordinator_properties(self) -> dict[str, str]:
        """Every setting (defaults included) for the group coordinator."""
        return dict(self)
