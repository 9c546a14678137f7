"""``kclient.ShareConsumer``: a member of a share group (KIP-932, Kafka 4.2+), for threads.

A share group turns topics into a work queue: every member reads every assigned partition,
each record is handed to one member at a time under a lock, and the member accepts it,
releases it for another try, or rejects it.  The conversations are the core's
(:mod:`kclient.core.share_group`, :mod:`kclient.core.share_fetch`); this face runs them on the
caller's thread (fetching, acknowledging) and a heartbeat thread.  Configuration keys and
defaults are Java's KafkaShareConsumer's (``share.acknowledgement.mode`` implicit,
``max.poll.records`` 500, ``fetch.max.wait.ms`` 500, ...).

Fetching ahead: a poll that returns records first writes the next ShareFetch (carrying the
acknowledgements settled so far), so the broker acquires the next records while the
application works; the next poll that needs its records, commit or close reads its answer
(one fetch ahead per broker).  A fetch ahead asks for the room left under the records a
member may hold acquired and not handed out (4 x ``max.poll.records``): fewer, larger
fetches, fewer round trips to wait for (:meth:`ShareFetchState.fetch_ahead`).
``commit_sync`` writes its ShareAcknowledge behind a fetch still on the wire (the share
session's epoch counts the requests in flight; Kafka answers a connection's requests in
order), or, when the poll after next would run short, writes the next fetch carrying the
acknowledgements instead (one request, answered at once: a fetch ahead takes what is there)
and reads its answer; either way it builds the next poll's records while it waits.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kclient._args import poll_timeout_ms
from kclient.cluster import Cluster
from kclient.core.share_fetch import AckOutcome, FetchOutcome, share_acknowledge, share_fetch
from kclient.core.share_group import share_heartbeat, share_leave
from kclient.errors import KafkaError, WakeupError
from kclient.io.coordinator import Coordinator
from kclient.io.driver import ClusterTransport, InFlight, run
from kclient.structs import AcknowledgeType, ShareConsumerRecord, TopicPartition

from .connector import connection_settings
from .share_common import ShareFace, absorb, report, wanted_by_leader

__all__ = ["ShareConsumer"]

log = logging.getLogger("kclient.share")
_ACCEPT = int(AcknowledgeType.ACCEPT)


class ShareConsumer(ShareFace):
    """A share-group member: ``subscribe``, ``poll``, ``acknowledge``, ``commit_sync``,
    ``close``.  Not for use from several threads at once, except :meth:`wakeup`."""

    def __init__(self, *topics: str | Mapping[str, Any], **config: Any) -> None:
        topics = self._setup(topics, config)
        conf = self.config
        conn_settings = connection_settings(conf)
        self.cluster = Cluster(self.settings.bootstrap(), conn_settings)
        self._coordinator = Coordinator(
            self.cluster, self.group_id, conf["retry.backoff.ms"], settings=conn_settings
        )
        self._lock = threading.RLock()  # one session conversation at a time
        self._ahead: InFlight[FetchOutcome] | None = None
        #: a commit_async's ShareAcknowledge on the wire, read before anything else is sent
        self._acking: InFlight[list[AckOutcome]] | None = None
        self._wakeup = threading.Event()
        #: set when a heartbeat changes the assignment (or by wakeup): a poll waiting for
        #: partitions goes on at once
        self._assigned = threading.Event()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        if topics:
            self.subscribe([str(t) for t in topics])

    # -- membership --------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group reading ``topics`` (replacing an earlier subscription)."""
        self._check_open("subscribe")
        if isinstance(topics, str):
            topics = [topics]
        self._member.subscribe(topics)
        if not self._member.subscription:
            self.unsubscribe()
            return
        if self._heartbeat is None:
            self._heartbeat = threading.Thread(
                target=self._heartbeats,
                name=f"kclient-share-heartbeat-{self.group_id}",
                daemon=True,
            )
            self._heartbeat.start()
        else:
            self._coordinator.transport.wake()

    def unsubscribe(self) -> None:
        """Leave the group (records held are released first)."""
        self._stop_heartbeats()
        self._release_and_close_sessions()
        self._coordinator.run(share_leave(self._coordinator.state, self._member))
        self._member.subscription = ()

    def _heartbeats(self) -> None:
        coord = self._coordinator
        while not self._stop.is_set():
            generation = self._member.generation
            try:
                coord.run(share_heartbeat(coord.state, self._member))
                wait = self._member.heartbeat_interval_s
            except KafkaError as exc:
                backoff = self._heartbeat_failed(exc)
                if backoff is None:
                    return
                wait = backoff
            if self._member.generation != generation:
                self._assigned.set()
            coord.transport.sleep(wait)

    def _stop_heartbeats(self) -> None:
        thread, self._heartbeat = self._heartbeat, None
        if thread is not None:
            self._stop.set()
            self._coordinator.transport.wake()
            thread.join(30)
            self._stop = threading.Event()

    # -- consuming ---------------------------------------------------------------------
    def poll(
        self, timeout: float | None = None, timeout_ms: int | None = None
    ) -> list[ShareConsumerRecord]:
        """Records acquired for this member (``max.poll.records``; with
        ``share.acquire.mode`` batch_optimized, the default, a poll ends at the end of a record
        batch, so it may return more, as Java's KafkaShareConsumer does), waiting up to
        ``timeout`` seconds (or ``timeout_ms``; neither: without limit) for some.  Implicit
        mode accepts the records of the previous poll first; explicit mode requires them all
        acknowledged."""
        self._check_open("poll")
        ms = poll_timeout_ms((), timeout, timeout_ms, default_ms=-1)
        seconds = float("inf") if ms < 0 else ms / 1000.0
        state = self._state
        self.settings.before_poll(state)
        deadline = time.monotonic() + seconds
        self._finish_acking()
        if state.held() < self.settings.max_poll_records:  # else it is read later, behind
            self._finish_ahead()
        while True:
            self._raise_pending()
            if state.held():
                self._fetch_ahead()  # before the records are built: the broker works meanwhile
                records = state.take(self.settings.max_poll_records, self.settings.explicit)
                if records:
                    return records
                if self._ahead is not None:  # only gaps were acquired: read the next answer
                    self._finish_ahead()
                    continue
            remaining = deadline - time.monotonic()
            self._round(max(0.0, min(remaining, 3600.0)))
            if not state.held() and time.monotonic() >= deadline:
                self._raise_pending()
                return []

    def _wanted(self) -> dict[int, set[TopicPartition]]:
        """The partitions to fetch by leader (metadata refreshed when a leader is unknown)."""
        member = self._member
        wanted, stale = wanted_by_leader(member, self.cluster)
        if stale and member.subscription:
            member.learn_topics(self.cluster.refresh(member.subscription, allow_auto_create=False))
            wanted, _ = wanted_by_leader(member, self.cluster)
        return wanted

    def _round(self, remaining: float) -> None:
        """One ShareFetch round (or a short wait when nothing is assigned yet)."""
        wanted = self._wanted()
        if not wanted and not self._state.has_pending():
            self._assigned.wait(min(remaining, 0.05))
            self._assigned.clear()
            return
        with self._lock:
            outcome = run(
                share_fetch(self._state, wanted, int(remaining * 1000)),
                ClusterTransport(self.cluster),
            )
        if self._absorb(outcome):
            self._wakeup.wait(min(remaining, self.settings.backoff_s))

    def _absorb(self, outcome: FetchOutcome) -> bool:
        """A round's results taken (see :func:`absorb`); whether to back off."""
        backoff = absorb(outcome, self._callback)
        if outcome.refresh:
            self._member.learn_topics(
                self.cluster.refresh(self._member.subscription, allow_auto_create=False)
            )
        return backoff

    def _fetch_ahead(self) -> bool:
        """Write the next ShareFetch now (with the acknowledgements settled so far), to be
        read by the next poll, commit or close; whether one was written."""
        member, state = self._member, self._state
        room = state.fetch_ahead(self.settings.max_poll_records)
        if self._ahead is not None or not room:
            return False
        wanted, stale = wanted_by_leader(member, self.cluster)
        if stale or not wanted:
            return False
        ahead = share_fetch(state, wanted, state.config.ahead_wait_ms, room)
        with self._lock:
            self._ahead = InFlight(ahead, ClusterTransport(self.cluster))
        return True

    def _finish_ahead(self) -> None:
        """Read the answers of the ShareFetch sent ahead, if any (its records buffered)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            with self._lock:
                outcome = ahead.finish()
            self._absorb(outcome)

    def __iter__(self) -> Iterator[ShareConsumerRecord]:
        """Every record, polling as needed (until close or wakeup)."""
        while not self._closed:
            yield from self.poll(1.0)

    # -- acknowledging -----------------------------------------------------------------
    def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """Send the acknowledgements now (a ShareAcknowledge, written right behind a fetch sent
        ahead that is still on the wire, or followed by the next fetch: Kafka answers them in
        order) and wait: each partition's result (None: applied).  Implicit mode accepts the
        last poll's records first."""
        self._check_open("commit_sync")
        if not self.settings.explicit:
            self._state.settle_all(_ACCEPT)
        self._finish_acking()
        if self._ahead is None and self._fetch_ahead():  # the acknowledgements ride in it
            return self._commit_in_fetch()
        with self._lock:
            acking = InFlight(share_acknowledge(self._state), ClusterTransport(self.cluster))
        try:
            if self._ahead is not None:
                self._finish_ahead()
            # the next poll's records built while the brokers answer
            self._state.decode(self.settings.max_poll_records, ahead=True)
        finally:  # the acknowledgements' answers are read (and reported) whatever the fetch's
            with self._lock:
                outcomes = acking.finish()
            results = report(outcomes, self._callback)
        return results

    def _commit_in_fetch(self) -> dict[TopicPartition, KafkaError | None]:
        """commit_sync when the next ShareFetch is due now: it carries the acknowledgements
        (one request instead of a ShareAcknowledge and a fetch) and takes what is there (no
        long wait); its answer is read here, once the next poll's records are built."""
        ahead, self._ahead = self._ahead, None
        assert ahead is not None
        try:
            self._state.decode(self.settings.max_poll_records, ahead=True)
        finally:
            with self._lock:
                outcome = ahead.finish()
        results = report(outcome.acks, self._callback)
        outcome.acks = []
        self._absorb(outcome)
        return results

    def commit_async(self) -> None:
        """Send the acknowledgements now and return at once: the ShareAcknowledge is read by
        the next poll, commit or close, which give its results to the commit callback (as
        Java's ``commitAsync``)."""
        self._check_open("commit_async")
        self._ready_to_acknowledge()
        with self._lock:
            self._acking = InFlight(share_acknowledge(self._state), ClusterTransport(self.cluster))

    def _ready_to_acknowledge(self) -> None:
        """Accept the last poll's records (implicit mode) and read what is on the wire, so
        the acknowledgements go out in the share sessions' epoch order."""
        if not self.settings.explicit:
            self._state.settle_all(_ACCEPT)
        self._finish_acking()
        self._finish_ahead()

    def _finish_acking(self) -> None:
        """Read a commit_async's answers, if any: its results to the commit callback."""
        acking, self._acking = self._acking, None
        if acking is not None:
            with self._lock:
                outcomes = acking.finish()
            report(outcomes, self._callback)

    # -- lifecycle ---------------------------------------------------------------------
    def wakeup(self) -> None:
        """Make a poll under way (or the next one) raise WakeupError; safe from any thread."""
        self._wakeup.set()
        self._assigned.set()

    def _raise_pending(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._wakeup.is_set():
            self._wakeup.clear()
            raise WakeupError("poll() interrupted by wakeup()")

    def _release_and_close_sessions(self) -> None:
        """Read a fetch sent ahead, accept (implicit) or release (explicit) what was
        delivered, and close the share sessions (which releases what was never delivered)."""
        state = self._state
        try:
            self._finish_acking()
            self._finish_ahead()
        except KafkaError as exc:
            log.warning("share group %r: a request on the wire failed: %s", self.group_id, exc)
        self.settings.before_close(state)
        try:
            with self._lock:
                outcomes = run(share_acknowledge(state, final=True), ClusterTransport(self.cluster))
            report(outcomes, self._callback)
        except KafkaError as exc:
            log.warning("share group %r: closing the share sessions failed: %s", self.group_id, exc)

    def close(self, timeout: float | None = None) -> None:
        """Settle what is held (see :meth:`_release_and_close_sessions`), leave the group and
        close the connections."""
        if self._closed:
            return
        self._stop_heartbeats()
        self._release_and_close_sessions()
        self._closed = True
        try:
            self._coordinator.run(share_leave(self._coordinator.state, self._member))
        finally:
            self._coordinator.close()
            self.cluster.close()

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
