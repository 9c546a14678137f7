"""Topics that are ready to use: created, and served by every partition's leader."""

from __future__ import annotations

import time

from kclient.errors import KafkaError

__all__ = ["create_ready_topic", "wait_until_served"]


def create_ready_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    replication_factor: int = 1,
    config: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> str:
    """Create ``name`` and wait until it is served (see ``wait_until_served``); returns it."""
    from kclient.cluster import Cluster

    with Cluster(bootstrap) as cluster:
        cluster.create_topic(name, partitions, replication_factor, config)
    wait_until_served(bootstrap, name, partitions, timeout)
    return name


def wait_until_served(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Until every partition's leader answers ListOffsets without an error.

    A KRaft broker lists a new partition's leader in Metadata a moment before its replica
    manager leads it, and answers NOT_LEADER_OR_FOLLOWER to produce in between; a benchmark
    or test that starts then spends its retries (or its timing) on that window."""
    from kclient.admin import AdminClient, OffsetSpec, TopicPartition

    specs = {TopicPartition(topic, p): OffsetSpec.LATEST for p in range(partitions)}
    deadline = time.monotonic() + timeout
    while True:
        try:
            with AdminClient(bootstrap) as admin:
                admin.list_offsets(specs)
            return
        except KafkaError as e:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {topic!r} not served after {timeout}s: {e}") from e
            time.sleep(0.1)
