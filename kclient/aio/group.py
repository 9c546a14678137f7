"""AIOConsumer's group member: the core's membership and offset conversations on asyncio.

Everything the member says to the coordinator is :mod:`kclient.core.group` and
:mod:`kclient.core.offsets` (the same conversations kclient.Consumer and the
GroupConsumerConnector run on threads), over :class:`~kclient.aio.coordinator.AIOCoordinator`.
This adapter only binds them to one member: its subscription's protocols (one per configured
assignor; cooperative-sticky's with the partitions owned), the leader's assignor, and
TopicPartition keys for the offsets.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from kclient.consumer.connector import ConsumerGroupMetadata
from kclient.consumer.group_protocol import leader_assignment, registration
from kclient.core import group as core_group
from kclient.core.consumer_protocol import subscription_protocols
from kclient.core.group import MemberState
from kclient.core.offsets import commit_offsets, fetch_offsets
from kclient.core.prefetch import PartitionState
from kclient.core.subscription import Subscription
from kclient.errors import FencedInstanceIdError, IllegalStateError, KafkaError
from kclient.metrics import ClientMetrics
from kclient.protocol.consumer_protocol import decode_assignment
from kclient.structs import TopicPartition

from .cluster import AIOCluster
from .coordinator import AIOCoordinator

__all__ = ["AIOGroup", "ConsumerMembership"]

log = logging.getLogger(__name__)


class AIOGroup:
    """One member of a consumer group (see the module docstring)."""

    def __init__(
        self,
        cluster: AIOCluster,
        group: str,
        consumer_id: str,
        strategies: Sequence[str],
        session_timeout_ms: int,
        backoff_ms: int,
        retries: int,
        exclude_internal: bool = True,
        instance_id: str | None = None,
    ) -> None:
        self.group, self.consumer_id = group, consumer_id
        self.strategies = list(strategies)
        self.retries, self.backoff = retries, backoff_ms / 1000.0
        self.exclude_internal = exclude_internal
        # the coordinator may hold a JoinGroup for a whole rebalance (up to the session
        # timeout): its connection waits longer than the others
        settings = cluster.settings
        settings = settings.replace(
            request_timeout_ms=max(settings.request_timeout_ms, 2 * session_timeout_ms + 5000)
        )
        self.coordinator = AIOCoordinator(cluster, group, backoff_ms, retries, settings)
        self.state = MemberState(group, session_timeout_ms, instance_id or None)

    async def join(
        self, topics: list[str], attempts: int, cancelled: Callable[[], bool] = lambda: False
    ) -> bytes | None:
        """JoinGroup, the leader's assignment, SyncGroup: this member's Assignment bytes
        (None: the group kept moving for ``attempts`` rounds)."""
        state = self.state
        protocols = subscription_protocols(
            self.strategies,
            topics,
            registration(self.consumer_id, "static", dict.fromkeys(topics, 1)),
            state.owned,
            state.owned_generation,
        )
        return await self.coordinator.run(
            core_group.join_and_sync(
                state,
                self.coordinator.state,
                protocols,
                partial(leader_assignment, exclude_internal=self.exclude_internal),
                attempts,
                cancelled,
            )
        )

    async def heartbeats(
        self,
        interval_s: float,
        active: Callable[[], bool],
        on_rejoin: Callable[[str, int], None],
        on_fenced: Callable[[FencedInstanceIdError], None],
    ) -> None:
        """The heartbeat loop (:func:`kclient.core.group.heartbeats`) until cancelled."""
        await self.coordinator.run(
            core_group.heartbeats(
                self.state, self.coordinator.state, interval_s, active, on_rejoin, on_fenced
            )
        )

    async def heartbeat(self) -> int:
        """One Heartbeat; its error code."""
        return await self.coordinator.run(core_group.heartbeat(self.state, self.coordinator.state))

    async def leave(self) -> None:
        """LeaveGroup (a static member: none, its session keeps the place), then forget the
        member id and generation."""
        if self.state.instance_id is not None:
            self.state.forget()
            return
        await self.coordinator.run(core_group.leave(self.state, self.coordinator.state))

    def generation(self) -> tuple[int, str]:
        """(generation id, member id): what OffsetCommit sends."""
        return self.state.generation()

    def fetching_member(self) -> Callable[[], tuple[int, str]] | None:
        """What names the member in OffsetFetch v9 (a KIP-848 member; classic: none)."""
        return None

    async def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """OffsetFetch: the committed offset of each partition (-1: none)."""
        found = await self.coordinator.run(
            fetch_offsets(
                self.coordinator.state,
                self.group,
                [(tp.topic, tp.partition) for tp in tps],
                self.fetching_member(),
            )
        )
        return {TopicPartition(t, p): off for (t, p), off in found.items()}

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """OffsetCommit with this member's generation (see :func:`commit_offsets`)."""
        await self.coordinator.run(
            commit_offsets(
                self.coordinator.state,
                self.group,
                {(tp.topic, tp.partition): off for tp, off in offsets.items()},
                self.state.generation,
                self.state.instance_id,
                self.retries,
                self.backoff,
            )
        )

    def close(self) -> None:
        """Close the coordinator connection."""
        self.coordinator.close()


