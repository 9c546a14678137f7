"""The broker-coordinated ConsumerConnector under ``group.protocol=consumer`` (one KIP-848
member per connector): two connectors share a topic, nothing read twice or lost.  Run on the
mini-broker (tests/consumer/test_kip848_members.py) and on Kafka 4.x
(integration/test_consumer_group_kip848.py)."""

from __future__ import annotations

import time
import uuid
from collections import Counter

from kclient import consumer
from kclient.consumer import ConsumerProtocolConnector
from tests.consumer.helpers import drain, produce_spread
from tests.waiting import wait_until


def connector_conf(server, group: str, name: str) -> dict:
    return {
        "metadata.broker.list": server.bootstrap,
        "group.id": group,
        "consumer.id": name,
        "group.protocol": "consumer",
        "consumer.timeout.ms": 300,
        "auto.offset.reset": "smallest",
        "auto.commit.enable": True,
        "auto.commit.interval.ms": 500,
        "fetch.wait.max.ms": 50,
        "rebalance.backoff.ms": 200,
        "rebalance.max.retries": 10,
        "refresh.leader.backoff.ms": 50,
    }


def _read(streams, seen: Counter, want: int, timeout: float = 60.0) -> None:
    """Iterate ``streams`` in turn until ``seen`` counts ``want`` records in all."""
    deadline = time.monotonic() + timeout
    while sum(seen.values()) < want and time.monotonic() < deadline:
        for s in streams:
            seen.update(m.message.decode() for m in drain(s))
    assert sum(seen.values()) >= want, f"read {sum(seen.values())} of {want}"


def _split(a, b, topic: str, partitions: int) -> bool:
    pa, pb = set(a.owned_partitions()), set(b.owned_partitions())
    return bool(pa and pb) and not pa & pb and pa | pb == {(topic, p) for p in range(partitions)}


def two_connectors_share_a_topic(server, make_topic) -> None:
    """a (two streams) reads everything; b (one stream) joins and the coordinator moves
    partitions to it only after a committed them; both read what follows; b leaves and a
    takes its partitions back from b's commits.  Each record read exactly once."""
    topic = make_topic(4)
    group = f"conn848-{uuid.uuid4().hex[:8]}"
    values = produce_spread(server.bootstrap, topic, 4, 6, prefix="one")
    a = consumer.create(connector_conf(server, group, "a"))
    b = None
    try:
        assert isinstance(a, ConsumerProtocolConnector)
        sa = a.create_message_streams({topic: 2})[topic]
        owned = a.owned_partitions()
        assert set(owned) == {(topic, p) for p in range(4)}
        assert set(owned.values()) == {f"{group}_a-0", f"{group}_a-1"}  # spread over its streams
        seen: Counter = Counter()
        _read(sa, seen, 24)
        epoch = a.generation_id
        b = consumer.create(connector_conf(server, group, "b"))
        sb = b.create_message_streams({topic: 1})[topic]
        wait_until(lambda: _split(a, b, topic, 4), 60, "a and b share the topic")
        assert a.generation_id > epoch and a.group_metadata().member_id == a.member_id
        values |= produce_spread(server.bootstrap, topic, 4, 6, prefix="two")
        _read([*sa, *sb], seen, 48)
        b.shutdown()  # commits, then leaves (epoch -1)
        wait_until(lambda: len(a.owned_partitions()) == 4, 60, "a owns everything again")
        values |= produce_spread(server.bootstrap, topic, 4, 2, prefix="three")
        _read(sa, seen, 56)
        for s in sa:  # one more idle pass: anything read twice would show here
            seen.update(m.message.decode() for m in drain(s))
        assert set(seen) == values, "lost or foreign records"
        assert [v for v, n in seen.items() if n > 1] == [], "read twice"
    finally:
        a.shutdown()
        if b is not None:
            b.shutdown()
