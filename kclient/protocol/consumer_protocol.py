"""The consumer protocol's wire formats: ConsumerProtocolSubscription v0-v3 and Assignment.

What a consumer group member puts in JoinGroup's protocol metadata and what SyncGroup hands
out: the same bytes for kclient's members, Java's and librdkafka's.  Here (wire, no I/O) so
that both the client's core (:mod:`kclient.core.consumer_protocol`) and the mini-broker (a
classic member of a KIP-848 group) read and write them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "Subscription",
    "SUBSCRIPTION_VERSION",
    "encode_subscription",
    "decode_subscription",
    "decode_subscription_full",
    "encode_assignment",
    "decode_assignment",
]


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
        s = self.data[self.pos : self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def nullable_string(self) -> str | None:
        n = self.unpack(">h")
        if n < 0:
            return None
        s = self.data[self.pos : self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def bytes(self) -> bytes:
        n = self.unpack(">i")
        if n < 0:
            return b""
        b = self.data[self.pos : self.pos + n]
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
        out.append(
            _str(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
        )
    return b"".join(out)


def encode_subscription(
    topics: Sequence[str],
    user_data: bytes | None,
    owned: Mapping[str, Iterable[int]] | None = None,
    generation_id: int = -1,
    version: int | None = None,
) -> bytes:
    """ConsumerProtocolSubscription: v0 (topics, user data) unless ``owned`` is given, then
    v3 (owned partitions, generation id, null rack id) or the ``version`` asked for."""
    if version is None:
        version = 0 if owned is None else SUBSCRIPTION_VERSION
    out = [
        struct.pack(">hi", version, len(topics)),
        *(_str(t) for t in topics),
        struct.pack(">i", -1) if user_data is None else _bytes(user_data),
    ]
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


def encode_assignment(
    partitions: Mapping[str, Iterable[int]], user_data: bytes | None, version: int = 0
) -> bytes:
    """ConsumerProtocolAssignment (the layout is the same in v0-v3)."""
    return (
        struct.pack(">h", version)
        + _partition_lists(partitions)
        + (struct.pack(">i", -1) if user_data is None else _bytes(user_data))
    )


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
