"""The options of the ``kclient`` data source: Spark's Kafka connector's names and rules.

A user switches from ``format("kafka")`` by changing the format name, so the option names, their
defaults and the errors for unsupported ones follow Spark's ``KafkaSourceProvider``.  ``kafka.*``
options go to kclient's clients, translated where kclient's names differ (see
:data:`CONSUMER_KEYS` and :func:`producer_config`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .security import Redacted, SparkSecurity, parse_security

log = logging.getLogger(__name__)

__all__ = [
    "ReadOptions",
    "WriteOptions",
    "OffsetSpec",
    "Subscription",
    "parse_read_options",
    "parse_write_options",
    "producer_config",
    "parse_duration_ms",
    "lower_keys",
]

STRATEGIES = ("subscribe", "subscribepattern", "assign")
LATEST, EARLIEST = -1, -2

AUTO_OFFSET_RESET_ADVICE = (
    "Kafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
    "to specify where to start. Structured Streaming manages which offsets are consumed\n"
    "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
    "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
    "'startingoffsets' only applies when a new Streaming query is started, and\n"
    "that resuming will always pick up from where the query left off. See the docs for more\n"
    "details."
)
REJECTED_READ = {
    "kafka.auto.offset.reset": AUTO_OFFSET_RESET_ADVICE,
    "kafka.key.deserializer": (
        "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
        "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
        "the keys."
    ),
    "kafka.value.deserializer": (
        "Kafka option 'value.deserializer' is not supported as values are deserialized as byte "
        "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
        "the values."
    ),
    "kafka.enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "kafka.interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}
REJECTED_WRITE = {
    "kafka.key.serializer": (
        "Kafka option 'key.serializer' is not supported as keys are serialized with "
        "ByteArraySerializer."
    ),
    "kafka.value.serializer": (
        "Kafka option 'value.serializer' is not supported as value are serialized with "
        "ByteArraySerializer."
    ),
    "kafka.interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}

#: ``kafka.*`` consumer keys the reader uses: Java client name -> SimpleConsumer keyword.
CONSUMER_KEYS = {
    "client.id": "client_id",
    "request.timeout.ms": "so_timeout",
    "socket.timeout.ms": "so_timeout",
    "default.api.timeout.ms": "so_timeout",
    "receive.buffer.bytes": "buffer_size",
    "socket.receive.buffer.bytes": "buffer_size",
    "fetch.max.wait.ms": "max_wait_ms",
    "fetch.wait.max.ms": "max_wait_ms",
    "fetch.min.bytes": "min_bytes",
    "max.partition.fetch.bytes": "fetch_size",
    "fetch.message.max.bytes": "fetch_size",
    "connect.timeout.ms": "connect_timeout_ms",
    "socket.connection.setup.timeout.ms": "connect_timeout_ms",
    "api.version.request": "api_version_request",
    "broker.version.fallback": "broker_version_fallback",
    "check.crcs": "validate_crc",
}
_INT_KEYWORDS = {
    "so_timeout",
    "buffer_size",
    "max_wait_ms",
    "min_bytes",
    "fetch_size",
    "connect_timeout_ms",
}
_BOOL_KEYWORDS = {"api_version_request", "validate_crc"}
#: Java consumer keys that mean nothing to a reader that plans its own offsets (no group).
IGNORED_CONSUMER_KEYS = {
    "group.id",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.records",
    "max.poll.interval.ms",
    "fetch.max.bytes",
    "metadata.max.age.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "retry.backoff.ms",
    "partition.assignment.strategy",
    "client.dns.lookup",
    "send.buffer.bytes",
    "allow.auto.create.topics",
    "client.rack",
    "metrics.recording.level",
    "group.instance.id",
    "exclude.internal.topics",
}
#: Java producer keys with no kclient meaning (batch.size, bytes per partition batch as in
#: Java, passes through).
IGNORED_PRODUCER_KEYS = {
    "buffer.memory",
    "max.block.ms",
    "delivery.timeout.ms",
    "enable.idempotence",
    "client.dns.lookup",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "metrics.recording.level",
    "partitioner.ignore.keys",
    "partitioner.adaptive.partitioning.enable",
}
#: Java producer names kclient spells differently.
PRODUCER_RENAMES = {
    "bootstrap.servers": "metadata.broker.list",
    "max.request.size": "message.max.bytes",
}


@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: ``kind`` is subscribe / subscribepattern / assign."""

    kind: str
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assigned: tuple[tuple[str, int], ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is subscribed (assign: named in the assignment)."""
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribepattern":
            return re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.assigned)


@dataclass(frozen=True)
class OffsetSpec:
    """Where reading starts or ends: ``kind`` earliest / latest / offsets / timestamp /
    timestamps; ``offsets`` maps (topic, partition) to an offset (-2 earliest, -1 latest) or a
    timestamp (ms); ``timestamp`` is one time for every partition."""

    kind: str
    offsets: tuple[tuple[tuple[str, int], int], ...] = ()
    timestamp: int = 0

    def as_dict(self) -> dict[tuple[str, int], int]:
        return dict(self.offsets)


@dataclass(frozen=True)
class ReadOptions:
    """The validated options of a read (batch or streaming)."""

    bootstrap: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    consumer: tuple[tuple[str, Any], ...] = ()
    fetch_size: int = 4 << 20
    security: SparkSecurity = SparkSecurity()
    #: commitOffsetsToGroup: the group each finished micro-batch's end offsets are committed to
    commit_group: str | None = None

    def consumer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the tasks' SimpleConsumers (``security``: kclient's keys)."""
        kwargs = dict(self.consumer)
        if self.security.secured:
            kwargs["security"] = self.security.client_keys()
        return kwargs


@dataclass(frozen=True)
class WriteOptions:
    """The validated options of a write: the default topic and the Producer's config."""

    topic: str | None
    producer: tuple[tuple[str, str], ...] = field(default=())
    exactly_once: bool = False
    #: exactlyOnce: transactional ids are ``<prefix>-<task partition>`` (default from the query id)
    txn_prefix: str | None = None
    #: exactlyOnce: the topic whose partition 0 keys the sink's commit records (default: topic)
    state_topic: str | None = None
    #: test hook: ``before`` / ``after:N`` make the driver's commit raise there, ``kill:N``
    #: SIGKILLs the driver's JVM after N of the task transactions were committed
    fail_commit: str | None = None
    #: test hook: ``raise`` / ``kill`` / ``killExecutor`` the first attempt of task 0 after it
    #: flushed its rows
    fail_task: str | None = None
    security: SparkSecurity = SparkSecurity()

    def producer_config(self) -> dict[str, Any]:
        """The Producer's config (security keys built in this process)."""
        return Redacted({**dict(self.producer), **self.security.client_keys()})


def lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    """Options with lower-case names (Spark's options are case-insensitive)."""
    return {str(k).lower(): str(v) for k, v in options.items()}


def parse_duration_ms(text: str) -> int:
    """A Spark time string (``15m``, ``30s``, ``500ms``, ``2h``, ``1d``; bare: ms) in ms."""
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|min|h|d)?\s*", text.lower())
    if m is None:
        raise ValueError(f"Invalid time string {text!r} (e.g. 15m, 30s, 500ms)")
    unit = {"ms": 1, None: 1, "s": 1000, "m": 60000, "min": 60000, "h": 3600000, "d": 86400000}[
        m.group(2)
    ]
    return int(m.group(1)) * unit


