"""AIOConsumer's member under ``group.protocol=consumer`` (KIP-848), on asyncio.

The state machine is the core's (:mod:`kclient.core.consumer_group`), as kclient.Consumer's
(:mod:`kclient.consumer.consumer_group`): a heartbeat task sends one ConsumerGroupHeartbeat every
interval the coordinator gives (at once when joining or acknowledging) and flags the consumer
when an assignment or fencing needs the application; the next ``getmany`` / ``getone``
carries it out in Java's order (commit and ``on_partitions_revoked`` for what left, then
``on_partitions_assigned`` for what was added, then the acknowledgement).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kclient.consumer.consumer_group import member_from_config
from kclient.core import consumer_group as core
from kclient.core.consumer_group import ConsumerMember, Reconciliation
from kclient.core.offsets import commit_offsets
from kclient.errors import KafkaError, UnsupportedVersionError
from kclient.structs import TopicPartition

from .cluster import AIOCluster
from .group import AIOGroup, ConsumerMembership
from .timeouts import within

__all__ = ["AIOConsumerGroup", "ConsumerProtocolSteps"]

log = logging.getLogger(__name__)


class AIOConsumerGroup(AIOGroup):
    """An :class:`AIOGroup` whose membership is the consumer protocol's member."""

    def __init__(
        self, cluster: AIOCluster, group: str, consumer_id: str, conf: Any, instance_id: str | None
    ) -> None:
        super().__init__(
            cluster,
            group,
            consumer_id,
            [],
            conf["session.timeout.ms"],
            conf["retry.backoff.ms"],
            conf["offsets.commit.max.retries"],
            conf["exclude.internal.topics"],
            instance_id,
        )
        self.member: ConsumerMember = member_from_config(group, conf, instance_id)
        self.fatal: KafkaError | None = None
        self._poke: asyncio.Event | None = None

    def fetching_member(self) -> Callable[[], tuple[int, str]] | None:
        """The member's (epoch, member id), sent with OffsetFetch v9."""
        return self.member.generation

    def generation(self) -> tuple[int, str]:
        """(member epoch, member id): what OffsetCommit v9 sends."""
        return self.member.generation()

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """OffsetCommit with the member epoch (STALE_MEMBER_EPOCH: again with the newer one)."""
        await self.coordinator.run(
            commit_offsets(
                self.coordinator.state,
                self.group,
                {(tp.topic, tp.partition): off for tp, off in offsets.items()},
                self.member.generation,
                self.member.instance_id,
                self.retries,
                self.backoff,
            )
        )

    async def heartbeats(self, needs_consumer: Callable[[], None]) -> None:  # type: ignore[override]
        """One heartbeat whenever due, until cancelled; ``needs_consumer()`` when an assignment
        or fencing waits for the application (or the member failed for good)."""
        member, poke = self.member, asyncio.Event()
        self._poke = poke
        while True:
            try:
                await within(poke.wait(), member.wait_s() if member.active else 1.0)
            except asyncio.TimeoutError:
                pass
            poke.clear()
            if not member.active:
                continue
            try:
                await self.coordinator.run(core.heartbeat(member, self.coordinator.state))
            except UnsupportedVersionError as exc:
                self.fatal = UnsupportedVersionError(
                    f"group.protocol=consumer: the coordinator of {member.group!r} does not "
                    f"speak ConsumerGroupHeartbeat (Kafka 4.0+ does): {exc}"
                )
                member.state = core.FATAL
            except KafkaError as exc:
                if member.state != core.FATAL:
                    log.info("%s: heartbeat failed: %s", self.consumer_id, exc)
                    await asyncio.sleep(self.backoff)
                    continue
                self.fatal = exc
            if member.state in (core.RECONCILING, core.FENCED, core.FATAL):
                needs_consumer()

    def wake(self) -> None:
        """Heartbeat now (an acknowledgement, a rejoin)."""
        if self._poke is not None:
            self._poke.set()

    async def pending(self) -> Reconciliation | None:
        """The assignment to reconcile now (its topic ids named first by a Metadata request
        when needed), or None."""
        if self.member.state != core.RECONCILING:
            return None
        if self.member.unresolved():
            await self.coordinator.run(core.resolve_topics(self.member))
        return core.reconcile(self.member)

    async def leave(self) -> None:
        """Leave the group (epoch -1; a static member -2, keeping its place for the session)."""
        await self.coordinator.run(core.leave(self.member, self.coordinator.state))


class ConsumerProtocolSteps(ConsumerMembership):
    """AIOConsumer's group steps, the consumer protocol's when its group is one."""

    def _kip848(self) -> AIOConsumerGroup | None:
        group = self._group
        return group if isinstance(group, AIOConsumerGroup) else None

    async def _group_step(self) -> None:
        group = self._kip848()
        if group is None:
            await super()._group_step()
            return
        self._rejoin = None
        if group.fatal is not None:
            self._fatal = group.fatal
            raise group.fatal
        member = group.member
        regex = None if self._sub.pattern is None else self._sub.pattern.pattern
        topics = None if regex is not None else tuple(sorted(self._sub.topics))
        if (
            not member.active
            and member.state != core.FENCED
            or (member.topics, member.regex) != (topics, regex)
        ):
            member.subscribe(topics, regex)  # the broker matches a regex
            group.wake()
        if member.state == core.FENCED:
            gone = {TopicPartition(t, p) for t, p in member.owned}
            self._set_assignment([])
            self._pending.clear()
            await self._call_listener("on_partitions_lost", gone)  # nothing committed
            core.lost(member)  # then join again
            group.wake()
        await self._reconcile(group)

    async def _reconcile(self, group: AIOConsumerGroup) -> None:
        """A pending assignment: commit and revoke what left, take the rest, report what was
        added, acknowledge."""
        done = await group.pending()
        if done is None:
            return
        revoked = {TopicPartition(t, p) for t, p in done.revoked}
        if revoked:
            await self._revoke_some(revoked)
        tps = sorted(TopicPartition(t, p) for t, p in done.assignment)
        self._set_assignment(tps)
        self._metrics.rebalanced()
        self._sub.assigned(time.monotonic())
        log.info("%s (member epoch %d) assigned %s", self.consumer_id, group.member.epoch, tps)
        await self._resolve_positions()
        await self._call_listener(
            "on_partitions_assigned", {TopicPartition(t, p) for t, p in done.added}
        )
        core.acknowledge(group.member, done)
        group.wake()

    async def _heartbeat_loop(self) -> None:
        group = self._kip848()
        if group is None:
            await super()._heartbeat_loop()
            return

        def needs_consumer() -> None:
            self._rejoin = self._rejoin or "kip848"
            self._kick()

        await group.heartbeats(needs_consumer)

    async def _leave(self) -> None:
        group = self._kip848()
        if group is None:
            await super()._leave()
            return
        if self._states:  # Java: on_partitions_revoked before leaving
            owned = set(self._states)
            self._set_assignment([])
            await self._call_listener("on_partitions_revoked", owned)
        try:
            await group.leave()
        except KafkaError as exc:
            log.info("%s: leaving the group failed: %s", self.consumer_id, exc)
