"""``kclient.aio.AIOShareConsumer``: a share-group member (KIP-932) on asyncio.

The same core conversations as the threaded :class:`kclient.ShareConsumer`
(:mod:`kclient.core.share_group`, :mod:`kclient.core.share_fetch`), driven by the asyncio
driver: a heartbeat task, and fetching in the task that awaits :meth:`poll` (or iterates
with ``async for``).  Its configuration is Java's KafkaShareConsumer's, as the threaded one's,
and it fetches ahead as that one does: a poll that returns records sends the next ShareFetch in
a task, whose answer the next poll, commit or close takes.  As the threaded one's,
``commit_sync`` writes its ShareAcknowledge behind a fetch still on the wire (the share
session's epoch counts the requests in flight, :class:`kclient.core.share_fetch.ShareSession`;
Kafka answers a connection's requests in order), or, when the poll after next would run
short, writes the next fetch carrying the acknowledgements instead and takes its answer; either
way it builds the next poll's records while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from kclient.consumer.connector import connection_settings
from kclient.consumer.share_common import ShareFace, absorb, report, wanted_by_leader
from kclient.core.share_fetch import AckOutcome, FetchOutcome, share_acknowledge, share_fetch
from kclient.core.share_group import share_heartbeat, share_leave
from kclient.errors import KafkaError, WakeupError
from kclient.structs import AcknowledgeType, ShareConsumerRecord, TopicPartition

from .cluster import AIOCluster
from .coordinator import AIOCoordinator
from .driver import ClusterTransport, InFlight, run
from .timeouts import within

__all__ = ["AIOShareConsumer"]

log = logging.getLogger("kclient.share")
_ACCEPT = int(AcknowledgeType.ACCEPT)


class AIOShareConsumer(ShareFace):
    """A share-group member for asyncio: ``subscribe``, ``await poll()`` / ``async for``,
    ``acknowledge``, ``await commit_sync()``, ``await close()``."""

    def __init__(self, *topics: str | Mapping[str, Any], **config: Any) -> None:
        topics = self._setup(topics, config)
        settings = connection_settings(self.config)
        self.cluster = AIOCluster(self.settings.bootstrap(), settings)
        self._coordinator = AIOCoordinator(
            self.cluster, self.group_id, self.config["retry.backoff.ms"], settings=settings
        )
        self._lock: asyncio.Lock | None = None
        self._ahead: InFlight[FetchOutcome] | None = None
        self._wakeup = False
        #: set when a heartbeat changes the assignment: a poll waiting for partitions goes on
        self._assigned = asyncio.Event()
        self._heartbeat: asyncio.Task[None] | None = None
        self._beat: asyncio.Event | None = None
        if topics:
            self._member.subscribe([str(t) for t in topics])

    async def __aenter__(self) -> AIOShareConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start heartbeating when subscribed (the first poll does it too)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
            self._beat = asyncio.Event()
        if self._member.subscription and self._heartbeat is None:
            self._heartbeat = asyncio.get_running_loop().create_task(self._heartbeats())

    # -- membership --------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group reading ``topics`` (from the next poll)."""
        self._check_open("subscribe")
        self._member.subscribe([topics] if isinstance(topics, str) else topics)
        if self._beat is not None:
            self._beat.set()

    async def _heartbeats(self) -> None:
        coord = self._coordinator
        assert self._beat is not None
        while True:
            generation = self._member.generation
            try:
                await coord.run(share_heartbeat(coord.state, self._member))
                wait = self._member.heartbeat_interval_s
            except KafkaError as exc:
                backoff = self._heartbeat_failed(exc)
                if backoff is None:
                    return
                wait = backoff
            if self._member.generation != generation:
                self._assigned.set()
            self._beat.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._beat.wait(), wait)

    # -- consuming ---------------------------------------------------------------------
    async def poll(self, timeout: float | None = None) -> list[ShareConsumerRecord]:
        """Records acquired for this member (``max.poll.records``, whole record batches in
        batch_optimized mode, as the threaded ShareConsumer), waiting up to
        ``timeout`` seconds (None: without limit); settles the previous poll's records as the
        threaded ShareConsumer does."""
        self._check_open("poll")
        await self.start()
        state = self._state
        self.settings.before_poll(state)
        seconds = float("inf") if timeout is None or timeout < 0 else float(timeout)
        deadline = time.monotonic() + seconds
        if state.held() < self.settings.max_poll_records:  # else it is taken later, behind
            await self._finish_ahead()
        while True:
            self._raise_pending()
            if state.held():
                self._fetch_ahead()  # before the records are built: the broker works meanwhile
                records = state.take(self.settings.max_poll_records, self.settings.explicit)
                if records:
                    return records
                if self._ahead is not None:  # only gaps were acquired: take the next answer
                    await self._finish_ahead()
                    continue
            await self._round(max(0.0, min(deadline - time.monotonic(), 3600.0)))
            if not state.held() and time.monotonic() >= deadline:
                self._raise_pending()
                return []

    async def _round(self, remaining: float) -> None:
        member, state = self._member, self._state
        wanted, stale = wanted_by_leader(member, self.cluster)
        if stale and member.subscription:
            member.learn_topics(
                await self.cluster.refresh(member.subscription, allow_auto_create=False)
            )
            wanted, _ = wanted_by_leader(member, self.cluster)
        if not wanted and not state.has_pending():  # until partitions come (or 50 ms)
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._assigned.wait(), min(remaining, 0.05))
            self._assigned.clear()
            return
        assert self._lock is not None
        async with self._lock:
            outcome = await run(
                share_fetch(state, wanted, int(remaining * 1000)), ClusterTransport(self.cluster)
            )
        if await self._absorb(outcome):
            await asyncio.sleep(min(remaining, self.settings.backoff_s))

    async def _absorb(self, outcome: FetchOutcome) -> bool:
        """A round's results taken (see :func:`absorb`); whether to back off."""
        backoff = absorb(outcome, self._callback)
        if outcome.refresh:
            self._member.learn_topics(
                await self.cluster.refresh(self._member.subscription, allow_auto_create=False)
            )
        return backoff

    def _fetch_ahead(self) -> bool:
        """Send the next ShareFetch in a task now (with the acknowledgements settled so far),
        for the next poll, commit or close to take; whether one was sent."""
        member, state = self._member, self._state
        room = state.fetch_ahead(self.settings.max_poll_records)
        if self._ahead is not None or not room:
            return False
        wanted, stale = wanted_by_leader(member, self.cluster)
        if not stale and wanted:
            ahead = share_fetch(state, wanted, state.config.ahead_wait_ms, room)
            self._ahead = InFlight(ahead, ClusterTransport(self.cluster))
            return True
        return False

    async def _finish_ahead(self) -> None:
        """Take the answers of the ShareFetch sent ahead, if any (its records buffered)."""
        ahead = self._ahead
        if ahead is not None:
            assert self._lock is not None
            async with self._lock:
                outcome = await ahead.finish()
                self._ahead = None
            await self._absorb(outcome)

    def __aiter__(self) -> AsyncIterator[ShareConsumerRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ShareConsumerRecord]:
        """Every record, one at a time (implicit mode accepts a record when the next is asked
        for; explicit mode: acknowledge each before the next poll)."""
        while not self._closed:
            for record in await self.poll(1.0):
                yield record

    # -- acknowledging -----------------------------------------------------------------
    async def commit_sync(self) -> dict[TopicPartition, KafkaError | None]:
        """Send the acknowledgements now (a ShareAcknowledge, written right behind a fetch sent
        ahead that is still on the wire, or followed by the next fetch: Kafka answers them in
        order) and wait for each partition's result (None: applied)."""
        self._check_open("commit_sync")
        await self.start()
        state = self._state
        if not self.settings.explicit:
            state.settle_all(_ACCEPT)
        if self._ahead is None and self._fetch_ahead():  # the acknowledgements ride in it
            return await self._commit_in_fetch()
        acking: InFlight[list[AckOutcome]] = InFlight(
            share_acknowledge(state), ClusterTransport(self.cluster)
        )
        try:
            if self._ahead is not None:
                await self._finish_ahead()
            # the next poll's records built while the brokers answer
            state.decode(self.settings.max_poll_records, ahead=True)
        finally:  # the acknowledgements' answers are taken (and reported) whatever the fetch's
            assert self._lock is not None
            async with self._lock:
                outcomes = await acking.finish()
            results = report(outcomes, self._callback)
        return results

    async def _commit_in_fetch(self) -> dict[TopicPartition, KafkaError | None]:
        """commit_sync when the next ShareFetch is due now: it carries the acknowledgements
        (one request instead of a ShareAcknowledge and a fetch) and takes what is there (no
        long wait); its answer is taken here, once the next poll's records are built."""
        ahead = self._ahead
        assert ahead is not None and self._lock is not None
        try:
            self._state.decode(self.settings.max_poll_records, ahead=True)
        finally:
            async with self._lock:
                outcome = await ahead.finish()
                self._ahead = None
        results = report(outcome.acks, self._callback)
        outcome.acks = []
        await self._absorb(outcome)
        return results

    def commit_async(self) -> asyncio.Task[dict[TopicPartition, KafkaError | None]]:
        """Send the acknowledgements in a task (results to the callback, and the task's)."""
        return asyncio.get_running_loop().create_task(self.commit_sync())

    # -- lifecycle ---------------------------------------------------------------------
    def wakeup(self) -> None:
        """Make the poll under way (or the next one) raise WakeupError."""
        self._wakeup = True

    def _raise_pending(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._wakeup:
            self._wakeup = False
            raise WakeupError("poll() interrupted by wakeup()")

    async def close(self) -> None:
        """Take a fetch sent ahead, accept (implicit) or release (explicit) what was delivered,
        close the share sessions (which releases what was never delivered), leave the group
        and close the connections."""
        if self._closed:
            return
        self._closed = True
        task, self._heartbeat = self._heartbeat, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, KafkaError):
                await task
        state = self._state
        if self._lock is None:
            self._lock = asyncio.Lock()
        try:
            await self._finish_ahead()
        except KafkaError as exc:
            log.warning("share group %r: the fetch sent ahead failed: %s", self.group_id, exc)
        self.settings.before_close(state)
        try:
            async with self._lock:
                outcomes = await run(
                    share_acknowledge(state, final=True), ClusterTransport(self.cluster)
                )
            report(outcomes, self._callback)
            await self._coordinator.run(share_leave(self._coordinator.state, self._member))
        except KafkaError as exc:
            log.warning("share group %r: closing failed: %s", self.group_id, exc)
        finally:
            self._coordinator.close()
            await self.cluster.close()
