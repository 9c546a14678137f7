"""A user script typed against kclient's public API (tests/test_typing.py runs mypy --strict on it)."""

from __future__ import annotations

import json
from typing import Any

from kclient import (
    Consumer,
    ConsumerRecord,
    DeliveryReport,
    Producer,
    ProducerData,
    RecordMetadata,
    TopicPartition,
    consumer,
)
from kclient.consumer import MessageAndMetadata


def report(r: DeliveryReport) -> None:
    print(r.topic, r.partition, list(r.offsets), r.error)


def main(bootstrap: str) -> int:
    with Producer(
        {"metadata.broker.list": bootstrap, "producer.type": "async"},
        on_report=report,
        value_serializer=lambda v: json.dumps(v).encode(),
    ) as p:
        p.send(ProducerData("events", {"n": 1}, key=b"k"))
        p.send([ProducerData("events", {"n": i}) for i in range(3)])
        fut = p.produce(
            "events", {"n": 4}, key=b"k", on_delivery=lambda err, md: print(err, md.offset)
        )
        p.flush(timeout=10.0)
        md: RecordMetadata = fut.result(timeout=1.0)
        print(md.topic, md.partition, md.offset, md.timestamp)
        stats: dict[str, Any] = p.metrics()
        print(stats["brokers"], stats["partitions"])
        part: int = p.partition_for("events", b"k")
    conn = consumer.create({"metadata.broker.list": bootstrap, "group.id": "g"})
    streams = conn.create_message_streams({"events": 1})
    m: MessageAndMetadata
    for m in streams["events"][0]:
        print(m.topic, m.partition, m.offset, m.key, m.message)
        break
    conn.shutdown()
    with Consumer(
        "events", bootstrap_servers=bootstrap, group_id="g2", value_deserializer=bytes.decode
    ) as c:
        batch: dict[TopicPartition, list[ConsumerRecord]] = c.poll(timeout_ms=1000, max_records=10)
        for tp, records in batch.items():
            c.commit({tp: records[-1].offset + 1})
        committed: int | None = c.committed(TopicPartition("events", 0))
        c.seek_to_beginning()
        print(committed, c.position(TopicPartition("events", 0)), c.assignment())
    return part
