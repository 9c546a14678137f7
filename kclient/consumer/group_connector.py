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

import json
import logging
import struct
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kclient.cluster import Cluster
from kclient.errors import (
    IllegalGenerationError,
    KafkaError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_for_code,
)
from kclient.protocol.apis import HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP

if TYPE_CHECKING:
    from kclient.protocol.messages import JoinGroupResponse, JoinGroupResponseMember
from kclient.zkutils import kafka_json

from .assignment import assign
from .connector import ConsumerConnector, ConsumerGroupMetadata
from .membership import topic_thread_ids
from .offsets import Coordinator, KafkaOffsetStore
from .rebalance import RebalanceExecutor, synced_rebalance

__all__ = ["GroupConsumerConnector", "encode_subscription", "decode_subscription",
           "encode_assignment", "decode_assignment"]

log = logging.getLogger(__name__)

_REJOIN = (RebalanceInProgressError.errno, IllegalGenerationError.errno,
           UnknownMemberIdError.errno)


# -- consumer protocol (version 0) --------------------------------------------------------------
def _str(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack(">h", len(b)) + b


def _bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = bytes(data), 0

    def unpack(self, fmt: str) -> int:
        v: tuple[int, ...] = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0]

    def string(self) -> str:
        n = self.unpack(">h")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def bytes(self) -> bytes:
        n = self.unpack(">i")
        if n < 0:
            return b""
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b


def encode_subscription(topics: Sequence[str], user_data: bytes) -> bytes:
    return (struct.pack(">hi", 0, len(topics)) + b"".join(_str(t) for t in topics)
            + _bytes(user_data))


def decode_subscription(data: bytes) -> tuple[list[str], bytes]:
    r = _Reader(data)
    r.unpack(">h")
    topics = [r.string() for _ in range(r.unpack(">i"))]
    return topics, r.bytes()


def encode_assignment(partitions: dict[str, list[int]], user_data: bytes) -> bytes:
    out = [struct.pack(">hi", 0, len(partitions))]
    for t, ps in sorted(partitions.items()):
        out.append(_str(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p)
                                                                   for p in sorted(ps)))
    out.append(_bytes(user_data))
    return b"".join(out)


def decode_assignment(data: bytes) -> tuple[dict[str, list[int]], bytes]:
    if not data:
        return {}, b""
    r = _Reader(data)
    r.unpack(">h")
    parts: dict[str, list[int]] = {}
    for _ in range(r.unpack(">i")):
        t = r.string()
        parts[t] = [r.unpack(">i") for _ in range(r.unpack(">i"))]
    return parts, r.bytes()


def _json(data: bytes) -> Any:
    """Parsed JSON user data, or None (empty, or not JSON: written by another client)."""
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