def _bool(opts: dict[str, str], name: str, default: bool) -> bool:
    text = opts.get(name.lower())
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise ValueError(f"option '{name}' must be true or false, not {text!r}")
    return text.strip().lower() == "true"


def _positive(opts: dict[str, str], key: str, name: str) -> int | None:
    if key not in opts:
        return None
    value = int(opts[key])
    if value <= 0:
        raise ValueError(f"{name} must be positive")
    return value


def _bootstrap(opts: dict[str, str], role: str) -> str:
    servers = opts.get("kafka.bootstrap.servers") or opts.get("kafka.metadata.broker.list")
    if not servers:
        raise ValueError(
            f"Option 'kafka.bootstrap.servers' must be specified for configuring Kafka {role}"
        )
    return servers.strip()


def _subscription(opts: dict[str, str]) -> Subscription:
    given = [k for k in STRATEGIES if k in opts]
    names = ", ".join(("subscribe", "subscribePattern", "assign"))
    if not given:
        raise ValueError(
            "One of the following options must be specified for Kafka source: "
            f"{names}. See the docs for more details."
        )
    if len(given) > 1:
        raise ValueError(
            "Only one of the following options can be specified for Kafka "
            f"source: {names}. See the docs for more details."
        )
    kind, value = given[0], opts[given[0]]
    if kind == "assign":
        if not value.strip().startswith("{"):
            raise ValueError(
                f"No topicpartitions to assign as specified value for option 'assign' is '{value}'"
            )
        parsed = _json_object(value, "assign")
        return Subscription(
            kind, assigned=tuple(sorted((str(t), int(p)) for t, ps in parsed.items() for p in ps))
        )
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'"
            )
        return Subscription(kind, topics=topics)
    if not value.strip():
        raise ValueError(
            "Pattern to subscribe is empty as specified value for option "
            f"'subscribePattern' is '{value}'"
        )
    re.compile(value.strip())
    return Subscription(kind, pattern=value.strip())


