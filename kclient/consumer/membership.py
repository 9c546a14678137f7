"""Group membership as the 0.8 rebalance sees it: which thread ids want which topics."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kclient.zkutils import (
    GroupDirs,
    consumers_in_group,
    get_all_topics,
    parse_registration,
    read_data,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

from .assignment import thread_ids
from .topic_filter import filter_for_pattern

__all__ = ["topic_thread_ids", "consumers_per_topic"]


def topic_thread_ids(
    consumer_id: str,
    pattern: str,
    subscription: Mapping[str, int],
    all_topics: Iterable[str],
    exclude_internal: bool = True,
) -> dict[str, list[str]]:
    """``{topic: [thread ids]}`` of one consumer (wildcards resolved against ``all_topics``)."""
    if pattern == "static":
        return {t: thread_ids(consumer_id, n) for t, n in subscription.items()}
    ((regex, n),) = subscription.items()
    flt = filter_for_pattern(pattern, regex)
    return {t: thread_ids(consumer_id, n) for t in flt.filter(all_topics, exclude_internal)}


def consumers_per_topic(
    zk: KazooClient, group: str, exclude_internal: bool = True
) -> dict[str, list[str]]:
    """``{topic: string-sorted thread ids of every group member subscribed to it}``."""
    dirs = GroupDirs(group)
    all_topics: list[str] | None = None
    out: dict[str, list[str]] = {}
    for consumer in consumers_in_group(zk, group):
        data = read_data(zk, dirs.consumer(consumer))
        if data is None:  # left between the listing and the read
            continue
        pattern, subscription = parse_registration(data)
        if pattern != "static" and all_topics is None:
            all_topics = get_all_topics(zk)
        for topic, threads in topic_thread_ids(
            consumer, pattern, subscription, all_topics or (), exclude_internal
        ).items():
            out.setdefault(topic, []).extend(threads)
    return {t: sorted(ts) for t, ts in out.items()}