class GroupConsumerConnector(ConsumerConnector):
    """A consumer group coordinated by the broker (no ZooKeeper)."""

    cluster: Cluster                    # set up front, unlike the base class's
    offset_store: KafkaOffsetStore

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        c.require("metadata.broker.list")
        self.cluster = Cluster([f"{h}:{p}" for h, p in c["metadata.broker.list"]], self.settings)
        self.session_timeout = c["session.timeout.ms"]
        self.heartbeat_interval = c["heartbeat.interval.ms"] / 1000.0
        # JoinGroup may be held by the coordinator for up to a rebalance (two sessions)
        coord_settings = self.settings.replace(request_timeout_ms=max(
            self.settings.request_timeout_ms, 2 * self.session_timeout + 5000))
        self.coordinator = Coordinator(self.cluster, self.group, c["retry.backoff.ms"],
                                       c["offsets.commit.max.retries"], coord_settings)
        self.generation_id, self.member_id = -1, ""
        self.offset_store = KafkaOffsetStore(self.coordinator, self.group, self._generation,
                                             c["offsets.commit.max.retries"],
                                             c["offsets.channel.backoff.ms"])
        self._stable = threading.Event()
        self._topics_seen: list[str] | None = None
        self._warned_missing: set[str] = set()
        self._partition_counts: dict[str, int] = {}
        self.executor = RebalanceExecutor(self.consumer_id, self._synced_rebalance, self._surface,
                                          self._shutting_down,
                                          retry_after_failure_s=max(1.0, self.heartbeat_interval))
        self._heartbeat: threading.Thread | None = None

    def _generation(self) -> tuple[int, str]:
        return self.generation_id, self.member_id

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group id with this member's current generation and member id."""
        return ConsumerGroupMetadata(self.group, self.generation_id, self.member_id)

    # -- start ------------------------------------------------------------------------------------
    def _start(self) -> None:
        self._first_rebalance()
        if self._shutting_down.is_set():        # shut down from another thread while joining
            return
        heartbeat = threading.Thread(target=self._heartbeat_loop, daemon=True,
                                     name=f"{self.consumer_id}-heartbeat")
        heartbeat.start()
        self._heartbeat = heartbeat             # only once started: shutdown() joins it
        self._start_auto_commit()

    def _synced_rebalance(self) -> None:
        self._stable.clear()
        ok = synced_rebalance(self.consumer_id, self._rebalance_attempt,
                              lambda: self._close_fetchers(commit=False),
                              max(self.config["rebalance.max.retries"], 1),
                              min(self.config["rebalance.backoff.ms"], 1000), self._shutting_down)
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
        except KafkaError as exc:                      # the old generation may be gone already
            log.info("%s: commit before rejoining failed: %s", self.consumer_id, exc)
        self._before_release()
        with self._offsets_lock:
            self.registry = {}
        pattern, subscription = self.subscription
        user = kafka_json({"version": 1, "consumer_id": self.consumer_id,
                           "subscription": subscription, "pattern": pattern,
                           "timestamp": str(int(time.time() * 1000))}).encode()
        meta = encode_subscription(self._my_topics(), user)
        resp = self._join(meta)
        if resp is None:
            return False
        self.generation_id, self.member_id = resp.generation_id, resp.member_id
        assignments = []
        if resp.leader == resp.member_id:
            assignments = self._leader_assign(resp.members)
        body = {"group_id": self.group, "generation_id": self.generation_id,
                "member_id": self.member_id, "protocol_type": "consumer",
                "protocol_name": self.strategy, "assignments": assignments}
        sync = self.coordinator.request(SYNC_GROUP, body, check=lambda r: r.error_code)
        if sync.error_code in _REJOIN:
            if sync.error_code == UnknownMemberIdError.errno:
                self.member_id = ""
            return False
        if sync.error_code:
            raise error_for_code(sync.error_code)(f"SyncGroup of {self.group!r}")
        mine = self._owned(*decode_assignment(sync.assignment))
        self._warn_missing_topics()
        offsets = self.offset_store.fetch(mine) if mine else {}
        if self._shutting_down.is_set():
            return False
        self.registry = self._new_registry(mine, offsets)
        log.info("%s (generation %d) owns %s", self.consumer_id, self.generation_id,
                 {f"{t}/{p}": th for (t, p), th in sorted(mine.items())})
        self._start_fetchers()
        return True

    def _join(self, meta: bytes) -> JoinGroupResponse | None:
        for _ in range(3):
            body = {"group_id": self.group, "session_timeout_ms": self.session_timeout,
                    "rebalance_timeout_ms": self.session_timeout, "member_id": self.member_id,
                    "group_instance_id": None, "protocol_type": "consumer",
                    "protocols": [{"name": self.strategy, "metadata": meta}]}
            resp = self.coordinator.request(JOIN_GROUP, body, check=lambda r: r.error_code)
            if resp.error_code == MemberIdRequiredError.errno:
                self.member_id = resp.member_id
                continue
            if resp.error_code == UnknownMemberIdError.errno:
                self.member_id = ""
                continue
            if resp.error_code == RebalanceInProgressError.errno:
                continue
            if resp.error_code:
                raise error_for_code(resp.error_code)(f"JoinGroup of {self.group!r}")
            return resp
        return None

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
                log.warning("%s: subscribed topic %r does not exist on the cluster (%s); no "
                            "messages until it is created", self.consumer_id, topic,
                            ", ".join(f"{h}:{p}" for h, p in self.cluster.bootstrap))

    def _leader_assign(self, members: Iterable[JoinGroupResponseMember]
                       ) -> list[dict[str, Any]]:
        """The leader's job: the group's assignment over every member's thread ids."""
        all_topics = self._all_topics()
        consumers: dict[str, list[str]] = {}
        member_of: dict[str, str] = {}
        for m in members:
            topics, user = decode_subscription(m.metadata)
            reg = _json(user)
            if isinstance(reg, dict) and "consumer_id" in reg and "subscription" in reg:
                cid = reg["consumer_id"]
                wanted = topic_thread_ids(cid, reg.get("pattern", "static"), reg["subscription"],
                                          all_topics, self.exclude_internal)
            else:   # another client (the Java consumer): one thread, the topics it listed
                cid = m.member_id
                wanted = {t: [f"{cid}-0"] for t in topics if t in all_topics}
            member_of[cid] = m.member_id
            for topic, threads in wanted.items():
                consumers.setdefault(topic, []).extend(threads)
        consumers = {t: sorted(ts) for t, ts in consumers.items()}
        partitions = {t: sorted(self.cluster.topics[t].partitions)
                      for t in consumers if t in self.cluster.topics}
        decision = assign(self.strategy, consumers, partitions)
        per_member: dict[str, dict[str, dict[str, str]]] = {m.member_id: {} for m in members}
        for (t, p), th in decision.items():
            member = member_of[th.rpartition("-")[0]]
            per_member[member].setdefault(t, {})[str(p)] = th
        out = []
        for member, owned in per_member.items():
            parts = {t: [int(p) for p in ps] for t, ps in owned.items()}
            out.append({"member_id": member,
                        "assignment": encode_assignment(parts, kafka_json(owned).encode())})
        return out

    def _owned(self, partitions: dict[str, list[int]], user_data: bytes
               ) -> dict[tuple[str, int], str]:
        """Our partitions and the thread of each: as a kclient leader wrote them in the user
        data, or, from another client's leader (Java's assignors), spread over our threads."""
        owned = _json(user_data)
        if isinstance(owned, dict) and all(isinstance(v, dict) for v in owned.values()):
            return {(t, int(p)): th for t, parts in owned.items() for p, th in parts.items()}
        pattern, subscription = self.subscription
        threads = topic_thread_ids(self.consumer_id, pattern, subscription, list(partitions),
                                   self.exclude_internal)
        mine: dict[tuple[str, int], str] = {}
        for topic, parts in partitions.items():
            if topic not in threads:
                log.warning("%s: assigned %s, which it did not subscribe to; ignored",
                            self.consumer_id, topic)
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
        last_topic_check = time.monotonic()
        while not self._shutting_down.wait(self.heartbeat_interval):
            if not self._stable.is_set():
                continue
            try:
                body = {"group_id": self.group, "generation_id": self.generation_id,
                        "member_id": self.member_id, "group_instance_id": None}
                resp = self.coordinator.request(HEARTBEAT, body, check=lambda r: r.error_code)
                if resp.error_code in _REJOIN:
                    if resp.error_code == UnknownMemberIdError.errno:
                        self.member_id = ""
                    log.info("%s: heartbeat says %s; rejoining", self.consumer_id,
                             error_for_code(resp.error_code).__name__)
                    self._stable.clear()
                    self.executor.trigger("group rebalancing")
                    continue
                if time.monotonic() - last_topic_check >= self._topic_check_interval():
                    last_topic_check = time.monotonic()
                    if self._topics_changed():
                        self._stable.clear()
                        self.executor.trigger("subscribed topics changed")
            except KafkaError as exc:
                log.info("%s: heartbeat failed: %s", self.consumer_id, exc)

    def _topic_check_interval(self) -> float:
        return 1.0 if self.topic_filter is not None else 5.0

    def _topics_changed(self) -> bool:
        all_topics = self._all_topics()
        if self.topic_filter is not None:
            now = self.topic_filter.filter(all_topics, self.exclude_internal)
            if now != self._topics_seen:
                return True
        counts = {t: len(self.cluster.topics[t].partitions)
                  for t in (self._topics_seen or self.topic_count or ()) if t in self.cluster.topics}
        changed = bool(self._partition_counts) and counts != self._partition_counts
        self._partition_counts = counts
        return changed

    # -- shutdown ----------------------------------------------------------------------------------
    def _stop_coordination(self) -> None:
        # a JoinGroup in flight would hold the connection (and LeaveGroup behind it) for up to
        # a rebalance: fail it now; commit and LeaveGroup then use a fresh connection
        self.coordinator.interrupt()
        self.executor.stop()
        if self.executor.is_alive():
            self.executor.join(30)
        if self._heartbeat is not None:
            self._heartbeat.join(10)

    def _release(self) -> None:
        with self._offsets_lock:
            self.registry = {}
        if not self.member_id:
            return
        body = {"group_id": self.group, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None}]}
        try:
            self.coordinator.request(LEAVE_GROUP, body, retries=0)
        except KafkaError as exc:
            log.info("%s: LeaveGroup failed: %s", self.consumer_id, exc)
        self.member_id, self.generation_id = "", -1

    def _close_resources(self) -> None:
        self.coordinator.close()
        super()._close_resources()
