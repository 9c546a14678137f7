"""A group's committed offsets at its coordinator: OffsetFetch and OffsetCommit (v1+), sans-IO.

Offsets map ``(topic, partition)`` to the next offset to consume; -1 means none committed.
A commit carries the member's generation (a KIP-848 member: its member epoch, OffsetCommit v9;
STALE_MEMBER_EPOCH is retried with the newer epoch) and static instance id; a generation error
(ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS) is raised at once (the group
moved on: rejoin, do not retry), other retriable errors are retried after the backoff.
A KIP-848 member's fetch carries its member id and epoch (OffsetFetch v9): the coordinator
answers STALE_MEMBER_EPOCH for an epoch it moved past (retried with the newer one) and
UNKNOWN_MEMBER_ID for a member it does not know.  (The classic API's ZooKeeper offsets sit
behind the same interface in :mod:`kclient.consumer.offsets`.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kclient.errors import error_for_code
from kclient.protocol.apis import OFFSET_COMMIT, OFFSET_FETCH

from .coordinator import CoordinatorState, coordinated
from .steps import Conversation, Sleep

__all__ = [
    "fetch_offsets",
    "commit_offsets",
    "first_error",
    "GENERATION_ERRORS",
    "offset_fetch_body",
    "fetched_group",
    "offset_commit_body",
]

TP = tuple[str, int]
#: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS
GENERATION_ERRORS = (22, 25, 27)
_UNKNOWN_TOPIC_OR_PARTITION = 3
#: a KIP-848 member's commit with an epoch the coordinator moved past: retried with the
#: epoch ``generation()`` gives then (the heartbeat brings the new one)
STALE_MEMBER_EPOCH = 113


def fetched_group(resp: Any) -> Any:
    """The part of an OffsetFetch answer about the (one) group asked for: v8+'s first
    ``groups`` entry, the answer itself before (both have ``topics`` and ``error_code``); an
    OffsetCommit answer is itself."""
    groups = resp.get("groups")
    return groups[0] if groups else resp


def first_error(resp: Any) -> int:
    """The first partition error of an OffsetFetch / OffsetCommit answer, else the group's
    (OffsetFetch v2+), else 0."""
    answer = fetched_group(resp)
    for t in answer.topics or ():
        for p in t.partitions:
            if p.error_code:
                return int(p.error_code)
    return int(answer.get("error_code", 0) or 0)


def offset_fetch_body(
    group: str, tps: Iterable[TP] | None, member: tuple[int, str] | None = None
) -> dict[str, Any]:
    """An OffsetFetch body asking for ``tps`` (None: every partition the group has), for any
    version: v0-v7's fields and v8+'s ``groups`` (one group, with ``member``'s (epoch, member
    id) for v9 when given and in the group)."""
    topics = None
    if tps is not None:
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    # a member not in the group yet (epoch 0) or any more asks as no member, as Java does
    epoch, member_id = member if member is not None and member[0] > 0 else (-1, None)
    return {
        "group_id": group,
        "require_stable": False,
        "topics": topics,
        "groups": [
            {"group_id": group, "member_id": member_id, "member_epoch": epoch, "topics": topics}
        ],
    }


def offset_commit_body(
    group: str,
    offsets: Mapping[TP, int | tuple[int, str]],
    generation_id: int = -1,
    member_id: str = "",
    instance_id: str | None = None,
    retention_ms: int = -1,
) -> dict[str, Any]:
    """An OffsetCommit body of ``{(topic, partition): offset or (offset, metadata)}``, by a
    member of ``generation_id`` (-1 and "": by no member, as admin tools commit)."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (t, p), value in offsets.items():
        offset, metadata = (value, "") if isinstance(value, int) else value
        by_topic.setdefault(t, []).append(
            {
                "partition_index": p,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "commit_timestamp": -1,
                "committed_metadata": metadata,
            }
        )
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation_id,
        "member_id": member_id,
        "group_instance_id": instance_id if member_id else None,
        "retention_time_ms": retention_ms,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }


def fetch_offsets(
    coord: CoordinatorState,
    group: str,
    tps: Iterable[TP],
    member: Callable[[], tuple[int, str]] | None = None,
    retries: int = 5,
) -> Conversation[dict[TP, int]]:
    """OffsetFetch: the committed offset of each partition (-1: none).  ``member()`` gives a
    KIP-848 member's (epoch, member id), sent with v9; STALE_MEMBER_EPOCH is retried with the
    epoch it gives then, up to ``retries`` times."""
    tps = list(tps)
    if not tps:
        return {}
    for attempt in range(1 + retries):
        body = offset_fetch_body(group, tps, member() if member is not None else None)
        resp = fetched_group((yield from coordinated(coord, OFFSET_FETCH, body, first_error)))
        code = int(resp.get("error_code", 0) or 0)
        if code != STALE_MEMBER_EPOCH or attempt == retries:
            break
        yield Sleep(coord.backoff_s)
    if code:
        raise error_for_code(code)(f"fetching offsets of group {group!r}")
    out = dict.fromkeys(tps, -1)
    for topic in resp.topics:
        for part in topic.partitions:
            if part.error_code and part.error_code != _UNKNOWN_TOPIC_OR_PARTITION:
                raise error_for_code(part.error_code)(
                    f"fetching offset of {topic.name}/{part.partition_index}"
                )
            out[(topic.name, part.partition_index)] = part.committed_offset
    return out


def commit_offsets(
    coord: CoordinatorState,
    group: str,
    offsets: Mapping[TP, int],
    generation: Callable[[], tuple[int, str]] = lambda: (-1, ""),
    instance_id: str | None = None,
    retries: int = 5,
    backoff_s: float = 1.0,
) -> Conversation[None]:
    """OffsetCommit of the non-negative ``offsets`` with the member's current
    ``generation()`` (generation id, member id)."""
    todo = {tp: off for tp, off in offsets.items() if off >= 0}
    if not todo:
        return
    for attempt in range(1 + retries):
        body = offset_commit_body(group, todo, *generation(), instance_id)
        resp = yield from coordinated(coord, OFFSET_COMMIT, body, first_error)
        code = first_error(resp)
        if code == 0:
            return
        err = error_for_code(code)(f"committing offsets of group {group!r}")
        retriable = getattr(err, "retriable", False) or code == STALE_MEMBER_EPOCH
        if code in GENERATION_ERRORS or not retriable or attempt == retries:
            raise err
        yield Sleep(backoff_s)
