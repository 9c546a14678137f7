"""What the threaded and asyncio share consumers have in common, written once: their
configuration (Java's KafkaShareConsumer keys and defaults), the partitions to fetch per
leader, and how acknowledgement results reach the caller and the commit callback."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kclient.config import Config, consumer_config
from kclient.core.metadata import ClusterState
from kclient.core.share_fetch import AckOutcome, FetchOutcome, ShareFetchConfig, ShareFetchState
from kclient.core.share_group import ShareMemberState
from kclient.encoders import decode_function
from kclient.errors import IllegalStateError, InvalidConfigError, KafkaError
from kclient.observability import tracing_for
from kclient.structs import AcknowledgeType, ShareConsumerRecord, TopicPartition

__all__ = [
    "ShareFace",
    "ShareSettings",
    "share_settings",
    "wanted_by_leader",
    "report",
    "AckCallback",
    "check_ack_type",
    "absorb",
]

log = logging.getLogger("kclient.share")

_ACCEPT, _RELEASE = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE)
#: the member itself (an Enum class's attribute costs a lookup of ~0.2 us a call)
_ACCEPT_TYPE = AcknowledgeType.ACCEPT
#: acknowledge types to wire values (an IntEnum: its plain int values find them too)
_WIRE: dict[Any, int] = {t: int(t) for t in AcknowledgeType}

#: ``callback(offsets by partition, exception or None)``: Java's AcknowledgementCommitCallback
AckCallback = Callable[[dict[TopicPartition, set[int]], KafkaError | None], Any]

#: the share consumer's own keys: name -> (default, choices)
_SHARE_KEYS = {
    "share.acknowledgement.mode": ("implicit", ("implicit", "explicit")),
    "share.acquire.mode": ("batch_optimized", ("batch_optimized", "record_limit")),
}
#: Java's KafkaShareConsumer defaults where kclient's consumer defaults differ
_JAVA_DEFAULTS = {"fetch.wait.max.ms": 500}
#: a member holds at most this many polls' worth of records acquired and not handed out
#: (a fetch sent ahead asks for the room left: :meth:`ShareFetchState.fetch_ahead`), in
#: batch_optimized mode; record_limit's fetches ask for one poll's worth
_HOLD_POLLS = 4
#: consumer-group keys a share group has no use for (the broker assigns and keeps the state)
_REFUSED = {
    "auto.commit.enable": "a share group has no offsets to commit: acknowledge records instead",
    "group.instance.id": "share groups have no static membership",
}


class ShareSettings:
    """A share consumer's configuration, validated."""

    def __init__(self, conf: Config, explicit: bool, acquire_mode: int) -> None:
        self.conf = conf
        self.explicit = explicit
        self.group_id: str = conf["group.id"]
        self.max_poll_records: int = conf["max.poll.records"]
        self.fetch = ShareFetchConfig(
            max_wait_ms=conf["fetch.wait.max.ms"],
            min_bytes=conf["fetch.min.bytes"],
            max_bytes=conf["fetch.max.bytes"],
            max_records=conf["max.poll.records"],
            batch_size=conf["max.poll.records"],
            # record_limit: each fetch asks for one poll's worth, so no poll is split by Kafka
            hold_records=(1 if acquire_mode else _HOLD_POLLS) * conf["max.poll.records"],
            acquire_mode=acquire_mode,
        )
        self.backoff_s: float = conf["retry.backoff.ms"] / 1000.0

    def new_state(self) -> ShareFetchState:
        """A new member's fetch state (its deserializers from the config)."""
        conf = self.conf
        return ShareFetchState(
            ShareMemberState(self.group_id),
            self.fetch,
            decode_function(conf.create("key.decoder.class")),
            decode_function(conf.create("value.decoder.class")),
        )

    def bootstrap(self) -> list[str]:
        return [f"{h}:{p}" for h, p in self.conf["metadata.broker.list"]]

    def before_poll(self, state: ShareFetchState) -> None:
        """Implicit mode accepts the last poll's records; explicit mode requires them settled."""
        if not self.explicit:
            state.settle_all(_ACCEPT)
        elif state.unsettled():
            raise IllegalStateError(
                f"{state.unsettled()} records of the last poll are not acknowledged "
                "(share.acknowledgement.mode=explicit: acknowledge each before polling again)"
            )

    def before_close(self, state: ShareFetchState) -> None:
        """What a closing member settles: the delivered records accepted (implicit) or released
        (explicit); the ones never handed out (fetched ahead) are left to the closing of the
        share session, which releases them (:meth:`ShareFetchState.drop_buffered`)."""
        state.settle_all(_RELEASE if self.explicit else _ACCEPT)
        state.drop_buffered()


