"""kclient.Consumer's classic group membership (JoinGroup / SyncGroup / Heartbeat), on threads.

The conversations are the core's (:mod:`kclient.core.group`, bound by
:class:`~kclient.consumer.group_protocol.GroupMembership`); these are the steps ``poll()`` takes
with them under ``group.protocol=classic``: the eager rebalance (revoke, join, sync, assign),
the cooperative one (KIP-429: join in a background thread while ``poll()`` keeps fetching, then
revoke only what left and rejoin), the heartbeat thread, and the topic check that rejoins when a
pattern matches other topics or a partition count changed.  The KIP-848 steps are
:class:`~kclient.consumer.consumer_group.ConsumerProtocolPoll`'s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from kclient.cluster import Cluster
from kclient.config import Config
from kclient.core import group as core_group
from kclient.core.subscription import Subscription
from kclient.errors import FencedInstanceIdError, KafkaError
from kclient.structs import TopicPartition

from .compat import Unreachable
from .group_protocol import (
    GroupMembership,
    decode_assignment,
    registration,
    subscription_protocols,
)
from .offsets import KafkaOffsetStore

__all__ = ["ClassicGroupSteps"]

log = logging.getLogger(__name__)


class ClassicGroupSteps:
    """kclient.Consumer's rebalances and heartbeats under the classic group protocol."""

    config: Config
    consumer_id: str
    cluster: Cluster
    membership: GroupMembership | None
    offset_store: KafkaOffsetStore | None
    strategies: list[str]
    cooperative: bool
    _sub: Subscription
    _assignment: list[TopicPartition]
    _positions: dict[TopicPartition, int]
    _rejoin: str | None
    _joined: threading.Event
    _joining: Future[bytes | None] | None
    _group_pool: ThreadPoolExecutor | None
    _fatal: KafkaError | None
    _closed: threading.Event
    _down: Unreachable

    _call_listener: Callable[[str, set[TopicPartition]], None]
    _set_assignment: Callable[[list[TopicPartition]], None]
    _assigned: Callable[[], None]
    _try_commit: Callable[[str], None]

    def _classic_group_step(self, deadline: float) -> bool | None:
        """The classic protocol's part of a poll: finish or start a rebalance, check the
        topics.  A rebalance still to be done gives False when the poll's time is up (the
        unreachable-broker check ran first) and None after a backoff, to try again."""
        if self._joining is not None and self._joining.done():
            self._retriable(self._finish_cooperative_join)
        active = self._sub.active
        if (
            active
            and self._rejoin is not None
            and self._joining is None
            and self.cooperative
            and self._rejoin != "lost"
            and self._assignment
        ):
            self._start_cooperative_join()
        elif (
            active
            and self._rejoin is not None
            and self._joining is None
            and not self._retriable(self._rebalance)
        ):
            self._down.check(deadline)
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(self.config["rebalance.backoff.ms"], 1000) / 1000.0)
            return None
        if self._sub.active:  # (again: a listener the steps above called may unsubscribe)
            self._check_topics()
        return True

    def _retriable(self, step: Callable[[], Any]) -> bool:
        """Run a group step; a retriable error (the coordinator not ready yet, as on a fresh
        cluster, or moving) is logged and the next poll() tries again, as Java's poll does."""
        try:
            done = bool(step())
        except KafkaError as exc:
            if not getattr(exc, "retriable", False) or isinstance(exc, FencedInstanceIdError):
                raise
            if not self._down.failed(exc):
                log.info("%s: rebalance not done yet: %s; retrying", self.consumer_id, exc)
            self._rejoin = self._rejoin or "revoke"
            return False
        self._down.reached()
        return done

    def _heartbeat_loop(self) -> None:
        """The core's heartbeat loop on this thread, while joined."""
        assert self.membership is not None

        def rejoin(how: str, code: int) -> None:
            if self._joined.is_set():
                self._joined.clear()
                self._rejoin = how

        def fenced(exc: FencedInstanceIdError) -> None:
            self._fatal = exc
            self._joined.clear()

        self.membership.heartbeats(
            self.config["heartbeat.interval.ms"] / 1000.0,
            self._joined.is_set,
            rejoin,
            fenced,
            self._closed.is_set,
        )

    def _revoke(self, how: str) -> None:
        """Give up the assignment before rejoining: commit (auto-commit) and revoke, or, when
        fenced, report the partitions lost without committing."""
        owned = set(self._assignment)
        self._joined.clear()
        if self.membership is not None:
            core_group.give_up(self.membership.state)
        if how == "lost":
            self._call_listener("on_partitions_lost", owned)
        else:
            if self.config["auto.commit.enable"] and owned:
                self._try_commit("before rebalance")
            self._call_listener("on_partitions_revoked", owned)
        self._set_assignment([])

    def _wanted_topics(self) -> list[str]:
        if self._sub.pattern is None:
            return self._sub.topics
        self.cluster.refresh(None, allow_auto_create=False)
        return self._sub.matching(self.cluster.topics, self.config["exclude.internal.topics"])

    def _rebalance(self) -> bool:
        """Revoke, JoinGroup, SyncGroup (assigning when leader), then on_partitions_assigned."""
        how = self._rejoin or "revoke"
        try:
            return self._rebalance_once(how)
        except BaseException:
            if self._rejoin is None:
                self._rejoin = "revoke"  # the next poll tries again
            raise

    def _protocols(self, topics: list[str]) -> list[tuple[str, bytes]]:
        """JoinGroup's protocols: one per configured strategy; cooperative-sticky's
        Subscription (v3) lists the partitions owned now and their generation."""
        assert self.membership is not None
        state = self.membership.state
        return subscription_protocols(
            self.strategies,
            topics,
            registration(self.consumer_id, "static", dict.fromkeys(topics, 1)),
            state.owned,
            state.owned_generation,
        )

    def _join_and_sync(self, topics: list[str], protocols: list[tuple[str, bytes]]) -> bytes | None:
        """JoinGroup, SyncGroup (assigning when leader): this member's Assignment, or None."""
        assert self.membership is not None
        data = self.membership.join_and_sync(
            protocols,
            self.config["rebalance.max.retries"],
            self.config["exclude.internal.topics"],
            self._closed.is_set,
        )
        if data is not None:
            self._joined.set()
        return data

    def _rebalance_once(self, how: str) -> bool:
        """The eager rebalance (and any rebalance after the member lost its generation)."""
        assert self.membership is not None
        self._rejoin = None
        if self._assignment or how == "lost":
            self._revoke(how)
        topics = self._wanted_topics()
        self._sub.joined(topics)
        data = self._join_and_sync(topics, self._protocols(topics))
        if data is None:
            self._rejoin = how
            return False
        self._apply_assignment(data)
        return True

    def _start_cooperative_join(self) -> None:
        """Rejoin in the background, keeping (and fetching) every owned partition meanwhile;
        partitions of topics no longer subscribed are revoked first."""
        self._rejoin = None
        topics = self._wanted_topics()
        self._sub.joined(topics)
        gone = {tp for tp in self._assignment if tp.topic not in topics}
        if gone:
            self._revoke_some(gone)
        protocols = self._protocols(topics)
        self._joined.clear()
        if self._group_pool is None:
            self._group_pool = ThreadPoolExecutor(1, thread_name_prefix=f"{self.consumer_id}-join")
        self._joining = self._group_pool.submit(self._join_and_sync, topics, protocols)

    def _finish_cooperative_join(self) -> None:
        """Apply a background join's result (raises what it raised)."""
        future, self._joining = self._joining, None
        assert future is not None
        try:
            data = future.result()
        except BaseException:
            self._rejoin = self._rejoin or "revoke"
            raise
        if data is None:
            self._rejoin = self._rejoin or "revoke"
            return
        self._apply_assignment(data)

    def _revoke_some(self, revoked: set[TopicPartition]) -> None:
        """Cooperative revocation of some partitions: commit them (auto-commit), tell the
        listener (only those), stop reading them."""
        if self.config["auto.commit.enable"] and self.offset_store is not None:
            todo = {tp: off for tp, off in self._positions.items() if tp in revoked}
            if todo:
                try:
                    self.offset_store.commit(
                        {(tp.topic, tp.partition): o for tp, o in todo.items()}
                    )
                except KafkaError as exc:
                    log.info("%s: commit of revoked partitions failed: %s", self.consumer_id, exc)
        self._call_listener("on_partitions_revoked", set(revoked))
        if self.membership is not None:
            core_group.give_up_some(
                self.membership.state, ((tp.topic, tp.partition) for tp in revoked)
            )
        self._set_assignment([tp for tp in self._assignment if tp not in revoked])

    def _apply_assignment(self, data: bytes) -> None:
        """Take a new assignment in the core's order: revoke what is gone (cooperative: then
        rejoin so that its new owner gets it), keep the rest running, report only the added
        partitions."""
        assert self.membership is not None
        mine, _ = decode_assignment(data)
        state = self.membership.state
        state.owned = frozenset((tp.topic, tp.partition) for tp in self._assignment)
        change = core_group.take_assignment(state, ((t, p) for t, ps in mine.items() for p in ps))
        if change.revoked:
            self._revoke_some({TopicPartition(t, p) for t, p in change.revoked})
        if change.rejoin:
            self._rejoin = "revoke"  # KIP-429: the follow-up rebalance
        self._set_assignment(sorted(TopicPartition(t, p) for t, p in change.assignment))
        self._assigned()
        log.info(
            "%s (generation %d) assigned %s",
            self.consumer_id,
            self.membership.generation_id,
            sorted(self._assignment),
        )
        self._call_listener(
            "on_partitions_assigned", {TopicPartition(t, p) for t, p in change.added}
        )

    def _check_topics(self) -> None:
        """Rejoin when a pattern matches other topics or a subscribed topic's partition count
        changed (as the connector checks: every second with a pattern, else every 5 s)."""
        if not self._joined.is_set() or not self._sub.due(time.monotonic()):
            return
        try:
            topics = self._wanted_topics()
            if self._sub.pattern is None and topics:
                self.cluster.refresh(topics, allow_auto_create=False)
        except KafkaError as exc:
            log.info("%s: topic check failed: %s", self.consumer_id, exc)
            return
        counts = {
            t: len(self.cluster.topics[t].partitions) for t in topics if t in self.cluster.topics
        }
        if self._sub.changed(topics, counts):
            log.info("%s: subscribed topics changed; rejoining", self.consumer_id)
            self._rejoin = "revoke"
