"""A topic's ``message.format.version`` altered to one of Kafka's release names, against any
broker that keeps old formats (the mini-broker; Kafka 3.x below IBP 3.0): accepted as Kafka 3.x
accepts it, and later batches are written in the older format (issue 25)."""

from __future__ import annotations

import uuid

from kclient import Producer, ProducerData
from kclient.admin import AdminClient, AlterConfigOp, AlterConfigOpType, ConfigResource
from kclient.admin import ConfigResourceType as Kind
from kclient.cluster import Cluster
from kclient.protocol.apis import FETCH
from kclient.protocol.records import RecordsReader
from tests.waiting import wait_until

#: How Kafka spells message format v1 (0.10.0): full release, short release, inter-build.
V1_NAMES = ("0.10.0.0", "0.10.0", "0.10.0-IV1")


def stored_magics(bootstrap: str, topic: str) -> list[tuple[int, list[bytes]]]:
    """``(magic, values)`` of every stored batch of partition 0, as a Fetch v4 returns them."""
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
    }
    with Cluster(bootstrap) as cluster:
        leader = cluster.leader_for(topic, 0).node_id
        part = cluster.connection(leader).request(FETCH, body, 4).responses[0].partitions[0]
    return [
        (b.magic, [bytes(r.value) for r in b.records])
        for b in RecordsReader(bytes(part.records or b"")).batches()
    ]


def alter_format(admin: AdminClient, topic: str, value: str, incremental: bool) -> None:
    """Set the topic's message.format.version with IncrementalAlterConfigs or AlterConfigs."""
    res = ConfigResource(Kind.TOPIC, topic)
    if incremental:
        admin.incremental_alter_configs(
            {res: [AlterConfigOp("message.format.version", value, AlterConfigOpType.SET)]}
        )
    else:
        admin.alter_configs({res: {"message.format.version": value}})


def check_format_switch(admin: AdminClient, bootstrap: str, value: str, incremental: bool) -> int:
    """v2 before the change, v1 for every batch written once it applies; returns how many
    batches were written before it did (1: at once, as on the mini-broker; Kafka 3.x applies a
    topic config change asynchronously, through ZooKeeper)."""
    topic = f"fmt-{uuid.uuid4().hex[:8]}"
    admin.create_topic(topic, 1, 1)
    res = ConfigResource(Kind.TOPIC, topic)
    with Producer({"metadata.broker.list": bootstrap, "producer.type": "sync"}) as p:
        p.send(ProducerData(topic, b"before", partition=0))
        alter_format(admin, topic, value, incremental)
        described = {e.name: e.value for e in admin.describe_configs([res])[res]}
        # Kafka 3.x describes the key as set; Kafka 4 (whose topics list the mini-broker's
        # DescribeConfigs follows) no longer has it
        assert described.get("message.format.version", value) == value
        sent = []

        def written_as_v1() -> bool:
            sent.append(b"after-%d" % len(sent))
            p.send(ProducerData(topic, sent[-1], partition=0))
            return stored_magics(bootstrap, topic)[-1][0] == 1

        wait_until(written_as_v1, 30, "a batch written in message format v1")
    batches = stored_magics(bootstrap, topic)
    assert batches[0] == (2, [b"before"])
    first_v1 = next(i for i, (magic, _) in enumerate(batches) if magic == 1)
    assert all(magic == 1 for magic, _ in batches[first_v1:])
    assert [v for _, vs in batches[1:] for v in vs] == sent
    return len(sent)