def share_settings(
    topics: tuple[Any, ...], config: Mapping[str, Any]
) -> tuple[ShareSettings, tuple[Any, ...]]:
    """Settings and topics from a share consumer's ``(*topics, **config)`` arguments."""
    if topics and isinstance(topics[0], Mapping):
        config = {**topics[0], **config}
        topics = topics[1:]
    given = dict(config)
    share = {}
    for key, (default, choices) in _SHARE_KEYS.items():
        value = given.pop(key, default)
        if value not in choices:
            raise InvalidConfigError(
                f"{key} must be one of {', '.join(choices)}, not {value!r}", key, value
            )
        share[key] = value
    for key in ("enable.auto.commit", "auto.commit.enable"):
        if given.get(key):
            raise InvalidConfigError(f"{key}: {_REFUSED['auto.commit.enable']}", key, given[key])
        given.pop(key, None)
    for key, value in _JAVA_DEFAULTS.items():
        if key not in given and "fetch.max.wait.ms" not in given:
            given[key] = value
    conf, _ = consumer_config((given,), {}, {"group.instance.id": _REFUSED["group.instance.id"]})
    if not conf["group.id"]:
        raise InvalidConfigError("a share consumer needs a group.id (its share group)", "group.id")
    mode = 1 if share["share.acquire.mode"] == "record_limit" else 0
    return ShareSettings(conf, share["share.acknowledgement.mode"] == "explicit", mode), topics


def wanted_by_leader(
    member: ShareMemberState, cluster: ClusterState
) -> tuple[dict[int, set[TopicPartition]], bool]:
    """The assigned partitions grouped by leader, and whether some leader (or topic id) is
    unknown (metadata to refresh)."""
    wanted: dict[int, set[TopicPartition]] = {}
    stale = bool(member.unknown_topic_ids())
    for tp in member.assignment():
        node = cluster.leader(tp.topic, tp.partition)
        if node is None:
            stale = True
            continue
        wanted.setdefault(node, set()).add(tp)
    return wanted, stale


def report(
    outcomes: Iterable[AckOutcome], callback: AckCallback | None
) -> dict[TopicPartition, KafkaError | None]:
    """Each partition's result (its first error, else None); the callback is called once per
    distinct result with the offsets it covers, as Java's AcknowledgementCommitCallback."""
    results: dict[TopicPartition, KafkaError | None] = {}
    groups: dict[int, tuple[KafkaError | None, dict[TopicPartition, set[int]]]] = {}
    for o in outcomes:
        if results.get(o.tp) is None:
            results[o.tp] = o.error
        if callback is not None:  # (the offsets are gathered for it only)
            key = id(o.error) if o.error is not None else 0
            groups.setdefault(key, (o.error, {}))[1].setdefault(o.tp, set()).update(o.offsets)
        if o.error is not None:
            log.warning("acknowledging %s offsets of %s failed: %s", len(o.offsets), o.tp, o.error)
    if callback is not None:
        for error, offsets in groups.values():
            try:
                callback(offsets, error)
            except Exception:  # noqa: BLE001 - the application's callback must not stop the consumer
                log.exception("the acknowledgement commit callback raised")
    return results


def check_ack_type(explicit: bool, record: Any, kind: Any) -> tuple[TopicPartition, int, int]:
    """Validate an ``acknowledge(record, type)`` call: (partition, offset, wire type)."""
    if not explicit:
        raise IllegalStateError(
            "acknowledge() needs share.acknowledgement.mode=explicit (implicit mode accepts "
            "every record of a poll at the next one)"
        )
    if not isinstance(record, ShareConsumerRecord):
        raise TypeError(
            f"acknowledge() takes a record a share consumer delivered, not {type(record).__name__}"
        )
    try:
        wire = int(AcknowledgeType(kind))
    except ValueError:
        raise ValueError(
            f"unknown acknowledge type {kind!r} (ACCEPT, RELEASE, REJECT, RENEW)"
        ) from None
    return TopicPartition(record.topic, record.partition), record.offset, wire


