"""GroupConsumerConnector: the same connector, coordinated by the broker's group coordinator.

Used when ``zookeeper.connect`` is not set (clusters without ZooKeeper, Kafka 4.x, the
mini-broker alone).  The members use JoinGroup / SyncGroup / Heartbeat / LeaveGroup with
``protocol_type`` ``consumer`` and one protocol named after ``partition.assignment.strategy``
(``range`` or ``roundrobin``); the elected leader computes the assignment with the very same
algorithms as the ZooKeeper connector, over the same string-sorted thread ids
(``<consumer_id>-<i>``), and hands every member its partitions.

Wire format: the standard consumer-protocol Subscription (version 0: topics, user data) and
Assignment (version 0: topic partitions, user data), so tools that decode group metadata work;
the Subscription's user data is the member's registration JSON (as written to ZooKeeper, plus
``consumer_id``), the Assignment's user data maps each partition to its thread id.  Members of
other clients (the Java consumer, whose protocols include ``range`` and ``roundrobin``) share the
group: a kclient leader counts each as one thread over the topics its Subscription lists, and a
kclient member assigned by a Java leader spreads its partitions over its own threads (range).

Safety steps are the ZooKeeper connector's: before rejoining, fetchers stop, queues and streams
are cleared, and offsets are committed when auto-commit is on (with the old generation).  A
member whose heartbeat says the group is rebalancing rejoins at once.  A filter consumer checks
the cluster's topics every second and rejoins when the set of matching topics changes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from kclient.cluster import Cluster
from kclient.core import group as core_group
from kclient.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    KafkaError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from .assignment import assign
from .connector import ConsumerConnector, ConsumerGroupMetadata
from .group_protocol import (
    GroupMembership,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    parse_json,
    registration,
    strategies_of,
    subscription_protocols,
)
from .membership import topic_thread_ids
from .offsets import Coordinator, KafkaOffsetStore
from .rebalance import RebalanceExecutor, synced_rebalance

__all__ = [
    "GroupConsumerConnector",
    "encode_subscription",
    "decode_subscription",
    "encode_assignment",
    "decode_assignment",
]

log = logging.getLogger(__name__)


class GroupConsumerConnector(ConsumerConnector):
    """A consumer group coordinated by the broker (no ZooKeeper)."""

    cluster: Cluster  # set up front, unlike the base class's
    offset_store: KafkaOffsetStore

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        c.require("metadata.broker.list")
        self.cluster = Cluster([f"{h}:{p}" for h, p in c["metadata.broker.list"]], self.settings)
        self.session_timeout = c["session.timeout.ms"]
        self.heartbeat_interval = c["heartbeat.interval.ms"] / 1000.0
        # JoinGroup may be held by the coordinator for up to a rebalance (two sessions)
        coord_settings = self.settings.replace(
            request_timeout_ms=max(
                self.settings.request_timeout_ms, 2 * self.session_timeout + 5000
            )
        )
        self.coordinator = Coordinator(
            self.cluster,
            self.group,
            c["retry.backoff.ms"],
            c["offsets.commit.max.retries"],
            coord_settings,
        )
        self.group_instance_id: str | None = c["group.instance.id"] or None
        self.membership = GroupMembership(
            self.coordinator, self.group, self.session_timeout, self.group_instance_id
        )
        self.offset_store = KafkaOffsetStore(
            self.coordinator,
            self.group,
            self._generation,
            c["offsets.commit.max.retries"],
            c["offsets.channel.backoff.ms"],
        )
        self.offset_store.group_instance_id = self.group_instance_id
        self.strategies = strategies_of(self.strategy)
        self._stable = threading.Event()
        self._topics_seen: list[str] | None = None
        self._warned_missing: set[str] = set()
        self._partition_counts: dict[str, int] = {}
        self.executor = RebalanceExecutor(
            self.consumer_id,
            self._synced_rebalance,
            self._surface,
            self._shutting_down,
            retry_after_failure_s=max(1.0, self.heartbeat_interval),
        )
        self._heartbeat: threading.Thread | None = None

    def _generation(self) -> tuple[int, str]:
        return self.membership.generation()

    @property
    def generation_id(self) -> int:
        return self.membership.generation_id

    @property
    def member_id(self) -> str:
        return self.membership.member_id

    @member_id.setter
    def member_id(self, value: str) -> None:
        self.membership.member_id = value

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group id with this member's current generation and member id."""
        return ConsumerGroupMetadata(self.group, self.generation_id, self.member_id)

    # -- start ------------------------------------------------------------------------------------
    def _start(self) -> None:
        self._first_rebalance()
        if self._shutting_down.is_set():  # shut down from another thread while joining
            return
        heartbeat = threading.Thread(
            target=self._heartbeat_loop, daemon=True, name=f"{self.consumer_id}-heartbeat"
        )
        heartbeat.start()
        self._heartbeat = heartbeat  # only once started: shutdown() joins it
        self._start_auto_commit()

    def _synced_rebalance(self) -> None:
        self._stable.clear()
        ok = synced_rebalance(
            self.consumer_id,
            self._rebalance_attempt,
            lambda: self._close_fetchers(commit=False),
            max(self.config["rebalance.max.retries"], 1),
            min(self.config["rebalance.backoff.ms"], 1000),
            self._shutting_down,
        )
        if ok:
            self._metrics.rebalanced()
            self.rebalance_error = None
            self._stable.set()

    def _all_topics(self) -> list[str]:
        self.cluster.refresh(None, allow_auto_create=False)
        return sorted(t for t, info in self.cluster.topics.items() if not info.error_code)

    def _my_topics(self) -> list[str]:
        if self.topic_filter is not None:
            topics = self.topic_filter.filter(self._all_topics(), self.exclude_internal)
            self._topics_seen = topics
            return topics
        return sorted(self.topic_count or {})

    def _rebalance_attempt(self, attempt: int) -> bool:
        try:
            self._close_fetchers(commit=True)
        except KafkaError as exc:  # the old generation may be gone already
            log.info("%s: commit before rejoining failed: %s", self.consumer_id, exc)
        self._before_release()
        with self._offsets_lock:
            self.registry = {}
        pattern, subscription = self.subscription
        user = registration(self.consumer_id, pattern, subscription)
        topics = self._my_topics()
        data = self.membership.join_and_sync(
            self._protocols(topics, user), 1, self.exclude_internal, self._shutting_down.is_set
        )
        if data is None:
            return False
        mine = self._owned_threads(*decode_assignment(data))
        self._after_cooperative_sync(set(mine))
        self._warn_missing_topics()
        offsets = self.offset_store.fetch(mine) if mine else {}
        if self._shutting_down.is_set():
            return False
        self.registry = self._new_registry(mine, offsets)
        log.info(
            "%s (generation %d) owns %s",
            self.consumer_id,
            self.generation_id,
            {f"{t}/{p}": th for (t, p), th in sorted(mine.items())},
        )
        self._start_fetchers()
        return True

    def _protocols(self, topics: list[str], user: bytes) -> list[tuple[str, bytes]]:
        """One protocol per configured strategy; cooperative-sticky's Subscription (v3) lists
        the partitions owned after the last rebalance and its generation."""
        state = self.membership.state
        if not state.member_id:  # fenced or new: it owns nothing (as Java)
            core_group.give_up(state)
        return subscription_protocols(
            self.strategies, topics, user, state.owned, state.owned_generation
        )

    def _after_cooperative_sync(self, mine: set[tuple[str, int]]) -> None:
        """cooperative-sticky: partitions that left this member were withheld from their new
        owner; rejoin at once so that it gets them in the follow-up rebalance.  (The
        connector stops every fetcher around a rebalance, as in eager mode, and reports the
        partitions it owned, so the leader keeps them here.)"""
        change = core_group.take_assignment(self.membership.state, mine)
        if change.rejoin:
            log.info(
                "%s: gave up %s; rejoining for the follow-up rebalance",
                self.consumer_id,
                sorted(change.revoked),
            )
            self.executor.trigger("cooperative follow-up rebalance")

    def _warn_missing_topics(self) -> None:
        """Warn, once per topic, about subscribed topics the cluster does not have (a group
        consumer on such a topic would otherwise just time out, silently)."""
        wanted = sorted(set(self.topic_count or ()) - self._warned_missing)
        if not wanted:
            return
        try:
            self.cluster.refresh(wanted, allow_auto_create=False)
        except KafkaError as exc:
            log.info("%s: cannot check the subscribed topics: %s", self.consumer_id, exc)
            return
        for topic in wanted:
            info = self.cluster.topics.get(topic)
            if info is None or info.error_code or not info.partitions:
                self._warned_missing.add(topic)
                log.warning(
                    "%s: subscribed topic %r does not exist on the cluster (%s); no "
                    "messages until it is created",
                    self.consumer_id,
                    topic,
                    ", ".join(f"{h}:{p}" for h, p in self.cluster.bootstrap),
                )

    def _owned_threads(
        self, partitions: dict[str, list[int]], user_data: bytes
    ) -> dict[tuple[str, int], str]:
        """Our partitions and the thread of each: as a kclient leader wrote them in the user
        data, or, from another client's leader (Java's assignors), spread over our threads."""
        owned = parse_json(user_data)
        mine_prefix = f"{self.consumer_id}-"
        if (
            isinstance(owned, dict)
            and all(isinstance(v, dict) for v in owned.values())
            and all(
                str(th).startswith(mine_prefix) for parts in owned.values() for th in parts.values()
            )
        ):
            return {(t, int(p)): th for t, parts in owned.items() for p, th in parts.items()}
        return self._spread_over_threads(partitions)

    def _spread_over_threads(
        self, partitions: Mapping[str, list[int]]
    ) -> dict[tuple[str, int], str]:
        """Partitions assigned to this member as a whole (another client's leader, or the
        KIP-848 coordinator) spread over its own threads: range, topic by topic."""
        pattern, subscription = self.subscription
        threads = topic_thread_ids(
            self.consumer_id, pattern, subscription, list(partitions), self.exclude_internal
        )
        mine: dict[tuple[str, int], str] = {}
        for topic, parts in partitions.items():
            if topic not in threads:
                log.warning(
                    "%s: assigned %s, which it did not subscribe to; ignored",
                    self.consumer_id,
                    topic,
                )
                continue
            mine.update(assign("range", {topic: sorted(threads[topic])}, {topic: parts}))
        return mine

    def commit_offsets(self) -> None:
        """Commit; if the group moved to a new generation, rejoin and raise the broker's error.

        As the Java consumer's commit: offsets of an old generation are refused
        (IllegalGenerationError, UnknownMemberIdError, RebalanceInProgressError); the connector
        rejoins at once and the partitions it owns afterwards start from their committed offsets.
        """
        try:
            super().commit_offsets()
        except (IllegalGenerationError, UnknownMemberIdError, RebalanceInProgressError) as exc:
            if isinstance(exc, UnknownMemberIdError):
                self.member_id = ""
            self._stable.clear()
            self.executor.trigger(f"commit refused: {type(exc).__name__}")
            raise

    # -- heartbeats and topic changes ------------------------------------------------------------
    def _heartbeat_loop(self) -> None:
        """The core's heartbeat loop while the group is stable; a rebalance or fencing the
        beats report triggers the executor; between beats, the topic check."""
        last_topic_check = time.monotonic()

        def active() -> bool:
            nonlocal last_topic_check
            if not self._stable.is_set():
                return False
            if time.monotonic() - last_topic_check >= self._topic_check_interval():
                last_topic_check = time.monotonic()
                try:
                    if self._topics_changed():
                        self._stable.clear()
                        self.executor.trigger("subscribed topics changed")
                        return False
                except KafkaError as exc:
                    log.info("%s: topic check failed: %s", self.consumer_id, exc)
            return True

        def rejoin(how: str, code: int) -> None:
            self._stable.clear()
            self.executor.trigger("group rebalancing")

        def fenced(exc: FencedInstanceIdError) -> None:
            self._stable.clear()
            self._surface(exc)

        self.membership.heartbeats(
            self.heartbeat_interval, active, rejoin, fenced, self._shutting_down.is_set
        )

    def _topic_check_interval(self) -> float:
        return 1.0 if self.topic_filter is not None else 5.0

    def _topics_changed(self) -> bool:
        all_topics = self._all_topics()
        if self.topic_filter is not None:
            now = self.topic_filter.filter(all_topics, self.exclude_internal)
            if now != self._topics_seen:
                return True
        counts = {
            t: len(self.cluster.topics[t].partitions)
            for t in (self._topics_seen or self.topic_count or ())
            if t in self.cluster.topics
        }
        changed = bool(self._partition_counts) and counts != self._partition_counts
        self._partition_counts = counts
        return changed

    # -- shutdown ----------------------------------------------------------------------------------
    def _stop_coordination(self) -> None:
        # a JoinGroup in flight would hold the connection (and LeaveGroup behind it) for up to
        # a rebalance: fail it now; commit and LeaveGroup then use a fresh connection
        self.coordinator.interrupt()  # also wakes the heartbeat loop's sleep
        self.executor.stop()
        if self.executor.is_alive():
            self.executor.join(30)
        if self._heartbeat is not None:
            self._heartbeat.join(10)

    def _release(self) -> None:
        with self._offsets_lock:
            self.registry = {}
        if self.group_instance_id is not None:
            self.membership.forget()  # static: no LeaveGroup (KIP-345), as Java
            return
        try:
            self.membership.leave()
        except KafkaError as exc:
            log.info("%s: LeaveGroup failed: %s", self.consumer_id, exc)

    def _close_resources(self) -> None:
        self.coordinator.close()
        super()._close_resources()
