"""The broker-coordinated group protocol, shared by GroupConsumerConnector and Consumer.

Wire format: the standard consumer-protocol Subscription (version 0: topics, user data) and
Assignment (version 0: topic partitions, user data).  A kclient member's Subscription user data is
its registration JSON (as written to ZooKeeper, plus ``consumer_id``); a kclient leader's
Assignment user data maps each partition to its thread id (``<consumer_id>-<i>``).
:class:`GroupMembership` runs JoinGroup / SyncGroup / Heartbeat / LeaveGroup for one member;
:func:`leader_assignment` is the elected leader's job.
"""
from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from kclient.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_for_code,
)
from kclient.protocol.apis import HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP
from kclient.zkutils import kafka_json

from .assignment import assign
from .membership import topic_thread_ids
from .offsets import Coordinator
from .sticky import resolve_owned, sticky_assign, withhold_transfers

if TYPE_CHECKING:
    from kclient.protocol.messages import JoinGroupResponse, JoinGroupResponseMember

__all__ = ["GroupMembership", "leader_assignment", "registration", "parse_json",
           "encode_subscription", "decode_subscription", "encode_assignment",
           "decode_assignment", "REJOIN", "COOPERATIVE", "Subscription",
           "decode_subscription_full", "strategies_of", "is_cooperative", "member_user_data",
           "registration_of", "subscription_generation"]

#: the cooperative-sticky protocol name (KIP-429)
COOPERATIVE = "cooperative-sticky"

#: error codes after which a member joins again (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
#: UNKNOWN_MEMBER_ID)
REJOIN = (RebalanceInProgressError.errno, IllegalGenerationError.errno,
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

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def nullable_string(self) -> str | None:
        n = self.unpack(">h")
        if n < 0:
            return None
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


class Subscription(NamedTuple):
    """A decoded ConsumerProtocolSubscription (versions 0-3)."""

    topics: list[str]
    user_data: bytes
    owned_partitions: dict[str, list[int]]
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 0


#: the highest ConsumerProtocolSubscription version written (v3: rack id, as Java 3.5+ writes)
SUBSCRIPTION_VERSION = 3


def _partition_lists(parts: Mapping[str, Iterable[int]]) -> bytes:
    out = [struct.pack(">i", len(parts))]
    for t, ps in sorted(parts.items()):
        ps = sorted(ps)
        out.append(_str(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p)
                                                                   for p in ps))
    return b"".join(out)


def encode_subscription(topics: Sequence[str], user_data: bytes | None,
                        owned: Mapping[str, Iterable[int]] | None = None,
                        generation_id: int = -1, version: int | None = None) -> bytes:
    """ConsumerProtocolSubscription: v0 (topics, user data) unless ``owned`` is given, then
    v3 (owned partitions, generation id, null rack id) or the ``version`` asked for."""
    if version is None:
        version = 0 if owned is None else SUBSCRIPTION_VERSION
    out = [struct.pack(">hi", version, len(topics)), *(_str(t) for t in topics),
           struct.pack(">i", -1) if user_data is None else _bytes(user_data)]
    if version >= 1:
        out.append(_partition_lists(owned or {}))
    if version >= 2:
        out.append(struct.pack(">i", generation_id))
    if version >= 3:
        out.append(struct.pack(">h", -1))
    return b"".join(out)


def decode_subscription_full(data: bytes) -> Subscription:
    """Every field of a Subscription; newer versions parse as the highest known (as Java)."""
    r = _Reader(data)
    version = r.unpack(">h")
    if version < 0:
        raise ValueError(f"consumer protocol subscription version {version}")
    topics = [r.string() for _ in range(r.unpack(">i"))]
    user = r.bytes()
    owned: dict[str, list[int]] = {}
    generation, rack = -1, None
    if version >= 1 and r.remaining():
        for _ in range(r.unpack(">i")):
            t = r.string()
            owned.setdefault(t, []).extend(r.unpack(">i") for _ in range(r.unpack(">i")))
    if version >= 2 and r.remaining():
        generation = r.unpack(">i")
    if version >= 3 and r.remaining():
        rack = r.nullable_string()
    return Subscription(topics, user, owned, generation, rack, version)


