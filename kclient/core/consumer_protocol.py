"""The consumer protocol's wire formats (ConsumerProtocolSubscription v0-v3, Assignment), sans-IO.

What a consumer group member puts in JoinGroup's protocol metadata and what the leader hands out
in SyncGroup: the same bytes for kclient's members, Java's and librdkafka's, so they share groups.
:func:`subscription_protocols` builds a member's JoinGroup protocols, one per configured
assignor; cooperative-sticky's Subscription lists the partitions owned and their generation.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "COOPERATIVE",
    "Subscription",
    "SUBSCRIPTION_VERSION",
    "encode_subscription",
    "decode_subscription",
    "decode_subscription_full",
    "encode_assignment",
    "decode_assignment",
    "strategies_of",
    "is_cooperative",
    "member_user_data",
    "subscription_generation",
    "subscription_protocols",
]

#: the cooperative-sticky protocol name (KIP-429)
COOPERATIVE = "cooperative-sticky"


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


def subscription_generation(sub: Subscription) -> int:
    """The generation a member's owned partitions come from: the v2+ field, else Java's
    cooperative-sticky user data (int32), else -1."""
    if sub.generation_id >= 0:
        return sub.generation_id
    if len(sub.user_data) >= 4:
        gen: int = struct.unpack_from(">i", sub.user_data)[0]
        return gen
    return -1


def subscription_protocols(
    strategies: Sequence[str],
    topics: Sequence[str],
    user: bytes,
    owned: Iterable[tuple[str, int]] = (),
    owned_generation: int = -1,
) -> list[tuple[str, bytes]]:
    """JoinGroup's (name, metadata) protocols, one per configured strategy in preference order;
    cooperative-sticky's Subscription (v3) lists ``owned`` and the generation they came from."""
    out = []
    for name in strategies:
        if name == COOPERATIVE:
            by_topic: dict[str, list[int]] = {}
            for t, p in sorted(owned):
                by_topic.setdefault(t, []).append(p)
            gen = owned_generation if by_topic else -1
            out.append(
                (
                    name,
                    encode_subscription(topics, member_user_data(name, user, gen), by_topic, gen),
                )
            )
        else:
            out.append((name, encode_subscription(topics, user)))
    return out
