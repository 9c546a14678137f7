"""ZookeeperConsumerConnector: a consumer group coordinated through ZooKeeper, as Kafka 0.8.2.

Registration (the seeds' consumer registration algorithm):

1. register ``/consumers/[group]/ids/[consumer_id]`` (ephemeral, subscription JSON);
2. watch the group's consumer ids (a member joined or left);
3. watch the broker registry ``/brokers/ids``;
4. for a filter, watch ``/brokers/topics`` (new topics are matched against it);
   for every subscribed topic, watch ``/brokers/topics/[topic]`` (partitions added);
5. rebalance.

Rebalance (one attempt; see :mod:`kclient.consumer.rebalance` for the retry loop):
stop the fetchers, clear the queues and the streams' current chunks, commit if auto-commit is on;
delete our owner znodes; compute the group's assignment (range or round-robin over string-sorted
thread ids); read the committed offsets of our new partitions; create an ephemeral owner znode
for each -- if any still belongs to someone else (NodeExists), delete every owner znode this
attempt created and fail the attempt; else start fetching.

Session expiry: the fetchers stop as soon as the session is lost (our owner znodes are gone, so
someone else may own those partitions now); on the new session the consumer registers again and
rebalances.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from kclient import zkutils as zku
from kclient.cluster import Cluster

from .assignment import assign
from .connector import ConsumerConnector
from .membership import consumers_per_topic
from .offsets import OffsetStore, make_offset_store
from .rebalance import RebalanceExecutor, synced_rebalance

__all__ = ["ZookeeperConsumerConnector"]

log = logging.getLogger(__name__)


class ZookeeperConsumerConnector(ConsumerConnector):
    """Kafka 0.8.2's ``ZookeeperConsumerConnector`` (byte-compatible ZooKeeper layout)."""

    cluster: Cluster  # set up front, unlike the base class's
    offset_store: OffsetStore

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.dirs = zku.GroupDirs(self.group)
        self.zk = zku.make_client(
            c["zookeeper.connect"],
            c["zookeeper.session.timeout.ms"],
            c["zookeeper.connection.timeout.ms"],
            zku.kazoo_options(c),
        )
        self._session_id = self.zk.client_id[0]
        self._registered_session: int | None = None
        self._registered_at = int(time.time() * 1000)
        # placeholder bootstrap; the broker registry replaces it before any request
        self.cluster = Cluster("127.0.0.1:1", self.settings)
        with zku.zk_errors(c["zookeeper.connect"], "reading the broker registry"):
            self._refresh_bootstrap()
        self.offset_store = make_offset_store(
            c, self.group, zk=self.zk, cluster=self.cluster, settings=self.settings
        )
        self.executor = RebalanceExecutor(
            self.consumer_id,
            self._synced_rebalance,
            self._surface,
            self._shutting_down,
            retry_after_failure_s=self._retry_after(),
            on_event=self._on_event,
        )
        self._topic_watches: set[str] = set()
        self._watched_topics: list[str] | None = None
        self._known_brokers: list[str] | None = None
        self._known_ids: list[str] | None = None
        self.zk.add_listener(self._zk_state)

    def _retry_after(self) -> float:
        backoff_ms: int = self.config["rebalance.backoff.ms"]
        retries: int = self.config["rebalance.max.retries"]
        return max(1.0, (backoff_ms * max(1, retries)) / 1000.0)

    # -- start ------------------------------------------------------------------------------------
    def _start(self) -> None:
        with zku.zk_errors(self.config["zookeeper.connect"], f"registering {self.consumer_id}"):
            for path in (self.dirs.ids_dir, zku.BROKER_IDS_PATH, zku.BROKER_TOPICS_PATH):
                self.zk.ensure_path(path)
            self._register()
            ChildrenWatch(self.zk, self.dirs.ids_dir, self._ids_changed)
            ChildrenWatch(self.zk, zku.BROKER_IDS_PATH, self._brokers_changed)
            if self.topic_filter is not None:
                ChildrenWatch(self.zk, zku.BROKER_TOPICS_PATH, self._topics_changed)
            for topic in self.topic_count or {}:
                self._watch_topic(topic)
        self._first_rebalance()
        self._start_auto_commit()

    def _register(self) -> None:
        """Create our ephemeral registration; wait out a stale node of an expired session."""
        pattern, subscription = self.subscription
        data = zku.registration_json(subscription, pattern, self._registered_at)
        deadline = time.monotonic() + self.config["zookeeper.session.timeout.ms"] / 1000.0 + 5
        while True:
            try:
                zku.create_ephemeral_expect_conflict(
                    self.zk, self.dirs.consumer(self.consumer_id), data
                )
                break
            except NodeExistsError:
                if time.monotonic() > deadline:
                    raise
                log.info(
                    "%s: registration node still held by an old session; waiting", self.consumer_id
                )
                time.sleep(0.2)
        self._registered_session = self.zk.client_id[0]
        log.info("%s registered in group %s: %s", self.consumer_id, self.group, data)

    # -- watchers (kazoo's thread: only trigger; returning False ends the watch) --------------------
    def _ids_changed(self, children: list[str]) -> bool | None:
        if self._shutting_down.is_set():
            return False
        children = sorted(children)
        if self._known_ids is not None and children != self._known_ids:
            self.executor.trigger(f"group members changed: {children}")
        self._known_ids = children
        return None

    def _brokers_changed(self, children: list[str]) -> bool | None:
        if self._shutting_down.is_set():
            return False
        children = sorted(children)
        if self._known_brokers is not None and children != self._known_brokers:
            self.executor.trigger(f"brokers changed: {children}")
        self._known_brokers = children
        return None

    def _topics_changed(self, children: list[str]) -> bool | None:
        if self._shutting_down.is_set():
            return False
        assert self.topic_filter is not None  # watched only for a filter subscription
        allowed = self.topic_filter.filter(children, self.exclude_internal)
        if self._watched_topics is not None and allowed != self._watched_topics:
            log.info("%s: topics matching %s now %s", self.consumer_id, self.topic_filter, allowed)
            self.executor.trigger("topics matching the filter changed")
        self._watched_topics = allowed
        for topic in allowed:
            self._watch_topic(topic)
        return None

    def _watch_topic(self, topic: str) -> None:
        if topic in self._topic_watches:
            return
        self._topic_watches.add(topic)
        first = [True]

        def changed(data: bytes | None, stat: Any) -> bool | None:
            if self._shutting_down.is_set():
                return False
            if not first[0]:
                self.executor.trigger(f"partitions of {topic} changed")
            first[0] = False
            return None

        DataWatch(self.zk, f"{zku.BROKER_TOPICS_PATH}/{topic}", changed)

    def _zk_state(self, state: str) -> None:
        if self._shutting_down.is_set():
            return
        if state == KazooState.LOST:
            log.warning("%s: ZooKeeper session lost", self.consumer_id)
            self.executor.event("session_lost")
        elif state == KazooState.CONNECTED:
            self.executor.event("connected")

    def _on_event(self, event: str) -> None:
        """Executor thread: session changes."""
        if event == "session_lost":
            # our owner znodes are gone: stop handing out messages of partitions others may own
            self._close_fetchers(commit=False)
            with self._offsets_lock:
                self.registry = {}
        elif event == "connected":
            session = self.zk.client_id[0] if self.zk.client_id else None
            if (
                session is not None
                and session != self._registered_session
                and self._registered_session is not None
            ):
                log.info("%s: new ZooKeeper session; registering again", self.consumer_id)
                self._close_fetchers(commit=False)
                with self._offsets_lock:  # Kafka's resetState
                    self.registry = {}
                self._register()
                self.executor.trigger("new session")

    # -- rebalance ---------------------------------------------------------------------------------
    def _synced_rebalance(self) -> None:
        ok = synced_rebalance(
            self.consumer_id,
            self._rebalance_attempt,
            lambda: self._close_fetchers(commit=True),
            self.config["rebalance.max.retries"],
            self.config["rebalance.backoff.ms"],
            self._shutting_down,
        )
        if ok:
            self._metrics.rebalanced()
            self.rebalance_error = None

    def _refresh_bootstrap(self) -> dict[int, tuple[str, int]]:
        brokers = zku.get_all_brokers(self.zk, security_protocol=self.settings.security.protocol)
        extra = list(self.config["metadata.broker.list"] or ())
        self.cluster.bootstrap = list(brokers.values()) + [tuple(x) for x in extra]
        return brokers

    def _rebalance_attempt(self, attempt: int) -> bool:
        brokers = self._refresh_bootstrap()
        all_topics = zku.get_all_topics(self.zk) if self.topic_filter is not None else []
        mine_topics = self.my_topic_threads(all_topics)
        if not brokers:
            log.warning("%s: no brokers found when trying to rebalance", self.consumer_id)
            self._close_fetchers(commit=True)
            self._release()
            return True  # the broker watcher triggers us when one registers
        # fetchers must stop first: a released partition may be owned by someone else at once
        self._close_fetchers(commit=True)
        self._before_release()
        self._release()
        consumers = consumers_per_topic(self.zk, self.group, self.exclude_internal)
        partitions = zku.partitions_for_topics(self.zk, mine_topics)
        decision = assign(self.strategy, consumers, partitions)
        my_threads = {th for ths in mine_topics.values() for th in ths}
        mine = {tp: th for tp, th in decision.items() if th in my_threads and tp[0] in mine_topics}
        offsets = self.offset_store.fetch(mine) if mine else {}
        if self._shutting_down.is_set():
            return False
        if not self._reflect_ownership(mine):
            return False
        self.registry = self._new_registry(mine, offsets)
        log.info(
            "%s owns %s", self.consumer_id, {f"{t}/{p}": th for (t, p), th in sorted(mine.items())}
        )
        self._start_fetchers()
        return True

    def _reflect_ownership(self, mine: dict[tuple[str, int], str]) -> bool:
        """Create an owner znode per partition; on any conflict delete all created ones."""
        created: list[str] = []
        failed: list[str] = []
        for (topic, partition), thread in sorted(mine.items()):
            path = self.dirs.owner(topic, partition)
            try:
                zku.create_ephemeral_expect_conflict(self.zk, path, thread)
                created.append(path)
            except NodeExistsError:
                failed.append(f"{topic}/{partition}")
        if failed:
            log.info(
                "%s: waiting for the partition ownership to be deleted: %s",
                self.consumer_id,
                failed,
            )
            for path in created:
                self._delete_owner(path)
            return False
        return True

    def _delete_owner(self, path: str) -> None:
        try:
            self.zk.delete(path)
        except NoNodeError:
            pass

    def _release(self) -> None:
        """Delete the owner znodes of every partition in the registry (ours only)."""
        session = self.zk.client_id[0] if self.zk.client_id else None
        with self._offsets_lock:  # no commit of these partitions from now on
            registry, self.registry = self.registry, {}
        for (topic, partition), info in sorted(registry.items()):
            path = self.dirs.owner(topic, partition)
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                continue
            if data.decode() == info.thread_id and stat.ephemeralOwner == session:
                self._delete_owner(path)

    # -- shutdown ----------------------------------------------------------------------------------
    def _stop_coordination(self) -> None:
        self.executor.stop()
        if self.executor.is_alive():
            self.executor.join(30)

    def _close_resources(self) -> None:
        try:
            try:
                self.zk.delete(self.dirs.consumer(self.consumer_id))
            except Exception:  # noqa: BLE001 - best effort: the ephemeral node goes anyway
                pass
            self.zk.stop()
            self.zk.close()
        finally:
            super()._close_resources()