def decode_subscription(data: bytes) -> tuple[list[str], bytes]:
    """(topics, user data) of a Subscription of any version."""
    sub = decode_subscription_full(data)
    return sub.topics, sub.user_data


def encode_assignment(partitions: Mapping[str, Iterable[int]], user_data: bytes | None,
                      version: int = 0) -> bytes:
    """ConsumerProtocolAssignment (the layout is the same in v0-v3)."""
    return (struct.pack(">h", version) + _partition_lists(partitions)
            + (struct.pack(">i", -1) if user_data is None else _bytes(user_data)))


def decode_assignment(data: bytes) -> tuple[dict[str, list[int]], bytes]:
    """(``{topic: partitions}``, user data) of an Assignment (empty bytes: nothing)."""
    if not data:
        return {}, b""
    r = _Reader(data)
    r.unpack(">h")
    parts: dict[str, list[int]] = {}
    for _ in range(r.unpack(">i")):
        t = r.string()
        parts.setdefault(t, []).extend(r.unpack(">i") for _ in range(r.unpack(">i")))
    return parts, r.bytes() if r.remaining() else b""


def parse_json(data: bytes) -> Any:
    """Parsed JSON user data, or None (empty, or not JSON: written by another client)."""
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def registration(consumer_id: str, pattern: str, subscription: Mapping[str, int]) -> bytes:
    """A member's Subscription user data: its registration JSON, as written to ZooKeeper."""
    return kafka_json({"version": 1, "consumer_id": consumer_id, "subscription": subscription,
                       "pattern": pattern, "timestamp": str(int(time.time() * 1000))}).encode()


def strategies_of(value: str | Sequence[str]) -> list[str]:
    """The protocol names of a ``partition.assignment.strategy`` value, in preference order."""
    names = value.split(",") if isinstance(value, str) else list(value)
    return [n.strip() for n in names if n.strip()]


def is_cooperative(strategies: Sequence[str]) -> bool:
    """Java's rule: the rebalance is cooperative only when every configured assignor is."""
    return bool(strategies) and all(s == COOPERATIVE for s in strategies)


def member_user_data(strategy: str, reg: bytes, generation: int = -1) -> bytes:
    """A Subscription's user data: the registration JSON; for cooperative-sticky preceded by
    the int32 generation, as Java's CooperativeStickyAssignor writes it (Java reads only
    those four bytes; kclient reads the JSON after them)."""
    return struct.pack(">i", generation) + reg if strategy == COOPERATIVE else reg


def registration_of(user_data: bytes) -> dict[str, Any] | None:
    """A kclient member's registration JSON in its user data (with or without the generation
    prefix), or None (another client's member)."""
    reg = parse_json(user_data)
    if reg is None and len(user_data) > 4:
        reg = parse_json(user_data[4:])
    if isinstance(reg, dict) and "consumer_id" in reg and "subscription" in reg:
        return reg
    return None


def subscription_generation(sub: Subscription) -> int:
    """The generation a member's owned partitions come from: the v2+ field, else Java's
    cooperative-sticky user data (int32), else -1."""
    if sub.generation_id >= 0:
        return sub.generation_id
    if len(sub.user_data) >= 4:
        gen: int = struct.unpack_from(">i", sub.user_data)[0]
        return gen
    return -1


def _member_units(members: list[JoinGroupResponseMember], all_topics: list[str],
                  exclude_internal: bool
                  ) -> tuple[dict[str, list[str]], dict[str, str], dict[str, Subscription]]:
    """``{topic: thread ids}``, thread consumer id -> member id, and each member's
    decoded Subscription."""
    consumers: dict[str, list[str]] = {}
    member_of: dict[str, str] = {}
    subs: dict[str, Subscription] = {}
    for m in members:
        sub = subs[m.member_id] = decode_subscription_full(m.metadata)
        reg = registration_of(sub.user_data)
        if reg is not None:
            cid = reg["consumer_id"]
            wanted = topic_thread_ids(cid, reg.get("pattern", "static"), reg["subscription"],
                                      all_topics, exclude_internal)
        else:
            cid = m.member_id
            wanted = {t: [f"{cid}-0"] for t in sub.topics if t in all_topics}
        member_of[cid] = m.member_id
        for topic, threads in wanted.items():
            consumers.setdefault(topic, []).extend(threads)
    return {t: sorted(ts) for t, ts in consumers.items()}, member_of, subs