def absorb(outcome: FetchOutcome, callback: AckCallback | None) -> bool:
    """Take a ShareFetch round's results: acknowledgement results reported, the first error
    that is not retriable raised, the others logged.  Whether to back off before the next
    round (errors and no records)."""
    report(outcome.acks, callback)
    for err in outcome.errors:
        if not err.retriable:
            raise err
        log.info("share fetch: %s; retrying", err)
    return bool(outcome.errors) and not outcome.records


class ShareFace:
    """What the threaded and asyncio share consumers hold and do without I/O: the settings,
    the fetch state and member, the commit callback; ``acknowledge``, ``subscription``,
    ``assignment``."""

    def _setup(self, topics: tuple[Any, ...], config: Mapping[str, Any]) -> tuple[Any, ...]:
        """Validate the configuration, make the member's state; the topics given."""
        self.settings, topics = share_settings(topics, config)
        self.config = self.settings.conf
        self.group_id = self.settings.group_id
        self._state = self.settings.new_state()
        self._member = self._state.member
        self._callback: AckCallback | None = None
        self._tps: dict[tuple[str, int], TopicPartition] = {}
        #: (topic, partition, TopicPartition) of the last record acknowledged: records come in
        #: runs of one partition, so most need no lookup
        self._ack_tp: tuple[str | None, int, TopicPartition] = (None, -1, TopicPartition("", -1))
        self._fatal: KafkaError | None = None
        self._closed = False
        tracing = tracing_for(self.config, self.group_id)
        if tracing is not None:  # the traced class: poll spans, process spans
            from kclient.observability.clients import trace_share_consumer

            trace_share_consumer(self, tracing)
        return topics

    def _heartbeat_failed(self, exc: KafkaError) -> float | None:
        """After a failed ShareGroupHeartbeat: the wait before the next one, or None when the
        error is fatal (kept for the next call to raise)."""
        if not exc.retriable:
            self._fatal = exc
            log.error("share group %r: heartbeat failed: %s", self.group_id, exc)
            return None
        log.info("share group %r: heartbeat failed (%s); retrying", self.group_id, exc)
        return self.settings.backoff_s

    def subscription(self) -> set[str]:
        """The subscribed topics."""
        return set(self._member.subscription)

    def assignment(self) -> set[TopicPartition]:
        """The partitions the coordinator assigned to this member."""
        return self._member.assignment()

    def acknowledge(
        self, record: ShareConsumerRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT
    ) -> None:
        """Settle a delivered record (explicit mode): ACCEPT, RELEASE (deliver again, maybe to
        another member), REJECT (never again), RENEW (keep the lock; settle it later).  Sent
        with the next fetch (sent at the end of the next poll) or commit."""
        state = self._state  # the common case in one call: ACCEPT, the next record in order
        i = state.acked
        try:  # (past the end, or no records counted: IndexError, rare; no len() per record)
            if state.in_order[i] is record and type is _ACCEPT_TYPE:
                state.acked = i + 1
                return
        except IndexError:
            pass
        try:
            wire = _WIRE[type] if record.__class__ is ShareConsumerRecord else None
        except (KeyError, TypeError):  # not a type: check_ack_type says so
            wire = None
        if wire is None or self._closed or not self.settings.explicit:
            self._check_open("acknowledge")
            tp, offset, wire = check_ack_type(self.settings.explicit, record, type)
            state.acknowledge(tp, offset, wire, record)
            return
        topic, partition, tp = self._ack_tp
        if topic is not record.topic or partition != record.partition:
            key = (record.topic, record.partition)  # one TopicPartition per partition
            tp = self._tps.get(key) or self._tps.setdefault(key, TopicPartition(*key))
            self._ack_tp = (record.topic, record.partition, tp)
        state.acknowledge(tp, record.offset, wire, record)

    def set_acknowledgement_commit_callback(self, callback: AckCallback | None) -> None:
        """``callback(offsets by partition, exception or None)`` after acknowledgements are
        applied or fail (Java's AcknowledgementCommitCallback), where the consumer is used
        (the polling thread; the event loop)."""
        if callback is not None and not callable(callback):
            raise TypeError("the acknowledgement commit callback must be callable")
        self._callback = callback

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise IllegalStateError(f"{what}() on a closed {type(self).__name__}")
