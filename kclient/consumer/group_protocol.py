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
from typing import TYPE_CHECKING, Any

from kclient.errors import (
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

if TYPE_CHECKING:
    from kclient.protocol.messages import JoinGroupResponse, JoinGroupResponseMember

__all__ = ["GroupMembership", "leader_assignment", "registration", "parse_json",
           "encode_subscription", "decode_subscription", "encode_assignment",
           "decode_assignment", "REJOIN"]

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


def leader_assignment(strategy: str, members: Iterable[JoinGroupResponseMember],
                      all_topics: list[str], partitions: Mapping[str, Iterable[int]],
                      exclude_internal: bool = True) -> list[dict[str, Any]]:
    """The leader's job: the group's assignment over every member's thread ids.

    A kclient member counts with the threads of its registration; another client's member
    (the Java consumer) as one thread over the topics its Subscription lists."""
    members = list(members)
    consumers: dict[str, list[str]] = {}
    member_of: dict[str, str] = {}
    for m in members:
        topics, user = decode_subscription(m.metadata)
        reg = parse_json(user)
        if isinstance(reg, dict) and "consumer_id" in reg and "subscription" in reg:
            cid = reg["consumer_id"]
            wanted = topic_thread_ids(cid, reg.get("pattern", "static"), reg["subscription"],
                                      all_topics, exclude_internal)
        else:
            cid = m.member_id
            wanted = {t: [f"{cid}-0"] for t in topics if t in all_topics}
        member_of[cid] = m.member_id
        for topic, threads in wanted.items():
            consumers.setdefault(topic, []).extend(threads)
    consumers = {t: sorted(ts) for t, ts in consumers.items()}
    parts = {t: sorted(partitions[t]) for t in consumers if t in partitions}
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
    """One member's JoinGroup / SyncGroup / Heartbeat / LeaveGroup at the group coordinator."""

    def __init__(self, coordinator: Coordinator, group: str, session_timeout_ms: int) -> None:
        self.coordinator, self.group = coordinator, group
        self.session_timeout = session_timeout_ms
        self.generation_id, self.member_id = -1, ""

    def generation(self) -> tuple[int, str]:
        """(generation id, member id): what OffsetCommit sends."""
        return self.generation_id, self.member_id

    def join(self, strategy: str, meta: bytes) -> JoinGroupResponse | None:
        """JoinGroup (with the member id the coordinator asks for); None: try again later."""
        for _ in range(3):
            body = {"group_id": self.group, "session_timeout_ms": self.session_timeout,
                    "rebalance_timeout_ms": self.session_timeout, "member_id": self.member_id,
                    "group_instance_id": None, "protocol_type": "consumer",
                    "protocols": [{"name": strategy, "metadata": meta}]}
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
            self.generation_id, self.member_id = resp.generation_id, resp.member_id
            return resp
        return None

    def sync(self, strategy: str, assignments: list[dict[str, Any]]) -> bytes | None:
        """SyncGroup: this member's Assignment bytes; None: the group moved on (join again)."""
        body = {"group_id": self.group, "generation_id": self.generation_id,
                "member_id": self.member_id, "protocol_type": "consumer",
                "protocol_name": strategy, "assignments": assignments}
        sync = self.coordinator.request(SYNC_GROUP, body, check=lambda r: r.error_code)
        if sync.error_code in REJOIN:
            if sync.error_code == UnknownMemberIdError.errno:
                self.member_id = ""
            return None
        if sync.error_code:
            raise error_for_code(sync.error_code)(f"SyncGroup of {self.group!r}")
        data: bytes = sync.assignment
        return data

    def heartbeat(self) -> int:
        """One Heartbeat; its error code (UNKNOWN_MEMBER_ID also forgets the member id)."""
        body = {"group_id": self.group, "generation_id": self.generation_id,
                "member_id": self.member_id, "group_instance_id": None}
        resp = self.coordinator.request(HEARTBEAT, body, check=lambda r: r.error_code)
        code: int = resp.error_code
        if code == UnknownMemberIdError.errno:
            self.member_id = ""
        return code

    def leave(self) -> None:
        """LeaveGroup (no retries), then forget the member id and generation."""
        if not self.member_id:
            return
        body = {"group_id": self.group, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None}]}
        try:
            self.coordinator.request(LEAVE_GROUP, body, retries=0)
        finally:
            self.member_id, self.generation_id = "", -1