def _sticky_decision(consumers: dict[str, list[str]], parts: dict[str, list[int]],
                     member_of: dict[str, str], subs: dict[str, Subscription]
                     ) -> dict[tuple[str, int], str]:
    """cooperative-sticky over thread ids: each member's counted owned partitions spread over
    its own threads, kept; the rest balanced; transfers withheld for the next generation."""
    claims = {mid: [(t, p) for t, ps in sub.owned_partitions.items() for p in ps]
              for mid, sub in subs.items()}
    counted = resolve_owned({mid: (subscription_generation(subs[mid]), tps)
                             for mid, tps in claims.items()})
    threads_of: dict[tuple[str, str], list[str]] = {}
    for topic, threads in consumers.items():
        for th in threads:
            threads_of.setdefault((member_of[th.rpartition("-")[0]], topic), []).append(th)
    owned_units: dict[str, list[tuple[str, int]]] = {}
    for mid, tps in counted.items():
        for i, (t, p) in enumerate(sorted(tps)):
            ths = threads_of.get((mid, t))
            if ths:
                owned_units.setdefault(ths[i % len(ths)], []).append((t, p))
    decision = sticky_assign(consumers, parts, owned_units)
    by_member: dict[str, set[tuple[str, int]]] = {mid: set() for mid in subs}
    for tp, th in decision.items():
        by_member[member_of[th.rpartition("-")[0]]].add(tp)
    kept = withhold_transfers(by_member, claims)
    return {tp: th for tp, th in decision.items()
            if tp in kept[member_of[th.rpartition("-")[0]]]}


def leader_assignment(strategy: str, members: Iterable[JoinGroupResponseMember],
                      all_topics: list[str], partitions: Mapping[str, Iterable[int]],
                      exclude_internal: bool = True) -> list[dict[str, Any]]:
    """The leader's job: the group's assignment over every member's thread ids.

    A kclient member counts with the threads of its registration; another client's member
    (the Java consumer) as one thread over the topics its Subscription lists."""
    members = list(members)
    consumers, member_of, subs = _member_units(members, all_topics, exclude_internal)
    parts = {t: sorted(partitions[t]) for t in consumers if t in partitions}
    if strategy == COOPERATIVE:
        decision = _sticky_decision(consumers, parts, member_of, subs)
    else:
        decision = assign(strategy, consumers, parts)
    per_member: dict[str, dict[str, dict[str, str]]] = {m.member_id: {} for m in members}
    for (t, p), th in decision.items():
        per_member[member_of[th.rpartition("-")[0]]].setdefault(t, {})[str(p)] = th
    out = []
    for member, owned in per_member.items():
        tps = {t: [int(p) for p in ps] for t, ps in owned.items()}
        out.append({"member_id": member,
                    "assignment": encode_assignment(tps, kafka_json(owned).encode())})
    return out


