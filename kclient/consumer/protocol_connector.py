"""The broker-coordinated ConsumerConnector under ``group.protocol=consumer`` (KIP-848).

One connector is one group member, not one per KafkaStream thread (DESIGN.md says why): the
coordinator assigns partitions to the member, and the connector spreads them over its own
streams (range, topic by topic, over the same string-sorted thread ids ``<consumer_id>-<i>`` as
the classic connector).  The member is kclient.Consumer's: the core's
:class:`~kclient.core.consumer_group.ConsumerMember` on a
:class:`~kclient.consumer.consumer_group.ConsumerGroupMember` heartbeat thread.

A new assignment is reconciled on the connector's rebalance thread (the executor the heartbeat
wakes), with the classic connector's safety steps: fetchers stop, queues and streams are
cleared, offsets are committed (auto-commit) with the current member epoch and the rebalance
listener hears the ownership, then the new partitions are spread over the streams (kept ones
go on from their consumed offset, new ones from the committed one) and only then is the
assignment acknowledged, so the coordinator hands a revoked partition to its next owner after
its offsets were committed.  Fenced, the member drops its partitions without committing and
joins again.  A topic filter is matched here (as the classic connector does, a Blacklist has
no broker-side regex): the member subscribes to the matching names and changes its
subscription when they change.  Shutdown leaves the group (epoch -1; a static member -2).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from kclient.config import Config, check_group_protocol, load_config
from kclient.core import consumer_group as core
from kclient.errors import KafkaError

from .connector import ConsumerConnector, ConsumerGroupMetadata
from .consumer_group import ConsumerGroupMember, member_from_config
from .group_connector import GroupConsumerConnector

__all__ = ["ConsumerProtocolConnector"]

log = logging.getLogger(__name__)


class ConsumerProtocolConnector(GroupConsumerConnector):
    """A broker-coordinated connector that is one KIP-848 group member."""

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        conf = (
            config
            if isinstance(config, Config) and not overrides
            else load_config("consumer", config, **overrides)
        )
        check_group_protocol(conf)  # before any connection is made
        super().__init__(conf)
        self.kip848 = ConsumerGroupMember(
            self.coordinator,
            member_from_config(self.group, self.config, self.group_instance_id),
            self.consumer_id,
            self.config["retry.backoff.ms"] / 1000.0,
            on_answer=self._after_heartbeat,
        )
        self.offset_store.fetching_member = self.kip848.member.generation
        self._answered = threading.Event()
        self._last_topic_check = 0.0

    def _generation(self) -> tuple[int, str]:
        return self.kip848.member.generation()

    @property
    def generation_id(self) -> int:
        """The member epoch."""
        return self.kip848.member.epoch

    @property
    def member_id(self) -> str:
        return self.kip848.member.member_id

    @member_id.setter
    def member_id(self, value: str) -> None:
        self.kip848.member.member_id = value

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group id with this member's epoch, member id and instance id."""
        m = self.kip848.member
        return ConsumerGroupMetadata(self.group, m.epoch, m.member_id, m.instance_id)

    # -- start ------------------------------------------------------------------------------------
    def _start(self) -> None:
        self._subscribe()
        self._first_rebalance()
        if not self._shutting_down.is_set():
            self._start_auto_commit()

    def _subscribe(self) -> None:
        """Subscribe the member to this connector's topics (a filter's: those it matches now);
        the next heartbeat carries a change."""
        topics = self._my_topics()
        if self.kip848.member.topics != tuple(sorted(set(topics))):
            self.kip848.subscribe(topics, None)

    def _after_heartbeat(self) -> None:
        """On the heartbeat thread: wake the reconciliation (a new assignment, fencing, a
        fatal error); a topic filter's topics are checked every second."""
        self._answered.set()
        member = self.kip848.member
        if self.kip848.fatal is not None or member.state in (core.RECONCILING, core.FENCED):
            self.executor.trigger("assignment changed")
        if self.topic_filter is not None and time.monotonic() - self._last_topic_check >= 1.0:
            self._last_topic_check = time.monotonic()
            try:
                self._subscribe()
            except KafkaError as exc:
                log.info("%s: topic check failed: %s", self.consumer_id, exc)

    def _wait_for_answer(self) -> None:
        """While joining, wait for the coordinator's first answer (a request's time at most)."""
        deadline = time.monotonic() + self.settings.request_timeout_ms / 1000.0
        while (
            self.kip848.member.state == core.JOINING
            and self.kip848.fatal is None
            and not self._shutting_down.is_set()
            and time.monotonic() < deadline
        ):
            self._answered.clear()
            self._answered.wait(0.1)

    def _rebalance_attempt(self, attempt: int) -> bool:
        """Reconcile what the coordinator assigned; False: no assignment yet (retried)."""
        self._wait_for_answer()
        m = self.kip848
        if m.fatal is not None:
            raise m.fatal
        if m.member.state == core.FENCED:
            log.info("%s: fenced; its partitions are lost, joining again", self.consumer_id)
            self._close_fetchers(commit=False)
            with self._offsets_lock:
                self.registry = {}
            m.lost()
            self._wait_for_answer()
        done = m.pending()
        if done is None:
            return m.member.has_assignment and m.member.state != core.FENCED
        partitions: dict[str, list[int]] = {}
        for t, p in sorted(done.assignment):
            partitions.setdefault(t, []).append(p)
        mine = self._spread_over_threads(partitions)
        self._close_fetchers(commit=True)
        self._before_release()
        with self._offsets_lock:
            kept = {
                tp: info.consumed_offset
                for tp, info in self.registry.items()
                if tp in mine and info.consumed_offset >= 0
            }
            self.registry = {}
        fresh = [tp for tp in mine if tp not in kept]
        offsets = {**(self.offset_store.fetch(fresh) if fresh else {}), **kept}
        if self._shutting_down.is_set():
            return False
        self.registry = self._new_registry(mine, offsets)
        self._start_fetchers()
        m.acknowledge(done)
        log.info(
            "%s (member epoch %d) owns %s",
            self.consumer_id,
            m.member.epoch,
            {f"{t}/{p}": th for (t, p), th in sorted(mine.items())},
        )
        self._warn_missing_topics()
        return True

    def commit_offsets(self) -> None:
        """Commit with the member epoch (a stale epoch is retried with the newer one; fencing
        is the heartbeat's to find and recover)."""
        ConsumerConnector.commit_offsets(self)

    # -- shutdown ----------------------------------------------------------------------------------
    def _stop_coordination(self) -> None:
        self.executor.stop()
        if self.executor.is_alive():
            self.executor.join(30)
        self.kip848.stop()

    def _release(self) -> None:
        with self._offsets_lock:
            self.registry = {}
        self.kip848.leave()
