"""kclient.Consumer's member under ``group.protocol=consumer`` (KIP-848), on threads.

The state machine is the core's (:mod:`kclient.core.consumer_group`); this binds it to a
:class:`~kclient.consumer.offsets.Coordinator` and a heartbeat thread that sends one
ConsumerGroupHeartbeat every interval the coordinator gives, at once when the member joins or
acknowledges.  What an assignment means for the application (commit, the listener, the new
partitions) is done by ``poll()`` on the application's thread, as Java does
(:class:`ConsumerProtocolPoll`); then :meth:`ConsumerGroupMember.acknowledge` wakes the
heartbeat thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kclient.core import consumer_group as core
from kclient.core.consumer_group import ConsumerMember, Reconciliation
from kclient.errors import KafkaError, UnsupportedVersionError
from kclient.structs import TopicPartition

from .offsets import Coordinator

__all__ = ["ConsumerGroupMember", "ConsumerProtocolPoll", "member_from_config"]

log = logging.getLogger(__name__)


def member_from_config(group: str, conf: Any, instance_id: str | None) -> ConsumerMember:
    """The core member a consumer's configuration describes."""
    return ConsumerMember(
        group,
        instance_id=instance_id,
        rack_id=conf["client.rack"] or None,
        server_assignor=conf["group.remote.assignor"] or None,
    )


class ConsumerGroupMember:
    """The core's :class:`ConsumerMember` with its heartbeat thread."""

    def __init__(
        self,
        coordinator: Coordinator,
        member: ConsumerMember,
        name: str,
        backoff_s: float,
        on_answer: Callable[[], None] | None = None,
    ) -> None:
        self.coordinator, self.member, self.name = coordinator, member, name
        self.backoff_s = backoff_s
        #: called on the heartbeat thread after each heartbeat (answered or failed): the
        #: connector reconciles on its own thread, which this wakes
        self.on_answer = on_answer
        self.fatal: KafkaError | None = None
        self._poke = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def subscribe(self, topics: Iterable[str] | None, regex: str | None) -> None:
        """Subscribe (joining if not in the group) and make sure heartbeats run."""
        self.member.subscribe(topics, regex)
        self._poke.set()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, daemon=True, name=f"{self.name}-heartbeat"
            )
            self._thread.start()

    def _loop(self) -> None:
        """One heartbeat whenever due, until stopped."""
        while not self._stopped.is_set():
            wait = self.member.wait_s() if self.member.active else 1.0
            self._poke.wait(wait)
            self._poke.clear()
            if self._stopped.is_set() or not self.member.active:
                continue
            try:
                self.coordinator.run(core.heartbeat(self.member, self.coordinator.state))
            except UnsupportedVersionError as exc:
                self.fatal = UnsupportedVersionError(
                    f"group.protocol=consumer: the coordinator of {self.member.group!r} does not "
                    f"speak ConsumerGroupHeartbeat (Kafka 4.0+ does): {exc}"
                )
                self.member.state = core.FATAL
            except KafkaError as exc:
                if self.member.state == core.FATAL:
                    self.fatal = exc
                else:
                    log.info("%s: heartbeat failed: %s", self.name, exc)
                    self._stopped.wait(self.backoff_s)
            if self.on_answer is not None:
                self.on_answer()

    def wake(self) -> None:
        """Heartbeat now (an acknowledgement, a rejoin)."""
        self._poke.set()

    def pending(self) -> Reconciliation | None:
        """The assignment to reconcile now, naming its topic ids first (a Metadata request)
        when needed; None: nothing to do yet."""
        if self.member.state != core.RECONCILING:
            return None
        if self.member.unresolved():
            self.coordinator.run(core.resolve_topics(self.member))
        return core.reconcile(self.member)

    def acknowledge(self, done: Reconciliation) -> None:
        """The listener ran: own the new assignment and say so at once."""
        core.acknowledge(self.member, done)
        self.wake()

    def lost(self) -> set[TopicPartition]:
        """After fencing: the partitions lost; the member joins again."""
        gone = core.lost(self.member)
        self.wake()
        return {TopicPartition(t, p) for t, p in gone}

    def stop(self) -> None:
        """End the heartbeat thread."""
        self._stopped.set()
        self._poke.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def leave(self) -> None:
        """Stop heartbeating and leave (epoch -1; a static member -2)."""
        self.stop()
        try:
            self.coordinator.run(core.leave(self.member, self.coordinator.state))
        except KafkaError as exc:
            log.info("%s: leaving the group failed: %s", self.name, exc)
        self._stopped.clear()


class ConsumerProtocolPoll:
    """kclient.Consumer's poll-side steps under the consumer protocol, in Java's order."""

    _kip848: ConsumerGroupMember | None
    _assignment: list[TopicPartition]
    _fatal: KafkaError | None
    _joined: threading.Event
    consumer_id: str

    _call_listener: Callable[[str, set[TopicPartition]], None]
    _revoke_some: Callable[[set[TopicPartition]], None]
    _set_assignment: Callable[[list[TopicPartition]], None]
    _assigned: Callable[[], None]

    def _kip848_step(self) -> None:
        """Fencing (partitions lost), then a pending assignment: commit and revoke what left,
        take the rest, report what was added, acknowledge."""
        m = self._kip848
        assert m is not None
        if m.fatal is not None:
            self._fatal = m.fatal
            raise m.fatal
        if m.member.state == core.FENCED:
            self._joined.clear()
            gone = {TopicPartition(t, p) for t, p in m.member.owned}
            self._set_assignment([])
            self._call_listener("on_partitions_lost", gone)  # nothing committed
            m.lost()  # then join again
        try:
            done = m.pending()
        except KafkaError as exc:
            if not getattr(exc, "retriable", False):
                raise
            log.info("%s: naming the assigned topics failed: %s", self.consumer_id, exc)
            return
        if done is None:
            return
        revoked = {TopicPartition(t, p) for t, p in done.revoked}
        if revoked:
            self._revoke_some(revoked)
        self._set_assignment(sorted(TopicPartition(t, p) for t, p in done.assignment))
        self._assigned()
        log.info(
            "%s (member epoch %d) assigned %s",
            self.consumer_id,
            m.member.epoch,
            sorted(self._assignment),
        )
        self._call_listener("on_partitions_assigned", {TopicPartition(t, p) for t, p in done.added})
        m.acknowledge(done)
        self._joined.set()