class ConsumerMembership:
    """AIOConsumer's rebalances over :class:`AIOGroup`, in the core's listener order: eager
    (revoke everything, join, assign) or cooperative (join in a task while the owned
    partitions keep being returned; revoke only those that moved, then rejoin), the heartbeat
    task, and the topic check of pattern subscriptions."""

    # the consumer's state these methods work on (set by AIOConsumer.__init__)
    config: Any
    cluster: AIOCluster
    consumer_id: str
    cooperative: bool
    _group: AIOGroup | None
    _states: dict[TopicPartition, PartitionState]
    _pending: Any
    _listener: Any
    _metrics: ClientMetrics
    _sub: Subscription
    _rejoin: str | None
    _join_task: asyncio.Task[bytes | None] | None
    _joining: bool
    _closed: bool
    _manual: bool
    _auto_commit: bool
    _fatal: KafkaError | None

    # and its methods these call
    _set_assignment: Callable[[list[TopicPartition]], None]
    _settle: Callable[[], None]
    _kick: Callable[[], None]
    _try_commit: Callable[[str], Awaitable[None]]
    _resolve_positions: Callable[[], Awaitable[None]]

    def group_metadata(self) -> ConsumerGroupMetadata:
        """Group id, generation, member id and instance id: what
        Producer.send_offsets_to_transaction takes."""
        if self._group is None:
            raise IllegalStateError("group_metadata() needs a group.id")
        generation, member_id = self._group.generation()
        return ConsumerGroupMetadata(
            self._group.group, generation, member_id, self._group.state.instance_id
        )

    async def _cancel_join(self) -> bool:
        """Stop a cooperative join under way; whether there was one.  The coordinator may hold
        that JoinGroup for a whole rebalance: its connection is dropped (LeaveGroup
        reconnects) instead of waiting behind it."""
        joining, self._join_task = self._join_task, None
        if joining is None or self._group is None:
            return False
        joining.cancel()
        self._group.coordinator.close("consumer closed during a rebalance")
        await asyncio.gather(joining, return_exceptions=True)
        self._joining = False
        return True

    async def _group_step(self) -> None:
        """Finish a cooperative join that ended, start the rebalance that is due (cooperative:
        in a task, keeping the owned partitions; eager: here), or check the topics."""
        try:
            task = self._join_task
            if task is not None and task.done():
                self._join_task = None
                await self._finish_join(task)
            if self._rejoin is not None and self._join_task is None:
                if self.cooperative and self._rejoin != "lost" and self._states:
                    await self._start_cooperative_join()
                else:
                    await self._rebalance(self._rejoin)
            elif self._rejoin is None and self._join_task is None:
                await self._check_topics()
        except KafkaError as exc:
            # the coordinator not ready yet (a fresh cluster) or moving: the next getmany
            # tries again, as Java's poll (and kclient.Consumer's) does
            if not getattr(exc, "retriable", False) or isinstance(exc, FencedInstanceIdError):
                raise
            log.info("%s: rebalance not done yet: %s; retrying", self.consumer_id, exc)
            self._rejoin = self._rejoin or "revoke"
            await asyncio.sleep(min(self.config["rebalance.backoff.ms"], 1000) / 1000.0)

    async def _rebalance(self, how: str) -> None:
        """The eager rebalance (and any rebalance after the member lost its generation):
        revoke everything (or report it lost), JoinGroup, SyncGroup, assign."""
        group = self._group
        assert group is not None
        if self._states:
            await self._revoke_all(how)
        self._set_assignment([])
        self._pending.clear()
        self._rejoin = None
        topics = await self._wanted_topics()
        self._sub.joined(topics)
        self._joining = True  # no heartbeats while JoinGroup/SyncGroup run
        try:
            data = await group.join(
                topics, self.config["rebalance.max.retries"], lambda: self._closed
            )
        except BaseException:
            self._rejoin = "revoke"
            raise
        finally:
            self._joining = False
        if data is None:
            self._rejoin = "revoke"
            await asyncio.sleep(self.config["retry.backoff.ms"] / 1000.0)
            return
        await self._apply_assignment(data)

    async def _revoke_all(self, how: str) -> None:
        """Before an eager rejoin: commit (auto-commit) and revoke every partition, or, when
        the generation was lost, report them lost without committing."""
        assert self._group is not None
        owned = set(self._states)
        core_group.give_up(self._group.state)
        if how == "lost":
            await self._call_listener("on_partitions_lost", owned)
            return
        if self._auto_commit:
            await self._try_commit("revoke")
        await self._call_listener("on_partitions_revoked", owned)

    async def _leave(self) -> None:
        """LeaveGroup (a static member's: none); a failure is logged, not raised."""
        assert self._group is not None
        try:
            await self._group.leave()
        except KafkaError as exc:
            log.info("%s: LeaveGroup failed: %s", self.consumer_id, exc)

    async def _start_cooperative_join(self) -> None:
        """Rejoin in a task, keeping (and returning) every owned partition meanwhile; the
        partitions of topics no longer subscribed are revoked first."""
        assert self._group is not None
        self._rejoin = None
        topics = await self._wanted_topics()
        self._sub.joined(topics)
        gone = {tp for tp in self._states if tp.topic not in topics}
        if gone:
            await self._revoke_some(gone)
        self._joining = True
        self._join_task = asyncio.get_running_loop().create_task(
            self._join(topics), name="kclient-aio-join"
        )

    async def _join(self, topics: list[str]) -> bytes | None:
        assert self._group is not None
        try:
            return await self._group.join(
                topics, self.config["rebalance.max.retries"], lambda: self._closed
            )
        finally:
            self._joining = False
            self._kick()  # the caller's getmany applies the result

    async def _finish_join(self, task: asyncio.Task[bytes | None]) -> None:
        data = None
        try:
            data = task.result()  # raises what the join raised
        finally:
            if data is None:  # failed, or the group kept moving: again
                self._rejoin = self._rejoin or "revoke"
        if data is not None:
            await self._apply_assignment(data)

    async def _revoke_some(self, revoked: set[TopicPartition]) -> None:
        """Cooperative revocation of some partitions: commit them (auto-commit), tell the
        listener (only those), stop reading them."""
        assert self._group is not None
        self._settle()
        if self._auto_commit:
            todo = {
                tp: self._states[tp].position
                for tp in revoked
                if tp in self._states and self._states[tp].position >= 0
            }
            if todo:
                try:
                    await self._group.commit(todo)
                except KafkaError as exc:
                    log.info("%s: commit of revoked partitions failed: %s", self.consumer_id, exc)
        await self._call_listener("on_partitions_revoked", set(revoked))
        core_group.give_up_some(self._group.state, ((tp.topic, tp.partition) for tp in revoked))
        self._set_assignment([tp for tp in self._states if tp not in revoked])

    async def _apply_assignment(self, data: bytes) -> None:
        """Take a new assignment in the core's order: revoke what is gone (cooperative: then
        rejoin so that its new owner gets it), keep the rest, report the added partitions."""
        group = self._group
        assert group is not None
        mine, _ = decode_assignment(data)
        group.state.owned = frozenset((tp.topic, tp.partition) for tp in self._states)
        change = core_group.take_assignment(
            group.state, ((t, p) for t, ps in mine.items() for p in ps)
        )
        if change.revoked:
            await self._revoke_some({TopicPartition(t, p) for t, p in change.revoked})
        if change.rejoin:
            self._rejoin = "revoke"  # KIP-429: the follow-up rebalance
        tps = sorted(TopicPartition(t, p) for t, p in change.assignment)
        self._set_assignment(tps)
        self._metrics.rebalanced()
        self._sub.assigned(time.monotonic())
        log.info("%s (generation %d) assigned %s", self.consumer_id, group.state.generation_id, tps)
        await self._resolve_positions()
        await self._call_listener(
            "on_partitions_assigned", {TopicPartition(t, p) for t, p in change.added}
        )

    async def _wanted_topics(self) -> list[str]:
        if self._sub.pattern is None:
            return self._sub.topics
        await self.cluster.refresh(None, allow_auto_create=False)
        return self._sub.matching(self.cluster.topics, self.config["exclude.internal.topics"])

    async def _check_topics(self) -> None:
        """Rejoin when a pattern matches other topics or a subscribed topic's partition count
        changed (every second with a pattern, else every 5 s), as kclient.Consumer does."""
        if (
            self._group is None
            or not self._group.state.member_id
            or not self._sub.due(time.monotonic())
        ):
            return
        try:
            topics = await self._wanted_topics()
            if self._sub.pattern is None and topics:
                await self.cluster.refresh(topics, allow_auto_create=False)
        except KafkaError as exc:
            log.info("%s: topic check failed: %s", self.consumer_id, exc)
            return
        if self._sub.changed(
            topics,
            {t: len(self.cluster.topics[t].partitions) for t in topics if t in self.cluster.topics},
        ):
            log.info("%s: subscribed topics changed; rejoining", self.consumer_id)
            self._rejoin = "revoke"

    async def _call_listener(self, name: str, partitions: set[TopicPartition]) -> None:
        fn = getattr(self._listener, name, None)
        if fn is None and name == "on_partitions_lost":  # Java's default: revoked
            fn = getattr(self._listener, "on_partitions_revoked", None)
        if fn is None:
            return
        result = fn(partitions)
        if inspect.isawaitable(result):
            await result

    async def _heartbeat_loop(self) -> None:
        """The core's heartbeat loop while a member; it flags a rebalance (the next getmany
        carries it out) or a fatal fencing."""
        group = self._group
        assert group is not None

        def active() -> bool:
            return self._rejoin is None and not self._manual and not self._joining

        def rejoin(how: str, code: int) -> None:
            if not self._joining and self._rejoin is None:
                self._rejoin = how
                self._kick()

        def fenced(exc: FencedInstanceIdError) -> None:
            self._fatal = exc
            self._kick()

        await group.heartbeats(
            self.config["heartbeat.interval.ms"] / 1000.0, active, rejoin, fenced
        )
