"""The consumer protocol as a member speaks it, sans-IO (the wire formats themselves are
:mod:`kclient.protocol.consumer_protocol`'s).

:func:`subscription_protocols` builds a member's JoinGroup protocols, one per configured
assignor; cooperative-sticky's Subscription lists the partitions owned and their generation.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from kclient.protocol.consumer_protocol import Subscription, encode_subscription

__all__ = [
    "COOPERATIVE",
    "strategies_of",
    "is_cooperative",
    "member_user_data",
    "subscription_generation",
    "subscription_protocols",
]

#: the cooperative-sticky protocol name (KIP-429)
COOPERATIVE = "cooperative-sticky"


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