def _json_object(text: str, option: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"option '{option}' is not valid JSON ({exc}): {text!r}") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"option '{option}' must be a JSON object, got {text!r}")
    return parsed


def parse_partition_json(text: str, option: str) -> dict[tuple[str, int], int]:
    """``{"topic": {"0": 23, "1": -1}}`` as ``{(topic, 0): 23, (topic, 1): -1}``."""
    out = {}
    for topic, parts in _json_object(text, option).items():
        if not isinstance(parts, dict):
            raise ValueError(
                f'option \'{option}\': expected {{"{topic}": {{"0": offset}}}}, got {text!r}'
            )
        for p, off in parts.items():
            out[(str(topic), int(p))] = int(off)
    return out


def _offset_spec(opts: dict[str, str], prefix: str, default: str) -> OffsetSpec:
    """startingX / endingX: global timestamp, per-partition timestamps, then offsets."""
    if f"{prefix}timestamp" in opts:
        text = opts[f"{prefix}timestamp"].strip()
        if not re.fullmatch(r"-?\d+", text):
            raise ValueError(f"Expected a single long value, got {text}")
        return OffsetSpec("timestamp", timestamp=int(text))
    if f"{prefix}offsetsbytimestamp" in opts:
        parsed = parse_partition_json(
            opts[f"{prefix}offsetsbytimestamp"], f"{prefix}OffsetsByTimestamp"
        )
        return OffsetSpec("timestamps", offsets=tuple(sorted(parsed.items())))
    text = opts.get(f"{prefix}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    parsed = parse_partition_json(text, f"{prefix}Offsets")
    return OffsetSpec("offsets", offsets=tuple(sorted(parsed.items())))


def _check_batch_limits(start: OffsetSpec, end: OffsetSpec) -> None:
    if start.kind == "latest":
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    if end.kind == "earliest":
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    for (t, p), off in start.offsets if start.kind == "offsets" else ():
        if off == LATEST:
            raise ValueError(
                f"startingOffsets for {t}-{p} can't be latest for batch queries on Kafka"
            )
    for (t, p), off in end.offsets if end.kind == "offsets" else ():
        if off == EARLIEST:
            raise ValueError(
                f"ending offset for {t}-{p} can't be earliest for batch queries on Kafka"
            )
    if start.kind == end.kind == "offsets":
        s, e = start.as_dict(), end.as_dict()
        if set(s) != set(e):
            raise ValueError(
                "startingOffsets and endingOffsets name different partitions: "
                f"{sorted(s)} vs {sorted(e)}"
            )
        for tp, off in s.items():
            if off >= 0 and e[tp] >= 0 and off > e[tp]:
                raise ValueError(
                    f"The specified starting offset ({off}) is greater than the "
                    f"ending offset ({e[tp]}) for topic partition {tp[0]}-{tp[1]}"
                )


def _consumer_settings(opts: dict[str, str]) -> tuple[tuple[tuple[str, Any], ...], int]:
    """The SimpleConsumer keywords and fetch size the ``kafka.*`` options name."""
    kwargs: dict[str, Any] = {}
    fetch_size = 4 << 20
    for key, value in opts.items():
        if (
            not key.startswith("kafka.")
            or key
            in ("kafka.bootstrap.servers", "kafka.metadata.broker.list", "kafka.security.protocol")
            or key.startswith(("kafka.ssl.", "kafka.sasl."))
        ):
            continue
        name = key[len("kafka.") :]
        if name == "isolation.level":
            level = value.strip().lower()
            if level not in ("read_uncommitted", "read_committed"):
                raise ValueError(
                    f"kafka.isolation.level must be read_uncommitted or "
                    f"read_committed, not {value!r}"
                )
            if level == "read_committed":  # latest = last stable offset, aborted left out
                kwargs["isolation_level"] = level
            continue
        if name in IGNORED_CONSUMER_KEYS:
            log.debug("kclient source: ignoring kafka.%s (no consumer group is used)", name)
            continue
        keyword = CONSUMER_KEYS.get(name)
        if keyword is None:
            raise ValueError(
                f"option {key!r}: kclient's reader has no such consumer setting "
                f"(known: {', '.join(sorted(CONSUMER_KEYS))})"
            )
        if keyword in _INT_KEYWORDS:
            parsed: Any = int(value)
        elif keyword in _BOOL_KEYWORDS:
            parsed = value.strip().lower() == "true"
        else:
            parsed = value
        if keyword == "fetch_size":
            fetch_size = parsed
        else:
            kwargs[keyword] = parsed
    return tuple(sorted(kwargs.items())), fetch_size


def _commit_group(opts: dict[str, str], streaming: bool) -> str | None:
    """commitOffsetsToGroup=true: the ``kafka.group.id`` that shows the query's lag."""
    if not _bool(opts, "commitOffsetsToGroup", False):
        return None
    if not streaming:
        raise ValueError(
            "commitOffsetsToGroup is for readStream: a batch read has no position to commit"
        )
    group = opts.get("kafka.group.id", "").strip()
    if not group:
        raise ValueError(
            "commitOffsetsToGroup=true needs kafka.group.id (the group whose "
            "committed offsets show the query's progress and lag)"
        )
    return group


def parse_read_options(options: Mapping[str, str], streaming: bool) -> ReadOptions:
    """Validate a read's options as Spark's Kafka source does; raises ValueError."""
    opts = lower_keys(options)
    if streaming:
        if "endingoffsets" in opts:
            raise ValueError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in opts or "endingtimestamp" in opts:
            raise ValueError("ending timestamp not valid in streaming queries")
    for key, advice in REJECTED_READ.items():
        if key in opts:
            raise ValueError(advice)
    subscription = _subscription(opts)
    bootstrap = _bootstrap(opts, "consumer")
    security = parse_security(opts)
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
    ending = OffsetSpec("latest") if streaming else _offset_spec(opts, "ending", "latest")
    if not streaming:
        _check_batch_limits(starting, ending)
    max_per = _positive(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    min_per = _positive(opts, "minoffsetspertrigger", "minOffsetsPerTrigger")
    if max_per is not None and min_per is not None and min_per > max_per:
        raise ValueError(
            f"The value of minOffsetPerTrigger({min_per}) is higher than the "
            f"maxOffsetsPerTrigger({max_per})."
        )
    consumer, fetch_size = _consumer_settings(opts)
    commit_group = _commit_group(opts, streaming)
    return ReadOptions(
        bootstrap=bootstrap,
        subscription=subscription,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", False),
        min_partitions=_positive(opts, "minpartitions", "minPartitions"),
        max_records_per_partition=_positive(
            opts, "maxrecordsperpartition", "maxrecordsperpartition"
        ),
        max_offsets_per_trigger=max_per,
        min_offsets_per_trigger=min_per,
        max_trigger_delay_ms=parse_duration_ms(opts.get("maxtriggerdelay", "15m")),
        consumer=consumer,
        fetch_size=fetch_size,
        security=security,
        commit_group=commit_group,
    )


def producer_config(opts: dict[str, str]) -> dict[str, str]:
    """kclient Producer config from the ``kafka.*`` options (Java names translated)."""
    config = {
        "request.required.acks": "-1",
        "producer.type": "async",
        "queue.enqueue.timeout.ms": "-1",
    }
    for key, value in opts.items():
        if (
            not key.startswith("kafka.")
            or key == "kafka.security.protocol"
            or key.startswith(("kafka.ssl.", "kafka.sasl."))
        ):
            continue
        name = key[len("kafka.") :]
        if name in IGNORED_PRODUCER_KEYS:
            log.debug("kclient sink: ignoring kafka.%s (no kclient equivalent)", name)
            continue
        config[PRODUCER_RENAMES.get(name, name)] = value
    if "acks" in config:
        config["request.required.acks"] = config.pop("acks")
    return config


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """Validate a write's options as Spark's Kafka sink does; raises ValueError."""
    opts = lower_keys(options)
    for key, advice in REJECTED_WRITE.items():
        if key in opts:
            raise ValueError(advice)
    _bootstrap(opts, "producer")
    security = parse_security(opts)
    topic = opts.get("topic")
    config = producer_config(opts)
    from kclient.config import load_config

    load_config("producer", config)  # unknown keys and bad values fail here, on the driver
    exactly_once = _bool(opts, "exactlyOnce", False)
    if "kafka.transactional.id" in opts:
        raise ValueError(
            "Kafka option 'transactional.id' is not supported: with "
            "exactlyOnce=true the sink derives one per task from the "
            "transactionalIdPrefix option"
        )
    state_topic = opts.get("transactionstatetopic") or (topic.strip() if topic else None)
    if exactly_once and not state_topic:
        raise ValueError(
            "exactlyOnce=true needs the topic option or transactionStateTopic (an "
            "existing topic that keys the sink's commit records)"
        )
    return WriteOptions(
        topic=topic.strip() if topic else None,
        producer=tuple(sorted(config.items())),
        exactly_once=exactly_once,
        txn_prefix=opts.get("transactionalidprefix") or None,
        state_topic=state_topic,
        fail_commit=opts.get("exactlyonce.failcommit") or None,
        fail_task=opts.get("exactlyonce.failtask") or None,
        security=security,
    )