class GroupMembership:
    """One member's JoinGroup / SyncGroup / Heartbeat / LeaveGroup at the group coordinator.

    With ``group_instance_id`` the member is static (KIP-345): every request carries the
    instance id, and a FENCED_INSTANCE_ID answer (another process took the instance id) raises
    :class:`FencedInstanceIdError`, which the consumers treat as fatal."""

    def __init__(self, coordinator: Coordinator, group: str, session_timeout_ms: int,
                 group_instance_id: str | None = None) -> None:
        self.coordinator, self.group = coordinator, group
        self.session_timeout = session_timeout_ms
        self.group_instance_id = group_instance_id or None
        self.generation_id, self.member_id = -1, ""
        #: the protocol the coordinator chose at the last join
        self.protocol: str | None = None

    def generation(self) -> tuple[int, str]:
        """(generation id, member id): what OffsetCommit sends."""
        return self.generation_id, self.member_id

    def _fenced(self, what: str) -> FencedInstanceIdError:
        return FencedInstanceIdError(
            f"{what} of group {self.group!r}: group.instance.id {self.group_instance_id!r} is "
            f"now used by another member (member id {self.member_id!r} was fenced); this "
            "consumer cannot continue: close it, and give each live consumer its own "
            "group.instance.id")

    def join(self, strategy: str, meta: bytes,
             protocols: Sequence[tuple[str, bytes]] | None = None) -> JoinGroupResponse | None:
        """JoinGroup (with the member id the coordinator asks for); None: try again later.
        ``protocols`` (name, metadata) pairs replace the single (strategy, meta) one."""
        offered = list(protocols) if protocols else [(strategy, meta)]
        for _ in range(3):
            body = {"group_id": self.group, "session_timeout_ms": self.session_timeout,
                    "rebalance_timeout_ms": self.session_timeout, "member_id": self.member_id,
                    "group_instance_id": self.group_instance_id, "protocol_type": "consumer",
                    "protocols": [{"name": n, "metadata": m} for n, m in offered]}
            resp = self.coordinator.request(JOIN_GROUP, body, check=lambda r: r.error_code)
            if resp.error_code == MemberIdRequiredError.errno:
                self.member_id = resp.member_id
                continue
            if resp.error_code == UnknownMemberIdError.errno:
                self.member_id = ""
                continue
            if resp.error_code == RebalanceInProgressError.errno:
                continue
            if resp.error_code == FencedInstanceIdError.errno:
                raise self._fenced("JoinGroup")
            if resp.error_code:
                raise error_for_code(resp.error_code)(f"JoinGroup of {self.group!r}")
            self.generation_id, self.member_id = resp.generation_id, resp.member_id
            self.protocol = resp.protocol_name or offered[0][0]
            return resp
        return None

    def sync(self, strategy: str | None, assignments: list[dict[str, Any]]) -> bytes | None:
        """SyncGroup: this member's Assignment bytes; None: the group moved on (join again)."""
        body = {"group_id": self.group, "generation_id": self.generation_id,
                "member_id": self.member_id, "group_instance_id": self.group_instance_id,
                "protocol_type": "consumer", "protocol_name": self.protocol or strategy,
                "assignments": assignments}
        sync = self.coordinator.request(SYNC_GROUP, body, check=lambda r: r.error_code)
        if sync.error_code in REJOIN:
            if sync.error_code == UnknownMemberIdError.errno:
                self.member_id = ""
            return None
        if sync.error_code == FencedInstanceIdError.errno:
            raise self._fenced("SyncGroup")
        if sync.error_code:
            raise error_for_code(sync.error_code)(f"SyncGroup of {self.group!r}")
        data: bytes = sync.assignment
        return data

    def heartbeat(self) -> int:
        """One Heartbeat; its error code (UNKNOWN_MEMBER_ID also forgets the member id;
        FENCED_INSTANCE_ID raises)."""
        body = {"group_id": self.group, "generation_id": self.generation_id,
                "member_id": self.member_id, "group_instance_id": self.group_instance_id}
        resp = self.coordinator.request(HEARTBEAT, body, check=lambda r: r.error_code)
        code: int = resp.error_code
        if code == UnknownMemberIdError.errno:
            self.member_id = ""
        if code == FencedInstanceIdError.errno:
            raise self._fenced("Heartbeat")
        return code

    def leave(self) -> None:
        """LeaveGroup (no retries), then forget the member id and generation."""
        if not self.member_id:
            return
        body = {"group_id": self.group, "member_id": self.member_id,
                "members": [{"member_id": self.member_id,
                             "group_instance_id": self.group_instance_id}]}
        try:
            self.coordinator.request(LEAVE_GROUP, body, retries=0)
        finally:
            self.member_id, self.generation_id = "", -1

    def forget(self) -> None:
        """Drop the member id and generation without telling the coordinator (a static
        member's close: its session holds the instance's place until it expires)."""
        self.member_id, self.generation_id = "", -1
